"""Learner throughput: one JSON line per configuration.

    python benchmarks/learner.py [--quick] [--only roofline,a,b,c,d,replay]

Each line has ``config``, ``updates_per_s`` (critic updates per second), ``ms_per_call`` (one
jitted ``update`` call, which runs ``critic_updates_per_call`` critic updates in one scan),
the batch, and the compile time of the first call. Batches are random (the replay cost is
measured separately in the replay lines), timed after JIT warm-up.

``roofline``: the state configuration (10 critics, min of 2, 8 critic updates per actor update)
against a batched-matmul roofline at the critic ensemble's shapes, timed in the same rounds
(``benchmarks/roofline.py``): FLOPs per call counted by hand and by XLA, achieved GFLOP/s and
its share of the roofline, and the call timed with pieces removed (critic updates only, the
ensemble's forward and backward only, the same without its LayerNorms, Adam and Polyak only).
The conv and ResNet-10 lines carry XLA's FLOPs per call and their share of a conv (or, with
cached features, matmul) roofline.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from statistics import median

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import roofline

from robot_rl.agents.config import AgentConfig
from robot_rl.agents.encoders import onednn_conv
from robot_rl.agents.networks import CriticEnsemble
from robot_rl.agents.random_batches import random_batch
from robot_rl.agents.sac import SACAgent


def spaces(state_dim: int, action_dim: int, cameras: int, size: int):
    obs = {"state": gym.spaces.Box(-np.inf, np.inf, (state_dim,), np.float32)}
    for i in range(cameras):
        obs[f"cam{i}"] = gym.spaces.Box(0, 255, (size, size, 3), np.uint8)
    return gym.spaces.Dict(obs), gym.spaces.Box(-1, 1, (action_dim,), np.float32)


def time_updates(agent, batch, utd: int, calls: int) -> dict:
    t0 = time.perf_counter()
    agent, _ = agent.update(batch, utd)
    jax.block_until_ready(agent)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(calls):
        agent, _info = agent.update(batch, utd)
    jax.block_until_ready(agent)
    seconds = (time.perf_counter() - t0) / calls
    return {
        "updates_per_s": round(utd / seconds, 2),
        "ms_per_call": round(seconds * 1e3, 2),
        "critic_updates_per_call": utd,
        "compile_s": round(compile_s, 2),
    }


def xla_share(agent: SACAgent, batch: dict, utd: int, seconds: float, roof: dict) -> dict:
    """XLA's FLOPs of one update call (critic updates with their input preparation, the actor
    updates) and the achieved GFLOP/s as a share of ``roof``, measured in the same run."""
    ratio = agent.config.critic_actor_ratio
    mb = jax.tree.map(lambda x: jnp.asarray(x)[: len(x) // utd], batch)
    mb["terminated"] = mb["terminated"].astype(jnp.float32)

    def prepared(a, b):
        b = dict(b)
        b["observations"] = a._prepare(a.rng, b["observations"])
        b["next_observations"] = a._prepare(a.rng, b["next_observations"])
        return b

    # XLA counts no FLOPs inside the oneDNN convolutions' FFI calls: count XLA's own
    with onednn_conv.xla_convolutions():
        critic = roofline.xla_flops(
            lambda a, b: a._update_critic(prepared(a, b), a.rng)[0], agent, mb
        )
        actor = roofline.xla_flops(
            lambda a, b: a._update_actor(prepared(a, b), a.rng)[0], agent, mb
        )
    if critic is None or actor is None:
        return {}
    # an actor update also prepares (augments, embeds) the batch: counted once per critic step
    call = utd * critic + (utd // ratio) * actor
    achieved = call / seconds / 1e9
    return {
        "xla_gflop_per_call": round(call / 1e9, 3),
        "achieved_gflops": round(achieved, 2),
        "roofline_gflops": round(roof["gflops"], 2),
        "roofline_shape": roof["shape"],
        "roofline_share": round(achieved / roof["gflops"], 3),
    }


def state_config(name: str, num_critics: int, utd: int, ratio: int, calls: int) -> dict:
    obs_space, act_space = spaces(20, 4, 0, 0)
    cfg = AgentConfig(num_critics=num_critics, critic_subsample=2, critic_actor_ratio=ratio)
    agent = SACAgent.create(0, obs_space, act_space, cfg)
    batch = random_batch(obs_space, 4, 256 * utd)
    line = {"config": name, "batch": 256, "num_critics": num_critics, "critic_actor_ratio": ratio}
    line.update(time_updates(agent, batch, utd, calls))
    return line


def _state_pieces(agent: SACAgent, minibatches: dict) -> dict:
    """Jitted parts of one state update call, to time with the rest removed."""
    nets = agent.nets
    ensemble_params = agent.critic.params["ensemble"]
    fake_grads = jax.tree.map(lambda p: 1e-3 * p, agent.critic.params)

    @jax.jit
    def critic_only(a, mbs):  # the call without its actor update
        def body(a, mb):
            rng, key = jax.random.split(a.rng)
            return a.replace(rng=rng)._update_critic(mb, key)[0], None

        return jax.lax.scan(body, a, mbs)[0]

    @jax.jit
    def ensemble_grads(params, mbs):  # forward and backward of the 10 critics, nothing else
        def body(total, mb):
            features = mb["observations"]["state"]

            def loss(p):
                qs = nets.ensemble.apply({"params": p}, features, mb["actions"])
                return ((qs - mb["rewards"]) ** 2).mean()

            grads = jax.grad(loss)(params)
            return total + sum(g.sum() for g in jax.tree.leaves(grads)), None

        return jax.lax.scan(body, jnp.zeros(()), mbs)[0]

    # the same ensemble without its LayerNorms: what the matmuls alone cost
    plain = CriticEnsemble(agent.config.hidden_dims, agent.config.num_critics, False)
    mb0 = jax.tree.map(lambda x: x[0], minibatches)
    plain_params = plain.init(jax.random.PRNGKey(0), mb0["observations"]["state"], mb0["actions"])[
        "params"
    ]

    @jax.jit
    def plain_grads(params, mbs):
        def body(total, mb):
            def loss(p):
                qs = plain.apply({"params": p}, mb["observations"]["state"], mb["actions"])
                return ((qs - mb["rewards"]) ** 2).mean()

            grads = jax.grad(loss)(params)
            return total + sum(g.sum() for g in jax.tree.leaves(grads)), None

        return jax.lax.scan(body, jnp.zeros(()), mbs)[0]

    @jax.jit
    def optimiser_only(a, mbs):  # Adam on the critic and the Polyak target, per minibatch
        def body(a, _):
            critic = a.critic.apply_gradients(grads=fake_grads)
            target = jax.tree.map(
                lambda t, o: t * (1 - a.config.tau) + o * a.config.tau,
                a.target_critic_params,
                critic.params,
            )
            return a.replace(critic=critic, target_critic_params=target), None

        return jax.lax.scan(body, a, mbs["rewards"])[0]

    full = jax.jit(lambda a, mbs: type(a)._update_minibatches(a, mbs)[0])
    return {
        "full_update": (full, agent, minibatches),
        "critic_updates_only": (critic_only, agent, minibatches),
        "ensemble_fwd_bwd_only": (ensemble_grads, ensemble_params, minibatches),
        "ensemble_fwd_bwd_without_layernorm": (plain_grads, plain_params, minibatches),
        "critic_optimiser_and_polyak_only": (optimiser_only, agent, minibatches),
    }


def state_roofline(rounds: int, calls: int) -> dict:
    """The state configuration (10 critics, min of 2, 8 critic updates per actor update) against
    the batched-matmul roofline at its own shapes, both timed in the same rounds."""
    hidden, critics, ratio, batch_size = (256, 256), 10, 8, 256
    obs_space, act_space = spaces(20, 4, 0, 0)
    cfg = AgentConfig(num_critics=critics, critic_subsample=2, critic_actor_ratio=ratio)
    agent = SACAgent.create(0, obs_space, act_space, cfg)
    utd = ratio  # one call = 8 critic updates and 1 actor update
    batch = random_batch(obs_space, 4, batch_size * utd)
    minibatches = jax.tree.map(
        lambda x: jnp.asarray(x).reshape(utd, batch_size, *x.shape[1:]),
        {k: batch[k] for k in ("observations", "next_observations", "actions", "rewards")}
        | {"terminated": batch["terminated"].astype(np.float32)},
    )
    flops = roofline.state_update_flops(batch_size, 20, 4, hidden, critics, 2)
    call_flops = utd * flops["critic_update"] + (utd // ratio) * flops["actor_update"]
    mb0 = jax.tree.map(lambda x: x[0], minibatches)
    xla_critic = roofline.xla_flops(lambda a, b: a._update_critic(b, a.rng)[0], agent, mb0)
    xla_actor = roofline.xla_flops(lambda a, b: a._update_actor(b, a.rng)[0], agent, mb0)
    pieces = _state_pieces(agent, minibatches)
    times: dict[str, list[float]] = {name: [] for name in ("roofline", "update", *pieces)}
    gflops: list[float] = []
    for _ in range(rounds):  # interleaved: roofline, the whole update, each piece
        rl = roofline.matmul_roofline(critics, batch_size, hidden[1], iters=16, calls=2)
        gflops.append(rl["gflops"])
        times["roofline"].append(rl["us_per_matmul"] / 1e3)
        times["update"].append(
            roofline.seconds_per_call(lambda: agent.update(batch, utd)[0], calls=calls) * 1e3
        )
        for name, (fn, *args) in pieces.items():
            times[name].append(roofline.seconds_per_call(fn, *args, calls=calls) * 1e3)
    ms = {name: median(values) for name, values in times.items()}
    achieved = call_flops / (ms["update"] / 1e3) / 1e9
    # the machine's load moves within seconds: each round's update against that round's
    # roofline, measured back to back, then the median of those shares
    pairs = zip(times["update"], gflops, strict=True)
    shares = [call_flops / (t / 1e3) / 1e9 / g for t, g in pairs]
    # the piece: forward, weight gradients, input gradients of all but the first layer
    forward = critics * 2.0 * batch_size * (24 * 256 + 256 * 256 + 256)
    fwd_bwd_flops = utd * (3 * forward - critics * 2.0 * batch_size * 24 * 256)
    return {
        "config": "a_state_rlpd_10critics_k8_roofline",
        "batch": batch_size,
        "num_critics": critics,
        "critic_actor_ratio": ratio,
        "critic_updates_per_call": utd,
        "updates_per_s": round(utd / (ms["update"] / 1e3), 2),
        "ms_per_call": round(ms["update"], 2),
        "gflop_per_call": round(call_flops / 1e9, 3),
        "gflop_per_critic_update": round(flops["critic_update"] / 1e9, 4),
        "gflop_per_actor_update": round(flops["actor_update"] / 1e9, 4),
        "xla_gflop_per_critic_update": xla_critic and round(xla_critic / 1e9, 4),
        "xla_gflop_per_actor_update": xla_actor and round(xla_actor / 1e9, 4),
        "achieved_gflops": round(achieved, 2),
        "roofline_gflops": round(median(gflops), 2),
        "roofline_shape": rl["shape"],
        "roofline_gflops_by_matmul": {
            name: round(rl[f"gflops_{name}"], 2)
            for name in (*roofline.TRAINING_MATMULS, "forward_one_per_call")
        },
        "roofline_share": round(median(shares), 3),
        "roofline_share_by_round": [round(s, 3) for s in shares],
        "ms_per_call_by_piece": {k: round(v, 2) for k, v in ms.items() if k != "roofline"},
        "ensemble_fwd_bwd_gflops": round(fwd_bwd_flops / ms["ensemble_fwd_bwd_only"] / 1e6, 2),
        "ensemble_fwd_bwd_without_layernorm_gflops": round(
            fwd_bwd_flops / ms["ensemble_fwd_bwd_without_layernorm"] / 1e6, 2
        ),
        "rounds": rounds,
        "roofline_gflops_by_round": [round(g, 2) for g in gflops],
        "ms_per_call_by_round": [round(t, 2) for t in times["update"]],
    }


def conv_config(calls: int, batch_size: int) -> dict:
    obs_space, act_space = spaces(20, 4, 2, 64)
    cfg = AgentConfig(num_critics=2, critic_subsample=2, critic_actor_ratio=4, drq_pad=4)
    agent = SACAgent.create(0, obs_space, act_space, cfg)
    utd = 4
    batch = random_batch(obs_space, 4, batch_size * utd)
    line = {"config": f"c_two_64px_cameras_conv_drq_b{batch_size}", "batch": batch_size}
    line.update(num_critics=2, critic_actor_ratio=4)
    line.update(time_updates(agent, batch, utd, calls))
    # the trunk's costliest layer: 64 px -> 31x31x32 after the first, 3x3 stride 2 to 15x15
    roof = roofline.conv_roofline(2 * batch_size, 31, 32, 32, 2)
    line.update(xla_share(agent, batch, utd, line["ms_per_call"] / 1e3, roof))
    return line


def resnet_configs(calls: int, batch_size: int, size: int) -> list[dict]:
    """Frozen ResNet-10: pixels through the trunk every update vs features from the cache."""
    from robot_rl.data.embedding_cache import EmbeddingCache
    from robot_rl.data.replay import ReplayBuffer

    obs_space, act_space = spaces(20, 4, 2, size)
    cfg = AgentConfig(
        num_critics=2,
        critic_subsample=2,
        critic_actor_ratio=4,
        encoder="resnet10",
        encoder_frozen=True,
        pooling="spatial_learned",
        bottleneck_dim=256,
    )
    agent = SACAgent.create(0, obs_space, act_space, cfg)
    utd = 4
    lines = []
    common = {"batch": batch_size, "image_size": size, "cameras": 2, "num_critics": 2}

    pixels = random_batch(obs_space, 4, batch_size * utd)
    uncached = {"config": f"d_resnet10_frozen_{size}px_uncached", **common}
    uncached.update(time_updates(agent, pixels, utd, max(1, calls // 4)))
    # ResNet-10's first stage: 64 to 64 channels, 3x3, at a quarter of the image side
    roof = roofline.conv_roofline(2 * batch_size, size // 4 + 2, 64, 64, 1)
    uncached.update(xla_share(agent, pixels, utd, uncached["ms_per_call"] / 1e3, roof))
    lines.append(uncached)

    # Fill a replay with random frames and let the cache embed them once.
    rng = np.random.default_rng(0)
    replay = ReplayBuffer(obs_space, act_space, capacity=4 * batch_size)
    frames = random_batch(obs_space, 4, 4 * batch_size + 1)["observations"]
    for i in range(4 * batch_size):
        obs = {k: v[i] for k, v in frames.items()}
        nxt = {k: v[i + 1] for k, v in frames.items()}
        replay.add(obs, rng.uniform(-1, 1, 4).astype(np.float32), 0.0, False, False, nxt)
    # The first cache compiles the trunk for its chunk sizes; the second one is timed.
    EmbeddingCache(replay, agent.nets.image_keys, agent.embed_frames, num_views=4).refresh()
    cache = EmbeddingCache(replay, agent.nets.image_keys, agent.embed_frames, num_views=4)
    t0 = time.perf_counter()
    embedded = cache.refresh()
    embed_s = time.perf_counter() - t0
    features = cache.sample(rng, batch_size * utd)
    cached = {"config": f"d_resnet10_frozen_{size}px_cached", **common}
    cached.update(time_updates(agent, features, utd, calls))
    # no convolution left in the update: its heads and MLPs are matmuls
    roof = roofline.matmul_roofline(2, 256, 256)  # the head MLPs, at batch 256
    cached.update(xla_share(agent, features, utd, cached["ms_per_call"] / 1e3, roof))
    t0 = time.perf_counter()
    for _ in range(calls):
        cache.sample(rng, batch_size * utd)
    cached["sample_ms_per_call"] = round((time.perf_counter() - t0) / calls * 1e3, 2)
    cached["embed_ms_per_frame_all_views"] = round(embed_s / max(embedded, 1) * 1e3, 3)
    cached["cache_views"] = 4
    cached["speedup_vs_uncached"] = round(cached["updates_per_s"] / uncached["updates_per_s"], 1)
    lines.append(cached)
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (seconds, not minutes)")
    parser.add_argument("--only", default="roofline,a,b,c,d,replay", help="comma-separated subset")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    calls = 3 if args.quick else 20

    def emit(line: dict) -> None:
        line.setdefault("device", jax.devices()[0].platform)
        line.setdefault("loadavg", [round(x, 2) for x in os.getloadavg()])
        print(json.dumps(line), flush=True)

    if "roofline" in only:
        emit(state_roofline(rounds=1 if args.quick else 7, calls=2 if args.quick else 3))

    if "a" in only:
        emit(state_config("a_state_rlpd_10critics_utd20", 10, 20, 20, calls))
    if "b" in only:
        emit(state_config("b_state_2critics_utd1", 2, 1, 1, calls * 20))
    if "c" in only:
        emit(conv_config(max(2, calls // 4), 64))
        if not args.quick:
            emit(conv_config(max(2, calls // 5), 256))
    if "d" in only:
        for size in (64, 128):
            for line in resnet_configs(calls, 16 if args.quick else 64, size):
                emit(line)
    if "replay" in only:
        import replay as replay_bench

        for line in replay_bench.run(quick=args.quick):
            emit(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
