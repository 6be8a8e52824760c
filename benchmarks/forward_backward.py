"""Forward-backward reset-free training on the twin (SERL): success of both policies, resets.

    python benchmarks/forward_backward.py [--quick] [--task pick_cube] [--seeds 0]

Each run trains the forward policy (pick_cube) and the backward policy (put_down_cube) taking
turns on one twin with no reset between them, evaluates both every --eval-every steps on
--eval-episodes episodes from their own tasks' resets (a separate twin each), and stops once both
reach --target success (or at --total-steps). One JSON line per run: the evaluated success rate
of each direction with its 95% interval, the in-training (reset-free) success rates, environment
steps per direction, and the scene resets during training (start / after a real failure / after
a stall).
"""

from __future__ import annotations

import argparse
import json
import tempfile

from rich.console import Console

from robot_rl.runtime.forward_backward import ForwardBackwardConfig, train_forward_backward


def direction_figures(summary: dict) -> dict:
    evaluated = summary["final_eval"]
    return {
        "task": summary["task"],
        "eval_success": evaluated["success_rate"],
        "eval_success_ci95": [
            round(evaluated["success_ci_low"], 3),
            round(evaluated["success_ci_high"], 3),
        ],
        "eval_episodes": evaluated["episodes"],
        "train_episodes": summary["episodes"],
        "train_success_rate": round(summary["train_success_rate"], 3),
        "train_success_last20": summary["train_success_last20"],
        "env_steps": summary["env_steps"],
        "updates": summary["updates"],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny budgets: checks the plumbing")
    parser.add_argument("--task", default="pick_cube", help="forward task")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--total-steps", type=int, default=16_000)
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument("--eval-every", type=int, default=2_000)
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--demos", type=int, default=20)
    args = parser.parse_args(argv)
    for seed in (int(s) for s in args.seeds.split(",")):
        cfg = ForwardBackwardConfig(
            task=args.task,
            seed=seed,
            total_steps=args.total_steps,
            demos=args.demos,
            eval_every=args.eval_every,
            eval_episodes=args.eval_episodes,
            log_every=min(1_000, args.eval_every),
            stop_at_success=args.target,
        )
        if args.quick:
            cfg.total_steps, cfg.start_steps, cfg.demos = 300, 50, 2
            cfg.eval_every, cfg.eval_episodes, cfg.log_every, cfg.batch_size = 300, 2, 100, 64
        with tempfile.TemporaryDirectory() as run_dir:
            cfg.run_dir = run_dir
            summary = train_forward_backward(cfg, console=Console(stderr=True))
        forward, backward = summary["forward"], summary["backward"]
        line = {
            "config": f"{args.task}_fb_seed{seed}" + ("_quick" if args.quick else ""),
            "seed": seed,
            "reached_target": min(
                forward["final_eval"]["success_rate"], backward["final_eval"]["success_rate"]
            )
            >= args.target,
            "target_success": args.target,
            "env_steps": summary["env_steps"],
            "budget": cfg.total_steps,
            "resets_during_training": summary["resets"],
            "resets_after_start": summary["resets_after_start"],
            "handovers_without_reset": summary["handovers"],
            "forward": direction_figures(forward),
            "backward": direction_figures(backward),
            "wall_s": summary["wall_s"],
        }
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
