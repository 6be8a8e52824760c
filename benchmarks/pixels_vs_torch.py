"""robot_rl's jitted SAC update against PyTorch ones, LeRobot's SAC among them, in the same run.

    python benchmarks/pixels_vs_torch.py [--config state,conv,resnet10] [--part update,trunk]
        [--rounds 5] [--calls 2] [--threads 2] [--quick] [--no-bf16] [--no-1thread]
        [--no-lerobot] [--with-lerobot044] [--no-roofline] [--out FILE]

LeRobot runs in overlay venvs on top of the project's (``bash benchmarks/lerobot_peer_venv.sh
0.6.1``, and ``0.4.4`` for ``--with-lerobot044``; ``--lerobot-python`` and
``--lerobot044-python`` name other interpreters).

Configurations (20-d state, 4-d action; one call is a configuration's critic updates and one
actor + temperature update):

- ``state``: no cameras, batch 256, 10 critics (the target the min of 2 sampled), 8 critic
  updates per call;
- ``conv``: two 64x64 cameras + the state, batch 64, 2 critics, DrQ random shift (pad 4), 4
  critic updates per call, the image trunk trained by the critic. ``ours`` and ``torch`` run
  LeRobot SAC's default image encoder shape (``lerobot_conv``: the convolution work LeRobot
  does), ``ours_small_conv`` the project's default trunk (``conv``);
- ``resnet10``: the same with a frozen ResNet-10 run on every sampled image (no embedding cache).
  ``ours`` and ``torch`` run torchvision's layout (BatchNorm, folded in torch),
  ``ours_serl_resnet10`` HIL-SERL's GroupNorm layout, the one LeRobot loads.

Contenders: ``ours*`` robot_rl's ``SACAgent.update``; ``torch*`` the same computation in PyTorch
written for speed (``benchmarks/torch_sac_baseline.py``); ``lerobot*`` LeRobot's own SAC,
configured as the configuration says and stepped as its learner steps it (0.5+:
``lerobot.rl.algorithms.sac.SACAlgorithm.update`` over a ``GaussianActorPolicy``; 0.4:
``SACPolicy`` with the learner's loop), each minibatch shifted by LeRobot's DrQ
(``lerobot.rl.buffer.random_shift``, compiled as its replay buffer compiles it) as its buffer's
``sample`` does; its frozen ResNet-10 (``helper2424/resnet10`` on the Hub, out of reach here) is
the same network built locally (``torch_sac_baseline.GroupNormResNet10``). ``roofline``: the
GFLOP/s that ``benchmarks/roofline.py`` measures at the configuration's dominant shape (the
critic ensemble's matmuls for ``state``, the trunk's costliest 3x3 convolution otherwise) and for
one large f32 matmul (the CPU's matmul ceiling), timed in the same rounds. ``*_1thread``: torch
and LeRobot on one intra-op thread; ``*_bf16``: the trained conv trunk with bf16 convolution
operands (the project's default is f32).

FLOPs per call: XLA's cost analysis for ours (its convolutions counted as XLA's, since XLA counts
none inside the oneDNN calls), ``torch.utils.flop_counter`` for torch and LeRobot (matmuls and
convolutions only); each round's achieved GFLOP/s over that round's roofline is a contender's
roofline share (``gemm_share`` over the large matmul's rate).

Parts: ``update`` times one whole update call; ``trunk`` the image trunk alone in ours and torch
(the conv forward + backward for ``conv``, the forward for the frozen ResNet-10).

Each contender is its own worker process (its own ``XLA_FLAGS`` and intra-op threads); after
every worker has compiled and warmed up, the driver runs them in turns, round after round, so
that all of them see the same machine load, and records each ratio peer / ours per round. JSON
lines (one per contender and configuration, then one summary per configuration, each with the
load average) go to stdout and, with ``--out``, to a file.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

BATCH, UTD, CAMERAS, SIZE, STATE, ACTION = 64, 4, 2, 64, 20, 4

CONFIGS = {
    "state": {"batch": 256, "utd": 8, "critics": 10, "cameras": 0},
    "conv": {"batch": BATCH, "utd": UTD, "critics": 2, "cameras": CAMERAS},
    "resnet10": {"batch": BATCH, "utd": UTD, "critics": 2, "cameras": CAMERAS},
}
"""Per configuration: batch, critic updates per call (and one actor update), critics, cameras."""

OURS_ENCODER = {"conv": "lerobot_conv", "resnet10": "resnet10"}
"""The trunk of the plain ``ours`` contender per pixel configuration (the one torch runs too)."""

ROOFLINE_CONV = {
    "conv": (2 * BATCH, 31, 32, 32, 2),  # the small conv trunk's second layer, 31 px -> 15 px
    "resnet10": (2 * BATCH, SIZE // 4 + 2, 64, 64, 1),  # ResNet-10's first stage, 64 -> 64
}
"""``roofline.conv_roofline`` arguments per pixel configuration (as ``benchmarks/learner.py``)."""

GEMM_SIDE = 1024
"""Side of the square f32 matmul whose rate stands for the CPU's matmul ceiling."""

