"""Learner throughput: one JSON line per configuration.

    python benchmarks/learner.py [--quick] [--only a,b,c,d,replay]

Each line has ``config``, ``updates_per_s`` (critic updates per second), ``ms_per_call`` (one
jitted ``update`` call, which runs ``critic_updates_per_call`` critic updates in one scan),
the batch, and the compile time of the first call. Batches are random (the replay cost is
measured separately in the replay lines), timed after JIT warm-up, as SERL's figures were.

``serl_reference_updates_per_s`` is SERL's own agent measured on this machine class for the
comparable configuration (given in the project's issue, not measured in this run).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import gymnasium as gym
import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from agent_fixtures import random_batch

from robot_rl.agents.config import AgentConfig
from robot_rl.agents.sac import SACAgent

SERL_REFERENCE = {"state": 27.0, "conv": 1.4, "resnet10_frozen": 0.27}


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


def state_config(name: str, num_critics: int, utd: int, ratio: int, calls: int) -> dict:
    obs_space, act_space = spaces(20, 4, 0, 0)
    cfg = AgentConfig(num_critics=num_critics, critic_subsample=2, critic_actor_ratio=ratio)
    agent = SACAgent.create(0, obs_space, act_space, cfg)
    batch = random_batch(obs_space, 4, 256 * utd)
    line = {"config": name, "batch": 256, "num_critics": num_critics, "critic_actor_ratio": ratio}
    line.update(time_updates(agent, batch, utd, calls))
    if num_critics == 10:
        line["serl_reference_updates_per_s"] = SERL_REFERENCE["state"]
        line["ratio_vs_serl"] = round(line["updates_per_s"] / SERL_REFERENCE["state"], 2)
    return line


def conv_config(calls: int, batch_size: int) -> dict:
    obs_space, act_space = spaces(20, 4, 2, 64)
    cfg = AgentConfig(num_critics=2, critic_subsample=2, critic_actor_ratio=4, drq_pad=4)
    agent = SACAgent.create(0, obs_space, act_space, cfg)
    utd = 4
    batch = random_batch(obs_space, 4, batch_size * utd)
    line = {"config": f"c_two_64px_cameras_conv_drq_b{batch_size}", "batch": batch_size}
    line.update(num_critics=2, critic_actor_ratio=4)
    line.update(time_updates(agent, batch, utd, calls))
    if batch_size == 64:  # SERL's figure was measured at batch 64
        line["serl_reference_updates_per_s"] = SERL_REFERENCE["conv"]
        line["ratio_vs_serl"] = round(line["updates_per_s"] / SERL_REFERENCE["conv"], 2)
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
    t0 = time.perf_counter()
    for _ in range(calls):
        cache.sample(rng, batch_size * utd)
    cached["sample_ms_per_call"] = round((time.perf_counter() - t0) / calls * 1e3, 2)
    cached["embed_ms_per_frame_all_views"] = round(embed_s / max(embedded, 1) * 1e3, 3)
    cached["cache_views"] = 4
    cached["speedup_vs_uncached"] = round(cached["updates_per_s"] / uncached["updates_per_s"], 1)
    if size == 64 and batch_size == 64:  # SERL's figure: two 64x64 cameras, batch 64
        for line in (cached, uncached):
            line["serl_reference_updates_per_s"] = SERL_REFERENCE["resnet10_frozen"]
            line["ratio_vs_serl"] = round(
                line["updates_per_s"] / SERL_REFERENCE["resnet10_frozen"], 1
            )
    lines.append(cached)
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (seconds, not minutes)")
    parser.add_argument("--only", default="a,b,c,d,replay", help="comma-separated subset")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    calls = 3 if args.quick else 20

    def emit(line: dict) -> None:
        line.setdefault("device", jax.devices()[0].platform)
        print(json.dumps(line), flush=True)

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
