"""Does training through actor + learner processes match the in-process run? One JSON line per
seed and mode, then a summary line.

Both runs train pick_cube from state with the task's recipe (20 expert demonstrations, RLPD
10 critics, UTD 2) for the same environment-step budget; the learner's final checkpoint and
the in-process run's are then evaluated alike (`robot-rl eval`, 50 seeded episodes).

    python benchmarks/distributed_equivalence.py [--steps 4000] [--seeds 0 1 2]

By default the twin actor runs as fast as the learner keeps up (``--max-learner-lag 8``), which
is what the in-process loop does by construction; ``--max-learner-lag 0 --speedup 2`` runs the
actor on its own clock instead, which on a loaded 2-core CPU lets the learner fall behind.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _cli(*args: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "COLUMNS": "250", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "robot_rl.cli", *args],
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )


def _run(*args: str, log: Path, timeout: float) -> None:
    proc = _cli(*args, log=log)
    if proc.wait(timeout=timeout) != 0:
        raise RuntimeError(f"robot-rl {args[0]} failed:\n{log.read_text()[-3000:]}")


def _evaluate(checkpoints: Path, episodes: int, log: Path) -> dict:
    _run("eval", "--checkpoint", str(checkpoints), "--episodes", str(episodes), "--json-out",
         log=log, timeout=900)  # fmt: skip
    return json.loads(log.read_text().strip().splitlines()[-1])


def in_process(seed: int, steps: int, episodes: int, tmp: Path) -> dict:
    start = time.perf_counter()
    run_dir = tmp / f"inproc-{seed}"
    _run("train", "--task", "pick_cube", "--seed", str(seed), "--total-steps", str(steps),
         "--run-dir", str(run_dir), "--eval-every", str(steps), log=tmp / f"inproc-{seed}.log",
         timeout=3600)  # fmt: skip
    wall = time.perf_counter() - start
    result = _evaluate(run_dir / "checkpoints", episodes, tmp / f"inproc-{seed}-eval.log")
    return {"mode": "in_process", "wall_s": round(wall, 1), **result}


def distributed(
    seed: int, steps: int, episodes: int, speedup: float, max_lag: int | None, tmp: Path
) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        endpoint = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    run_dir = tmp / f"learner-{seed}"
    start = time.perf_counter()
    learner = _cli("learner", "--task", "pick_cube", "--seed", str(seed), "--bind", endpoint,
                   "--run-dir", str(run_dir), "--total-steps", str(steps),
                   log=tmp / f"learner-{seed}.log")  # fmt: skip
    actor = _cli("actor", "--task", "pick_cube", "--seed", str(seed), "--learner", endpoint,
                 "--actor-id", f"bench-{seed}", "--outbox-dir", str(tmp / f"outbox-{seed}"),
                 "--speedup", str(speedup), "--total-steps", str(steps), "--flush-timeout", "600",
                 *(["--max-learner-lag", str(max_lag)] if max_lag else []),
                 log=tmp / f"actor-{seed}.log")  # fmt: skip
    for proc, name in ((actor, "actor"), (learner, "learner")):
        if proc.wait(timeout=3600) != 0:
            log = tmp / f"{name}-{seed}.log"
            raise RuntimeError(f"{name} failed:\n{log.read_text()[-3000:]}")
    wall = time.perf_counter() - start
    actor_summary = json.loads((tmp / f"actor-{seed}.log").read_text().strip().splitlines()[-1])
    result = _evaluate(run_dir / "checkpoints", episodes, tmp / f"learner-{seed}-eval.log")
    return {
        "mode": "actor_learner",
        "wall_s": round(wall, 1),
        "speedup": speedup,
        "max_learner_lag": max_lag,
        "actor_period_ms_p50": round(actor_summary["control_period_ms_p50"], 1),
        **result,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000, help="environment-step budget")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=50, help="evaluation episodes")
    parser.add_argument("--speedup", type=float, default=0.0, help="actor rate x the task's")
    parser.add_argument(
        "--max-learner-lag",
        type=int,
        default=8,
        help="the twin waits while the learner is this many transitions behind (0: never)",
    )
    args = parser.parse_args()
    rates: dict[str, list[float]] = {"in_process": [], "actor_learner": []}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for seed in args.seeds:
            for result in (
                distributed(
                    seed, args.steps, args.episodes, args.speedup, args.max_learner_lag, tmp
                ),
                in_process(seed, args.steps, args.episodes, tmp),
            ):
                rates[result["mode"]].append(result["success_rate"])
                print(json.dumps({"benchmark": "distributed_equivalence", "seed": seed,
                                  "steps": args.steps, **result}), flush=True)  # fmt: skip
    summary = {k: round(float(np.mean(v)), 3) for k, v in rates.items()}
    summary["difference"] = round(summary["actor_learner"] - summary["in_process"], 3)
    print(json.dumps({"benchmark": "distributed_equivalence_summary", "steps": args.steps,
                      "seeds": args.seeds, "success_rate_mean": summary}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