LEROBOT_PYTHON = "/tmp/lerobot061_venv/bin/python"
LEROBOT044_PYTHON = "/tmp/lerobot044_venv/bin/python"
"""The overlay venvs' interpreters (``bash benchmarks/lerobot_peer_venv.sh [0.6.1|0.4.4]``)."""

OURS_XLA_FLAGS = ""
"""XLA_FLAGS of our default contender: none, so the library's own (``robot_rl.agents``) apply."""


def _spaces(cameras: int):
    import gymnasium as gym
    import numpy as np

    obs = {"state": gym.spaces.Box(-np.inf, np.inf, (STATE,), np.float32)}
    for i in range(cameras):
        obs[f"cam{i}"] = gym.spaces.Box(0, 255, (SIZE, SIZE, 3), np.uint8)
    return gym.spaces.Dict(obs), gym.spaces.Box(-1, 1, (ACTION,), np.float32)


def _random_batch(config: str) -> dict:
    from robot_rl.agents.random_batches import random_batch

    c = CONFIGS[config]
    return random_batch(_spaces(c["cameras"])[0], ACTION, c["batch"] * c["utd"])


def _torch_flops(step) -> dict:
    """GFLOPs of one call as ``torch.utils.flop_counter`` counts them (matmuls and
    convolutions), and the convolutions' part."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        step()
    by_op = counter.get_flop_counts().get("Global", {})
    conv = sum(n for op, n in by_op.items() if "convolution" in str(op))
    return {
        "gflop_per_call": round(counter.get_total_flops() / 1e9, 3),
        "conv_gflop_per_call": round(conv / 1e9, 3),
        "flop_count": "torch_flop_counter",
    }


# ---------------------------------------------------------------------------------- workers
def _ours_update(spec: dict) -> dict:
    import jax
    import learner

    from robot_rl.agents.config import AgentConfig
    from robot_rl.agents.sac import SACAgent

    config, c = spec["config"], CONFIGS[spec["config"]]
    obs_space, act_space = _spaces(c["cameras"])
    kwargs = dict(num_critics=c["critics"], critic_subsample=2, critic_actor_ratio=c["utd"])
    encoder = spec.get("encoder") or OURS_ENCODER.get(config)
    if config == "resnet10":
        kwargs.update(encoder=encoder, encoder_frozen=True)
    elif config == "conv":
        kwargs.update(encoder=encoder, encoder_dtype="bfloat16" if spec["bf16"] else "float32")
    if c["cameras"]:
        kwargs.update(drq_pad=4, pooling="spatial_learned", bottleneck_dim=256)
    state = {"agent": SACAgent.create(0, obs_space, act_space, AgentConfig(**kwargs))}
    batch = _random_batch(config)

    def step():
        state["agent"], _ = state["agent"].update(batch, c["utd"])

    def info():
        share = learner.xla_share(
            state["agent"], batch, c["utd"], 1.0, {"gflops": 1.0, "shape": ""}
        )
        return {
            "encoder": encoder,
            "gflop_per_call": share.get("xla_gflop_per_call"),
            "flop_count": "xla_cost_analysis",
        }

    return {"step": step, "sync": lambda: jax.block_until_ready(state["agent"]), "info": info}


def _ours_trunk(spec: dict) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from robot_rl.agents.encoders import TRUNKS

    config = spec["config"]
    encoder = spec.get("encoder") or OURS_ENCODER[config]
    rng = np.random.default_rng(0)
    if config == "conv":
        trunk = TRUNKS[encoder](dtype=jnp.bfloat16 if spec["bf16"] else jnp.float32)
    else:
        trunk = TRUNKS[encoder]()
    # One trunk pass over what one update call feeds it: 4 minibatches x 2 cameras.
    images = jnp.asarray(rng.integers(0, 256, (BATCH * CAMERAS, SIZE, SIZE, 3), np.uint8))
    variables = trunk.init(jax.random.key(0), images)
    if config == "conv":

        @jax.jit
        def run(variables, images):
            def loss(params):
                return trunk.apply({"params": params}, images).sum()

            return jax.grad(loss)(variables["params"])
    else:
        run = jax.jit(trunk.apply)
    out = {}

    def step():
        out["y"] = run(variables, images)

    return {"step": step, "sync": lambda: jax.block_until_ready(out["y"]), "info": dict}


def _torch_update(spec: dict) -> dict:
    import torch_sac_baseline as tb

    config, c = spec["config"], CONFIGS[spec["config"]]
    trunk = {"state": "none", "conv": "lerobot_conv", "resnet10": "resnet10"}[config]
    sac = tb.TorchSAC(
        trunk, num_critics=c["critics"], critic_actor_ratio=c["utd"], conv_bf16=spec["bf16"]
    )
    batch = tb.torch_batch(_random_batch(config))

    def step():
        sac.update(batch, c["utd"])

    def info():
        return _torch_flops(step)

    return {"step": step, "sync": lambda: None, "info": info}


def _torch_trunk(spec: dict) -> dict:
    import torch
    import torch_sac_baseline as tb

    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (BATCH * CAMERAS, 3, SIZE, SIZE), generator=g).float()
    images = images.contiguous(memory_format=torch.channels_last)
    if spec["config"] == "conv":
        trunk = tb.ConvTrunk(bf16=spec["bf16"]).to(memory_format=torch.channels_last)

        def step():
            for p in trunk.parameters():
                p.grad = None
            trunk(images).sum().backward()
    else:
        trunk = tb.FrozenResNet()

        def step():
            with torch.inference_mode():
                trunk(images)

    return {"step": step, "sync": lambda: None, "info": dict}


def _import_lerobot():
    """``import lerobot`` in the overlay venv. torchvision's C ops (PyPI's wheel is linked
    against CUDA torch) do not load against the CPU torch, and torchvision then fails to register
    fake kernels for them on import; SAC calls none of them, so those registrations are skipped."""
    import types

    name = "torchvision._meta_registrations"
    sys.modules.setdefault(name, types.ModuleType(name))
    import lerobot

    return lerobot


def _lerobot_sac(config: str, features: dict, action_feature, encoder: dict):
    """LeRobot 0.5+'s SAC: ``SACAlgorithm`` over a ``GaussianActorPolicy``; ``update`` takes an
    iterator of minibatches (``utd_ratio`` of them, the actor and temperature with the last)."""
    from lerobot.policies.gaussian_actor import modeling_gaussian_actor as ga
    from lerobot.policies.gaussian_actor.configuration_gaussian_actor import GaussianActorConfig
    from lerobot.rl.algorithms.sac import SACAlgorithm, SACAlgorithmConfig

    c = CONFIGS[config]
    if config == "resnet10":
        _local_resnet10(ga.PretrainedImageEncoder)
    policy_cfg = GaussianActorConfig(
        input_features=features, output_features=action_feature, device="cpu", **encoder
    )
    policy = ga.GaussianActorPolicy(policy_cfg)
    policy.train()  # as lerobot.rl.learner does
    algo_cfg = SACAlgorithmConfig.from_policy_config(policy_cfg)
    algo_cfg.num_critics = c["critics"]
    algo_cfg.num_subsample_critics = 2 if c["critics"] > 2 else None
    algo_cfg.utd_ratio = c["utd"]
    algo_cfg.policy_update_freq = 1
    sac = SACAlgorithm(policy, algo_cfg)
    sac.make_optimizers_and_scheduler()
    return sac.update


def _lerobot044_sac(config: str, features: dict, action_feature, encoder: dict):
    """LeRobot 0.4's SAC: ``SACPolicy`` (critics under ``torch.compile``, its default), its
    losses through ``forward(batch, model=...)``, stepped as ``lerobot.rl.learner`` steps them
    (Adam per part, gradient norms clipped, targets updated after every critic update)."""
    import torch
    from lerobot.policies.sac import modeling_sac
    from lerobot.policies.sac.configuration_sac import SACConfig

    c = CONFIGS[config]
    if config == "resnet10":
        _local_resnet10(modeling_sac.PretrainedImageEncoder)
    cfg = SACConfig(
        input_features=features,
        output_features=action_feature,
        device="cpu",
        num_critics=c["critics"],
        num_subsample_critics=2 if c["critics"] > 2 else None,
        utd_ratio=c["utd"],
        policy_update_freq=1,
        **encoder,
    )
    policy = modeling_sac.SACPolicy(cfg)
    policy.train()
    params = policy.get_optim_params()
    adam = torch.optim.Adam
    optimizers = {
        "critic": adam(params["critic"], lr=cfg.critic_lr),
        "actor": adam(params["actor"], lr=cfg.actor_lr),
        "temperature": adam([params["temperature"]], lr=cfg.critic_lr),  # as the learner
    }
    cached = cfg.vision_encoder_name is not None and cfg.freeze_vision_encoder

    def step(name: str, loss, parameters) -> None:
        optimizers[name].zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, max_norm=cfg.grad_clip_norm)
        optimizers[name].step()

    def update(minibatches) -> None:
        for i, mb in enumerate(minibatches):
            mb = dict(mb)
            if cached:  # the frozen encoder once per minibatch, as the learner does
                with torch.no_grad():
                    encode = policy.actor.encoder.get_cached_image_features
                    mb["observation_feature"] = encode(mb["state"])
                    mb["next_observation_feature"] = encode(mb["next_state"])
            loss = policy.forward(mb, model="critic")["loss_critic"]
            step("critic", loss, policy.critic_ensemble.parameters())
            if i == c["utd"] - 1:
                loss = policy.forward(mb, model="actor")["loss_actor"]
                step("actor", loss, policy.actor.parameters())
                loss = policy.forward(mb, model="temperature")["loss_temperature"]
                step("temperature", loss, [policy.log_alpha])
            policy.update_target_networks()

    return update


def _local_resnet10(encoder_class) -> None:
    """LeRobot loads HIL-SERL's ResNet-10 from the Hub (``helper2424/resnet10``), out of this
    machine's reach: the same network, built locally with random weights, takes its place."""
    import torch_sac_baseline as tb

    def load(self, config):
        return tb.GroupNormResNet10(), 512

    encoder_class._load_pretrained_vision_encoder = load


