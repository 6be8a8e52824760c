"""Environment steps to 90% success per task over seeds (state observations, the twin).

    python benchmarks/sample_efficiency.py [--quick] [--tasks pick_cube] [--seeds 0,1,2]

Each run trains with `robot-rl train`'s loop, evaluates every --eval-every steps on
--eval-episodes episodes, and stops at the first evaluation at or above --target success.
One JSON line per run, then one summary line per task (mean and spread over seeds; runs that
never reached the target count at their budget and are listed as censored).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import numpy as np
from rich.console import Console
from task_recipes import task_recipe

from robot_rl.runtime.train_loop import TrainConfig, train


def configure(task: str, seed: int, args) -> TrainConfig:
    """The task's recipe with this benchmark's evaluation cadence and stop criterion."""
    cfg: TrainConfig = task_recipe(task, seed=seed)
    cfg.eval_every = 200 if args.quick else args.eval_every
    cfg.eval_episodes = 2 if args.quick else args.eval_episodes
    if args.quick:
        cfg.total_steps, cfg.start_steps, cfg.demos = 400, 100, 2
    cfg.stop_at_success = args.target
    cfg.log_every = cfg.eval_every
    return cfg


def run_to_target(cfg: TrainConfig, target: float, inspect_run=None) -> dict:
    """Train in a temporary run directory until ``target`` success or the budget; the figures
    of the run, plus what ``inspect_run(run_dir)`` returns (read before the directory goes)."""
    with tempfile.TemporaryDirectory() as run_dir:
        cfg.run_dir = run_dir
        t0 = time.perf_counter()
        summary = train(cfg, console=Console(stderr=True))
        seconds = time.perf_counter() - t0
        extra = inspect_run(run_dir) if inspect_run else {}
    final = summary["final_eval"]
    hit = final["success_rate"] >= target
    return {
        "reached_target": hit,
        "env_steps": final["step"] if hit else cfg.total_steps,
        "budget": cfg.total_steps,
        "final_success": final["success_rate"],
        "wall_s": round(seconds, 1),
        **extra,
    }


def spread(runs: list[dict]) -> dict:
    """Mean and spread of env steps to the target over seeds; censored runs count at budget."""
    steps = [run["env_steps"] for run in runs]
    return {
        "env_steps_mean": float(np.mean(steps)),
        "env_steps_std": float(np.std(steps)),
        "env_steps_min": int(np.min(steps)),
        "env_steps_max": int(np.max(steps)),
        "seeds": len(steps),
        "censored_runs": sum(not run["reached_target"] for run in runs),
    }


def add_arguments(parser: argparse.ArgumentParser, tasks: str) -> None:
    parser.add_argument("--quick", action="store_true", help="tiny budgets: checks the plumbing")
    parser.add_argument("--tasks", default=tasks)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument("--eval-every", type=int, default=2000)
    parser.add_argument("--eval-episodes", type=int, default=20)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser, "pick_cube,peg_insert,car_lap")
    args = parser.parse_args(argv)
    for task in args.tasks.split(","):
        runs = []
        for seed in (int(s) for s in args.seeds.split(",")):
            cfg = configure(task, seed, args)
            run = run_to_target(cfg, args.target)
            runs.append(run)
            line = {"config": f"{task}_seed{seed}", "task": task, "seed": seed, **run}
            print(json.dumps(line), flush=True)
        summary = {"config": f"{task}_summary", "task": task, "target_success": args.target}
        print(json.dumps({**summary, **spread(runs)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
