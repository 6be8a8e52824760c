"""Reward classifier on the twin's pick_cube: held-out accuracy, then RL trained on its reward.

1. Record labelled front-camera frames (scripted expert with varied behaviours; ground truth
   from task.success), 2. train the classifier on a frozen conv trunk and measure accuracy on
   held-out episodes, 3. train SAC/RLPD from state observations with the classifier's sparse
   reward and termination in place of the task's, evaluated with ground-truth success.

Prints one JSON line per figure. ``--quick`` is a short smoke run (its figures are not the
acceptance figures). Example: ``nice -n 10 python benchmarks/reward_classifier.py``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from rich.console import Console


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument("--out", default=None, help="keep labels, classifier and run here")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    quick = args.quick

    from robot_rl.commands.record_labels import RecordLabelsConfig, record_labels
    from robot_rl.commands.train_reward import TrainRewardConfig, train_reward
    from robot_rl.rewards.labels import save_labels
    from robot_rl.runtime.environments import make_env
    from robot_rl.runtime.recipes import task_recipe
    from robot_rl.runtime.train_loop import train

    out = Path(args.out or tempfile.mkdtemp(prefix="reward_classifier_"))
    quiet = Console(quiet=True)

    started = time.perf_counter()
    label_config = RecordLabelsConfig(
        episodes=25 if quick else 120, image_size=args.image_size, seed=args.seed
    )
    env = make_env(
        "twin", "pick_cube", "", args.seed, {"cameras": ("front",), "image_size": args.image_size}
    )
    labels = record_labels(label_config, env)
    env.close()
    labels_path = save_labels(out / "labels.npz", labels)
    print(
        json.dumps(
            {
                "figure": "labels",
                "frames": len(labels),
                "success_frames": labels.positives,
                "episodes": label_config.episodes,
                "image_size": args.image_size,
                "frames_per_s": len(labels) / (time.perf_counter() - started),
            }
        ),
        flush=True,
    )

    started = time.perf_counter()
    result = train_reward(
        TrainRewardConfig(
            labels=str(labels_path),
            out=str(out / "classifier"),
            steps=300 if quick else 2_000,
            seed=args.seed,
        )
    )
    print(
        json.dumps(
            {
                "figure": "classifier_held_out_accuracy",
                **result["held_out"],
                "train_accuracy": result["train"]["accuracy"],
                "threshold": result["threshold"],
                "steps": result["steps"],
                "seconds": time.perf_counter() - started,
            }
        ),
        flush=True,
    )

    started = time.perf_counter()
    cfg = task_recipe(
        "pick_cube",
        seed=args.seed,
        reward_classifier=result["checkpoint"],
        run_dir=str(out / "run"),
        total_steps=1_500 if quick else 20_000,
        eval_every=1_500 if quick else 2_000,
        eval_episodes=5 if quick else 20,
        start_steps=500,
        demos=2 if quick else 20,
        stop_at_success=None if quick else 0.9,
    )
    summary = train(cfg, console=quiet)
    evals = [json.loads(line) for line in (out / "run" / "eval.jsonl").read_text().splitlines()]
    first_80 = next((e["step"] for e in evals if e["success_rate"] >= 0.8), None)
    final = summary["final_eval"]
    print(
        json.dumps(
            {
                "figure": "rl_with_classifier_reward",
                "task": "pick_cube",
                "observations": "state (policy); front camera (classifier)",
                "env_steps": final["step"],
                "step_budget": cfg.total_steps,
                "success_rate": final["success_rate"],
                "success_ci": [final["success_ci_low"], final["success_ci_high"]],
                "eval_episodes": final["episodes"],
                "first_step_at_80pct": first_80,
                "curve": [(e["step"], e["success_rate"]) for e in evals],
                "seconds": time.perf_counter() - started,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
