"""XLA flags against the default, on the state update, interleaved: one JSON line per variant.

    python benchmarks/learner_flags.py [--rounds 3] [--calls 5]

XLA reads its flags once, when JAX starts, so each measurement is a child process: the parent
runs the variants in turn (A, B, A, B, ...) and reports the median milliseconds per update call
(8 critic updates and 1 actor update, 10 critics, batch 256) and each variant's ratio to the
default, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from statistics import median

VARIANTS = {
    "default": "",
    "eigen_single_thread": "--xla_cpu_multi_thread_eigen=false",
}

CHILD = """
import sys, time
sys.path.insert(0, {tests!r})
import jax, gymnasium as gym, numpy as np
from agent_fixtures import random_batch
from robot_rl.agents.config import AgentConfig
from robot_rl.agents.sac import SACAgent
obs = gym.spaces.Dict({{"state": gym.spaces.Box(-np.inf, np.inf, (20,), np.float32)}})
act = gym.spaces.Box(-1, 1, (4,), np.float32)
agent = SACAgent.create(0, obs, act, AgentConfig(num_critics=10, critic_subsample=2,
                                                 critic_actor_ratio=8))
batch = random_batch(obs, 4, 256 * 8)
agent, _ = agent.update(batch, 8)
jax.block_until_ready(agent)
start = time.perf_counter()
for _ in range({calls}):
    agent, _ = agent.update(batch, 8)
jax.block_until_ready(agent)
print((time.perf_counter() - start) / {calls} * 1e3)
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args(argv)
    tests = str(Path(__file__).resolve().parents[1] / "tests")
    code = CHILD.format(tests=tests, calls=args.calls)
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    load_start = os.getloadavg()
    for _ in range(args.rounds):
        for name, flags in VARIANTS.items():
            env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
            out = subprocess.run(
                [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
            )
            times[name].append(float(out.stdout.split()[-1]))
    base = median(times["default"])
    for name, values in times.items():
        line = {
            "config": "a_state_rlpd_10critics_k8",
            "variant": name,
            "xla_flags": VARIANTS[name],
            "ms_per_call": round(median(values), 2),
            "ms_by_round": [round(v, 2) for v in values],
            "speedup_vs_default": round(base / median(values), 3),
            "loadavg_start": [round(x, 2) for x in load_start],
            "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        }
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