def _lerobot_update(spec: dict) -> dict:
    """LeRobot's SAC update as its learner runs it, on minibatches shifted by LeRobot's DrQ."""
    import functools

    lerobot = _import_lerobot()
    import torch
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.rl.buffer import random_shift
    from lerobot.utils.constants import ACTION as ACTION_KEY
    from lerobot.utils.constants import OBS_IMAGES, OBS_STATE

    config, c = spec["config"], CONFIGS[spec["config"]]
    cams = [f"cam{i}" for i in range(c["cameras"])]
    key = {"state": OBS_STATE, **{k: f"{OBS_IMAGES}.{k}" for k in cams}}
    features = {OBS_STATE: PolicyFeature(FeatureType.STATE, (STATE,))}
    features.update({key[k]: PolicyFeature(FeatureType.VISUAL, (3, SIZE, SIZE)) for k in cams})
    action_feature = {ACTION_KEY: PolicyFeature(FeatureType.ACTION, (ACTION,))}
    if config == "resnet10":
        encoder = dict(vision_encoder_name="helper2424/resnet10", freeze_vision_encoder=True)
    else:  # the DefaultImageEncoder, trained by the critic
        encoder = dict(freeze_vision_encoder=False)
    legacy = lerobot.__version__.startswith("0.4")
    build = _lerobot044_sac if legacy else _lerobot_sac
    update = build(config, features, action_feature, encoder)

    batch = _random_batch(config)

    def observations(obs: dict, sl: slice) -> dict:
        out = {}
        for k, v in obs.items():
            t = torch.from_numpy(v[sl])
            out[key[k]] = t.permute(0, 3, 1, 2).float() / 255.0 if k in cams else t
        return out

    n = c["batch"]
    minibatches = [
        {
            "state": observations(batch["observations"], slice(i * n, (i + 1) * n)),
            "next_state": observations(batch["next_observations"], slice(i * n, (i + 1) * n)),
            ACTION_KEY: torch.from_numpy(batch["actions"][i * n : (i + 1) * n]),
            "reward": torch.from_numpy(batch["rewards"][i * n : (i + 1) * n]),
            "done": torch.from_numpy(batch["terminated"][i * n : (i + 1) * n]),
        }
        for i in range(c["utd"])
    ]
    # The replay buffer's default augmentation: random_shift(pad=4) under torch.compile, applied
    # in sample() to every image key of state and next_state in one call.
    drq = torch.compile(functools.partial(random_shift, pad=4))
    pairs = [(which, key[k]) for k in cams for which in ("state", "next_state")]

    def shifted(mb: dict) -> dict:
        if not cams:
            return mb
        images = drq(torch.cat([mb[which][k] for which, k in pairs]))
        out = {**mb, "state": dict(mb["state"]), "next_state": dict(mb["next_state"])}
        for (which, k), part in zip(pairs, images.chunk(len(pairs)), strict=True):
            out[which][k] = part
        return out

    def step():
        update(shifted(mb) for mb in minibatches)

    def info():
        t0 = time.perf_counter()
        for _ in range(2):
            for mb in minibatches:
                shifted(mb)
        drq_ms = (time.perf_counter() - t0) / 2 * 1e3
        return {
            "lerobot_version": lerobot.__version__,
            "torch_version": torch.__version__,
            "python": sys.version.split()[0],
            "python_prefix": sys.prefix,
            "drq_ms_per_call": round(drq_ms, 1) if cams else None,
            **_torch_flops(lambda: update(iter(minibatches))),  # DrQ has neither
        }

    return {"step": step, "sync": lambda: None, "info": info}


