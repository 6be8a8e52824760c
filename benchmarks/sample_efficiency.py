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

from robot_rl.runtime.recipes import task_recipe
from robot_rl.runtime.train_loop import TrainConfig, train


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny budgets: checks the plumbing")
    parser.add_argument("--tasks", default="pick_cube,peg_insert,car_lap")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument("--eval-every", type=int, default=2000)
    parser.add_argument("--eval-episodes", type=int, default=20)
    args = parser.parse_args(argv)
    for task in args.tasks.split(","):
        reached, censored = [], 0
        for seed in (int(s) for s in args.seeds.split(",")):
            cfg: TrainConfig = task_recipe(task, seed=seed)
            cfg.eval_every = 200 if args.quick else args.eval_every
            cfg.eval_episodes = 2 if args.quick else args.eval_episodes
            if args.quick:
                cfg.total_steps, cfg.start_steps, cfg.demos = 400, 100, 2
            cfg.stop_at_success = args.target
            cfg.log_every = cfg.eval_every
            with tempfile.TemporaryDirectory() as run_dir:
                cfg.run_dir = run_dir
                t0 = time.perf_counter()
                summary = train(cfg, console=Console(stderr=True))
                seconds = time.perf_counter() - t0
            final = summary["final_eval"]
            hit = final["success_rate"] >= args.target
            steps = final["step"] if hit else cfg.total_steps
            censored += not hit
            reached.append(steps)
            line = {
                "config": f"{task}_seed{seed}",
                "task": task,
                "seed": seed,
                "reached_target": hit,
                "env_steps": steps,
                "budget": cfg.total_steps,
                "final_success": final["success_rate"],
                "wall_s": round(seconds, 1),
            }
            print(json.dumps(line), flush=True)
        print(
            json.dumps(
                {
                    "config": f"{task}_summary",
                    "task": task,
                    "target_success": args.target,
                    "env_steps_mean": float(np.mean(reached)),
                    "env_steps_std": float(np.std(reached)),
                    "env_steps_min": int(np.min(reached)),
                    "env_steps_max": int(np.max(reached)),
                    "seeds": len(reached),
                    "censored_runs": censored,
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
