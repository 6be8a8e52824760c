"""Pixels on the CPU: robot_rl's jitted SAC update against a PyTorch one of the same configuration.

    python benchmarks/pixels_vs_torch.py [--config conv,resnet10] [--part update,trunk]
                                         [--rounds 5] [--threads 2] [--no-bf16] [--out FILE]

Two 64x64 cameras + a 20-d state, 4-d action, batch 64, 2 critics, DrQ random shift (pad 4),
4 critic updates per call and one actor + temperature update per 4 critic updates:

- ``conv``: LeRobot SAC's default image encoder shape (``lerobot_conv``), trained by the critic;
- ``resnet10``: a frozen ResNet-10 run on every sampled image (no embedding cache).

For ``conv`` two more contenders use bf16 in the trunk's convolutions: ``ours_bf16``
(``encoder_dtype='bfloat16'``: bf16 operands, f32 accumulation, on oneDNN) and ``torch_bf16``
(torch's autocast around the trunk). Everything else stays f32 in both.

Parts: ``update`` times one whole update call (4 critic updates); ``trunk`` times the trunk
alone in both frameworks (the conv forward + backward for ``conv``, the forward for the frozen
ResNet-10), which is what bounds the update when the ratio falls short.

Each contender is its own worker process (its own ``XLA_FLAGS``, ``--threads`` intra-op
threads); after every worker has compiled and warmed up, the driver runs them in turns, round
after round, so that all of them see the same machine load; each round it records every
contender's time per call and each ratio torch / ours. JSON lines (one per contender and
configuration, then one summary per configuration) go to stdout and, with ``--out``, to a file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

BATCH, UTD, CAMERAS, SIZE, STATE, ACTION = 64, 4, 2, 64, 20, 4

OURS_XLA_FLAGS = ""
"""XLA_FLAGS of our default contender: none, so the library's own (``robot_rl.agents``) apply."""


# ---------------------------------------------------------------------------------- workers
def _ours_update(config: str, bf16: bool = False):
    import jax
    from learner import spaces

    from robot_rl.agents.config import AgentConfig
    from robot_rl.agents.random_batches import random_batch
    from robot_rl.agents.sac import SACAgent

    obs_space, act_space = spaces(STATE, ACTION, CAMERAS, SIZE)
    common = dict(
        num_critics=2,
        critic_subsample=2,
        critic_actor_ratio=4,
        drq_pad=4,
        pooling="spatial_learned",
        bottleneck_dim=256,
    )
    if config == "conv":
        dtype = "bfloat16" if bf16 else "float32"
        cfg = AgentConfig(encoder="lerobot_conv", encoder_dtype=dtype, **common)
    else:
        cfg = AgentConfig(encoder="resnet10", encoder_frozen=True, **common)
    state = {"agent": SACAgent.create(0, obs_space, act_space, cfg)}
    batch = random_batch(obs_space, ACTION, BATCH * UTD)

    def step():
        state["agent"], info = state["agent"].update(batch, UTD)
        return info

    def sync():
        jax.block_until_ready(state["agent"])

    return step, sync


def _ours_trunk(config: str, bf16: bool = False):
    import jax
    import jax.numpy as jnp
    import numpy as np

    from robot_rl.agents.encoders import TRUNKS

    rng = np.random.default_rng(0)
    if config == "conv":
        trunk = TRUNKS["lerobot_conv"](dtype=jnp.bfloat16 if bf16 else jnp.float32)
    else:
        trunk = TRUNKS["resnet10"]()
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

    def sync():
        jax.block_until_ready(out["y"])

    return step, sync


def _torch_update(config: str, bf16: bool = False):
    import torch_sac_baseline as tb
    from learner import spaces

    from robot_rl.agents.random_batches import random_batch

    obs_space, _ = spaces(STATE, ACTION, CAMERAS, SIZE)
    sac = tb.TorchSAC("lerobot_conv" if config == "conv" else "resnet10", conv_bf16=bf16)
    batch = tb.torch_batch(random_batch(obs_space, ACTION, BATCH * UTD))

    def step():
        sac.update(batch, UTD)

    return step, lambda: None


def _torch_trunk(config: str, bf16: bool = False):
    import torch
    import torch_sac_baseline as tb

    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (BATCH * CAMERAS, 3, SIZE, SIZE), generator=g).float()
    images = images.contiguous(memory_format=torch.channels_last)
    if config == "conv":
        trunk = tb.ConvTrunk(bf16=bf16).to(memory_format=torch.channels_last)

        def step():
            for p in trunk.parameters():
                p.grad = None
            trunk(images).sum().backward()
    else:
        trunk = tb.FrozenResNet()

        def step():
            with torch.inference_mode():
                trunk(images)

    return step, lambda: None