def _roofline(spec: dict) -> dict:
    import roofline

    import robot_rl.agents  # noqa: F401  (the library's XLA flags, as in benchmarks/learner.py)

    config, c = spec["config"], CONFIGS[spec["config"]]
    rates, gemm, shape = [], [], {}

    def step():
        if config == "state":  # the critic ensemble's three training matmuls, as learner.py
            r = roofline.matmul_roofline(c["critics"], c["batch"], 256, iters=16, calls=2)
        else:
            r = roofline.conv_roofline(*ROOFLINE_CONV[config])
        rates.append(r["gflops"])
        shape["shape"] = r["shape"]
        # the CPU's f32 matmul ceiling: one large square matmul, its three training forms
        g = roofline.matmul_roofline(1, GEMM_SIDE, GEMM_SIDE, iters=4, calls=1)
        gemm.append(g["gflops"])
        shape["gemm_shape"] = g["shape"]

    def report():
        out = {"gflops": statistics.median(rates), "gemm_gflops": statistics.median(gemm)}
        rates.clear()
        gemm.clear()
        return out

    def info():
        rates.clear()  # the warm-up's figures (compiling) do not count
        gemm.clear()
        return dict(shape)

    return {"step": step, "sync": lambda: None, "info": info, "report": report}


BUILDERS = {
    ("ours", "update"): _ours_update,
    ("ours", "trunk"): _ours_trunk,
    ("torch", "update"): _torch_update,
    ("torch", "trunk"): _torch_trunk,
    ("lerobot", "update"): _lerobot_update,
    ("roofline", "update"): _roofline,
}


def worker(spec: dict) -> None:
    """Build the contender, warm it up, then answer ``run N`` lines with seconds per call."""
    if spec["framework"] in ("torch", "lerobot"):
        import torch

        torch.set_num_threads(spec["threads"])
    t0 = time.perf_counter()
    contender = BUILDERS[spec["framework"], spec["part"]](spec)
    step, sync = contender["step"], contender["sync"]
    step()
    sync()
    info = contender["info"]()  # FLOP counts and the like, then warm up again after them
    step()
    sync()
    warmup_s = time.perf_counter() - t0
    print(json.dumps({"ready": True, "warmup_s": warmup_s, "info": info}), flush=True)
    for line in sys.stdin:
        calls = int(line.split()[1])
        t0 = time.perf_counter()
        for _ in range(calls):
            step()
        sync()
        reply = {"s_per_call": (time.perf_counter() - t0) / calls}
        if "report" in contender:
            reply.update(contender["report"]())
        print(json.dumps(reply), flush=True)


# ---------------------------------------------------------------------------------- driver
class Worker:
    def __init__(self, name: str, spec: dict, xla_flags: str, python: str | None = None):
        env = dict(os.environ)
        if xla_flags:
            env["XLA_FLAGS"] = xla_flags
        else:
            env.pop("XLA_FLAGS", None)
        env["JAX_PLATFORMS"] = "cpu"
        # Intra-op threads of every framework: XLA's Eigen pool follows the visible CPUs, so
        # all are told the same count.
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(spec["threads"])
        self.name, self.spec, self.xla_flags = name, spec, xla_flags
        self.proc = subprocess.Popen(
            [python or sys.executable, __file__, "--worker", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.warmup_s, self.info = None, {}

    def _reply(self, key: str) -> dict:
        while True:  # skip anything a library printed to stdout
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"worker {self.name} died")
            if line.startswith("{"):
                reply = json.loads(line)
                if key in reply:
                    return reply

    def wait_ready(self) -> None:
        reply = self._reply("ready")
        self.warmup_s, self.info = reply["warmup_s"], reply["info"]

    def run(self, calls: int) -> dict:
        self.proc.stdin.write(f"run {calls}\n")
        self.proc.stdin.flush()
        return self._reply("s_per_call")

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _stats(values: list[float], digits: int) -> dict:
    return {
        "median": round(statistics.median(values), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
    }


def measure(config: str, part: str, contenders: dict, rounds: int, calls: int, threads: int):
    """Interleaved rounds; returns JSON-ready lines."""
    workers = []
    for name, spec in contenders.items():
        if config not in spec.get("configs", CONFIGS) or part not in spec.get("parts", (part,)):
            continue
        if part == "trunk" and config == "state":
            continue
        worker_spec = {
            "framework": spec["framework"],
            "config": config,
            "part": part,
            "threads": spec.get("threads") or threads,
            "bf16": spec.get("bf16", False),
            "encoder": spec.get("encoder"),
        }
        workers.append(Worker(name, worker_spec, spec.get("xla_flags", ""), spec.get("python")))
    for w in workers:
        w.wait_ready()
    load_before = os.getloadavg()
    times = {w.name: [] for w in workers}
    roof: list[float] = []
    gemm: list[float] = []
    load_by_round = []
    for r in range(rounds):
        # Rotate the order so that no contender always runs first after a pause.
        for w in workers[r % len(workers) :] + workers[: r % len(workers)]:
            reply = w.run(calls)
            times[w.name].append(reply["s_per_call"])
            if w.spec["framework"] == "roofline":
                roof.append(reply["gflops"])
                gemm.append(reply["gemm_gflops"])
        load_by_round.append(round(os.getloadavg()[0], 2))
    load_after = os.getloadavg()
    for w in workers:
        w.close()
    c = CONFIGS[config]
    common = {
        "config": config,
        "part": part,
        "batch": c["batch"],
        "critic_updates_per_call": c["utd"] if part == "update" else None,
        "num_critics": c["critics"],
        "cameras": c["cameras"],
        "threads": threads,
        "rounds": rounds,
        "calls_per_round": calls,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "loadavg_1min_by_round": load_by_round,
        "cpu_count": os.cpu_count(),
    }
    lines, shares, gemm_shares, rates = [], {}, {}, {}
    for w in workers:
        if w.spec["framework"] == "roofline":
            continue
        ms = [t * 1e3 for t in times[w.name]]
        line = {
            **common,
            "contender": w.name,
            "framework": w.spec["framework"],
            "contender_threads": w.spec["threads"],
            "conv_bf16": w.spec["bf16"],
            "xla_flags": w.xla_flags if w.spec["framework"] == "ours" else None,
            "ms_per_call_median": round(statistics.median(ms), 1),
            "ms_per_call_rounds": [round(x, 1) for x in ms],
            "warmup_s": round(w.warmup_s, 1),
            **w.info,
        }
        if part == "update":
            rates[w.name] = round(c["utd"] / statistics.median(times[w.name]), 2)
            line["critic_updates_per_s"] = rates[w.name]
        flops = w.info.get("gflop_per_call")
        if flops and roof:
            achieved = [flops / t for t in times[w.name]]
            line["achieved_gflops"] = _stats(achieved, 2)
            share = [a / g for a, g in zip(achieved, roof, strict=True)]
            line["roofline_share"] = _stats(share, 3)
            shares[w.name] = line["roofline_share"]["median"]
            share = [a / g for a, g in zip(achieved, gemm, strict=True)]
            line["gemm_share"] = _stats(share, 3)
            gemm_shares[w.name] = line["gemm_share"]["median"]
        lines.append(line)
    summary = {**common, "summary": True}
    if part == "update":
        summary["critic_updates_per_s"] = rates
    if roof:
        roof_worker = next(w for w in workers if w.spec["framework"] == "roofline")
        summary["roofline_shape"] = roof_worker.info.get("shape")
        summary["roofline_gflops"] = _stats(roof, 2)
        summary["roofline_share"] = shares
        summary["gemm_shape"] = roof_worker.info.get("gemm_shape")
        summary["gemm_gflops"] = _stats(gemm, 2)
        summary["gemm_share"] = gemm_shares
    ours = [w.name for w in workers if w.spec["framework"] == "ours"]
    peers = [w.name for w in workers if w.spec["framework"] in ("torch", "lerobot")]
    for peer in peers:
        for name in ours:
            ratios = [a / b for a, b in zip(times[peer], times[name], strict=True)]
            summary[f"ratio_{peer}_over_{name}"] = _stats(ratios, 2)
    lines.append(summary)
    return lines


def contenders_from(args) -> dict:
    """Name -> spec: framework, and where it differs from the default, threads, bf16, encoder,
    XLA flags, interpreter, and the configurations and parts it takes part in."""
    out = {}
    for item in args.ours_flags or [f"ours={OURS_XLA_FLAGS}"]:
        name, _, flags = item.partition("=")
        out[name] = {"framework": "ours", "xla_flags": flags}
    out["ours_small_conv"] = {"framework": "ours", "encoder": "conv", "configs": ("conv",)}
    out["ours_serl_resnet10"] = {
        "framework": "ours",
        "encoder": "serl_resnet10",
        "configs": ("resnet10",),
    }
    if not args.no_bf16:
        out["ours_bf16"] = {"framework": "ours", "bf16": True, "configs": ("conv",)}
    one_thread = args.threads > 1 and not args.no_1thread
    if not args.no_torch:
        out["torch"] = {"framework": "torch"}
        if one_thread:
            # Under oversubscription torch's OpenMP regions can lose more to waiting for a
            # descheduled thread than they gain; its one-thread time is reported as well.
            out["torch_1thread"] = {"framework": "torch", "threads": 1}
        if not args.no_bf16:
            out["torch_bf16"] = {"framework": "torch", "bf16": True, "configs": ("conv",)}
    if not args.no_lerobot:
        if not Path(args.lerobot_python).exists():
            raise SystemExit(
                f"{args.lerobot_python} not found: build it with "
                "`bash benchmarks/lerobot_peer_venv.sh`, or pass --no-lerobot"
            )
        lerobot = {"framework": "lerobot", "python": args.lerobot_python, "parts": ("update",)}
        out["lerobot"] = lerobot
        if one_thread:
            out["lerobot_1thread"] = {**lerobot, "threads": 1}
    if args.with_lerobot044:
        if not Path(args.lerobot044_python).exists():
            raise SystemExit(
                f"{args.lerobot044_python} not found: build it with "
                "`bash benchmarks/lerobot_peer_venv.sh 0.4.4`"
            )
        out["lerobot044"] = {
            "framework": "lerobot",
            "python": args.lerobot044_python,
            "parts": ("update",),
        }
    if not args.no_roofline:
        out["roofline"] = {"framework": "roofline", "parts": ("update",)}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="state,conv,resnet10")
    parser.add_argument("--part", default="update")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2, help="calls per contender per round")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--quick", action="store_true", help="2 rounds of 1 call: checks that every worker runs"
    )
    parser.add_argument(
        "--ours-flags",
        action="append",
        default=None,
        help="NAME=XLA_FLAGS for one of our contenders (repeatable); default: the library's",
    )
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--no-lerobot", action="store_true")
    parser.add_argument("--lerobot-python", default=LEROBOT_PYTHON)
    parser.add_argument(
        "--with-lerobot044", action="store_true", help="LeRobot 0.4.4's SAC as well (lerobot044)"
    )
    parser.add_argument("--lerobot044-python", default=LEROBOT044_PYTHON)
    parser.add_argument("--no-roofline", action="store_true")
    parser.add_argument(
        "--no-1thread", action="store_true", help="leave out torch_1thread and lerobot_1thread"
    )
    parser.add_argument(
        "--no-bf16",
        action="store_true",
        help="leave out the bf16 conv contenders (ours_bf16: encoder_dtype=bfloat16; "
        "torch_bf16: autocast around the trunk)",
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    if args.quick:
        args.rounds, args.calls = 2, 1

    contenders = contenders_from(args)
    command = shlex.join(["python", "benchmarks/pixels_vs_torch.py", *(argv or sys.argv[1:])])
    for config in args.config.split(","):
        for part in args.part.split(","):
            for line in measure(config, part, contenders, args.rounds, args.calls, args.threads):
                text = json.dumps({"command": command, **line})
                print(text, flush=True)
                if args.out:
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    with open(args.out, "a") as f:
                        f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