def worker(spec: dict) -> None:
    """Build the contender, warm it up, then answer ``run N`` lines with seconds per call."""
    threads = spec["threads"]
    if spec["framework"] == "torch":
        import torch

        torch.set_num_threads(threads)
        build = {"update": _torch_update, "trunk": _torch_trunk}[spec["part"]]
    else:
        build = {"update": _ours_update, "trunk": _ours_trunk}[spec["part"]]
    t0 = time.perf_counter()
    step, sync = build(spec["config"], spec.get("bf16", False))
    step()
    sync()
    print(json.dumps({"ready": True, "warmup_s": time.perf_counter() - t0}), flush=True)
    for line in sys.stdin:
        calls = int(line.split()[1])
        t0 = time.perf_counter()
        for _ in range(calls):
            step()
        sync()
        print(json.dumps({"s_per_call": (time.perf_counter() - t0) / calls}), flush=True)


# ---------------------------------------------------------------------------------- driver
class Worker:
    def __init__(self, name: str, spec: dict, xla_flags: str):
        env = dict(os.environ)
        if xla_flags:
            env["XLA_FLAGS"] = xla_flags
        else:
            env.pop("XLA_FLAGS", None)
        env["JAX_PLATFORMS"] = "cpu"
        # Intra-op threads of both frameworks: XLA's Eigen pool follows the visible CPUs, so
        # both are told the same count.
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(spec["threads"])
        self.name, self.spec, self.xla_flags = name, spec, xla_flags
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.warmup_s = None

    def wait_ready(self) -> None:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.name} died during warm-up")
        self.warmup_s = json.loads(line)["warmup_s"]

    def run(self, calls: int) -> float:
        self.proc.stdin.write(f"run {calls}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())["s_per_call"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def measure(config: str, part: str, contenders: dict, rounds: int, calls: int, threads: int):
    """Interleaved rounds; yields JSON-ready lines."""
    workers = []
    for name, (framework, flags, own_threads, bf16) in contenders.items():
        if bf16 and config != "conv":
            continue  # bf16 is the trained conv trunk's option
        spec = {
            "framework": framework,
            "config": config,
            "part": part,
            "threads": own_threads or threads,
            "bf16": bf16,
        }
        workers.append(Worker(name, spec, flags))
    for w in workers:
        w.wait_ready()
    load_before = os.getloadavg()
    times = {w.name: [] for w in workers}
    for r in range(rounds):
        # Rotate the order so that no contender always runs first after a pause.
        for w in workers[r % len(workers) :] + workers[: r % len(workers)]:
            times[w.name].append(w.run(calls))
    load_after = os.getloadavg()
    for w in workers:
        w.close()
    common = {
        "config": config,
        "part": part,
        "batch": BATCH,
        "critic_updates_per_call": UTD if part == "update" else None,
        "threads": threads,
        "rounds": rounds,
        "calls_per_round": calls,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "cpu_count": os.cpu_count(),
    }
    lines = []
    for w in workers:
        ms = [t * 1e3 for t in times[w.name]]
        lines.append(
            {
                **common,
                "contender": w.name,
                "framework": w.spec["framework"],
                "contender_threads": w.spec["threads"],
                "conv_bf16": w.spec["bf16"],
                "xla_flags": w.xla_flags if w.spec["framework"] == "ours" else None,
                "ms_per_call_median": round(statistics.median(ms), 1),
                "ms_per_call_rounds": [round(x, 1) for x in ms],
                "warmup_s": round(w.warmup_s, 1),
            }
        )
    torch_times = times.get("torch")
    if torch_times:
        summary = {**common, "summary": True}
        for name, t in times.items():
            if name.startswith("torch"):
                continue
            for base in [b for b in times if b.startswith("torch")]:
                ratios = [a / b for a, b in zip(times[base], t, strict=True)]
                key = f"ratio_{base}_over_{name}"
                summary[f"{key}_median"] = round(statistics.median(ratios), 2)
                summary[f"{key}_min"] = round(min(ratios), 2)
                summary[f"{key}_max"] = round(max(ratios), 2)
        lines.append(summary)
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conv,resnet10")
    parser.add_argument("--part", default="update")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2, help="calls per contender per round")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--ours-flags",
        action="append",
        default=None,
        help="NAME=XLA_FLAGS for one of our contenders (repeatable); default: the library's",
    )
    parser.add_argument("--no-torch", action="store_true")
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

    contenders = {}
    for item in args.ours_flags or [f"ours={OURS_XLA_FLAGS}"]:
        name, _, flags = item.partition("=")
        contenders[name] = ("ours", flags, None, False)
    if not args.no_bf16:
        contenders["ours_bf16"] = ("ours", "", None, True)
    if not args.no_torch:
        contenders["torch"] = ("torch", "", None, False)
        if args.threads > 1:
            # Under oversubscription torch's OpenMP regions can lose more to waiting for a
            # descheduled thread than they gain; its one-thread time is reported as well.
            contenders["torch_1thread"] = ("torch", "", 1, False)
        if not args.no_bf16:
            contenders["torch_bf16"] = ("torch", "", None, True)
    for config in args.config.split(","):
        for part in args.part.split(","):
            for line in measure(config, part, contenders, args.rounds, args.calls, args.threads):
                text = json.dumps(line)
                print(text, flush=True)
                if args.out:
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    with open(args.out, "a") as f:
                        f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
