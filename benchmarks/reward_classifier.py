"""Reward classifier on the twin's pick_cube: held-out accuracy, then RL trained on its reward.

1. Record labelled front-camera frames (scripted expert with varied behaviours; ground truth
   from task.success), 2. train the classifier on a frozen conv trunk and measure accuracy on
   held-out episodes, 3. train SAC/RLPD from state observations with the classifier's sparse
   reward and termination in place of the task's, evaluated with ground-truth success.

Step 3 relabels false positives (``robot-rl train --relabel-false-positives``): whenever the
classifier fires, the twin's ground truth answers in the operator's place; a false success pays
nothing and is fine-tuned into the classifier as a negative. ``--no-relabel`` runs without it
(the policy then learns to fool the classifier). The final agent is evaluated as ``robot-rl
eval`` does: deterministic policy, the task's own success and termination, fresh seeds.

The RL run has a fixed budget (``--steps``; default the recipe's 20,000, as a ground-truth run
has) and its last policy is the one evaluated.
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
    parser.add_argument("--no-relabel", action="store_true", help="no false-positive labelling")
    parser.add_argument("--consecutive", type=int, default=1, help="frames in a row to pay")
    parser.add_argument("--final-eval-episodes", type=int, default=50)
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="env steps of the RL run, a fixed budget (default: the task recipe's, as with the "
        "ground-truth reward)",
    )
    parser.add_argument(
        "--stop-at",
        type=float,
        default=None,
        help="stop at the first training evaluation at or above this success rate (20 "
        "episodes: a noisy pick that the final 50-episode evaluation then reads lower)",
    )
    args = parser.parse_args()
    quick = args.quick

    from task_recipes import task_recipe

    from robot_rl.runtime.train_loop import train

    out = Path(args.out or tempfile.mkdtemp(prefix="reward_classifier_"))
    progress = Console(stderr=True)  # progress on stderr; stdout holds only the JSON lines

    result = record_and_train_classifier(
        out,
        image_size=args.image_size,
        seed=args.seed,
        label_episodes=25 if quick else 160,
        classifier_steps=300 if quick else 2_000,
        progress=progress,
    )

    started = time.perf_counter()
    cfg = task_recipe(
        "pick_cube",
        seed=args.seed,
        reward_classifier=result["checkpoint"],
        run_dir=str(out / "run"),
        total_steps=1_500 if quick else args.steps,  # None: the recipe's
        eval_every=1_500 if quick else 2_000,
        eval_episodes=5 if quick else 20,
        start_steps=500,
        demos=2 if quick else 20,
        stop_at_success=None if quick else args.stop_at,
        relabel_false_positives=not args.no_relabel,
        reward_consecutive=args.consecutive,
    )
    summary = train(cfg, console=progress)
    train_seconds = time.perf_counter() - started
    final_eval = ground_truth_eval(out / "run", 5 if quick else args.final_eval_episodes)
    evals = [json.loads(line) for line in (out / "run" / "eval.jsonl").read_text().splitlines()]
    first_80 = next((e["step"] for e in evals if e["success_rate"] >= 0.8), None)
    print(
        json.dumps(
            {
                "figure": "rl_with_classifier_reward",
                "task": "pick_cube",
                "observations": "state (policy); front camera (classifier)",
                "success_rate": final_eval["success_rate"],
                "success_ci": [final_eval["success_ci_low"], final_eval["success_ci_high"]],
                "eval_episodes": final_eval["episodes"],
                "evaluation": "robot-rl eval: deterministic, ground-truth success, seeds 1000+",
                "steps": final_eval["step"],
                "step_budget": cfg.total_steps,
                "first_step_at_80pct_in_training_evals": first_80,
                "training_eval_curve": [(e["step"], e["success_rate"]) for e in evals],
                "relabel_false_positives": cfg.relabel_false_positives,
                "reward_consecutive": cfg.reward_consecutive,
                **summary.get("reward_relabel", {}),
                "seconds": train_seconds,
            }
        ),
        flush=True,
    )


def record_and_train_classifier(
    out: Path,
    *,
    image_size: int,
    seed: int,
    label_episodes: int,
    classifier_steps: int,
    progress,
    emit=None,
) -> dict:
    """Record labelled front-camera frames on the twin, train the classifier on them, and give
    the figures of each to ``emit`` (default: print a JSON line); ``train_reward``'s result
    (with the checkpoint's path)."""
    emit = emit or (lambda record: print(json.dumps(record), flush=True))
    from robot_rl.commands.record_labels import RecordLabelsConfig, record_labels
    from robot_rl.commands.train_reward import TrainRewardConfig, train_reward
    from robot_rl.rewards.labels import save_labels
    from robot_rl.runtime.environments import make_env

    started = time.perf_counter()
    label_config = RecordLabelsConfig(episodes=label_episodes, image_size=image_size, seed=seed)
    env = make_env("twin", "pick_cube", "", seed, {"cameras": ("front",), "image_size": image_size})
    labels = record_labels(label_config, env, progress)
    env.close()
    labels_path = save_labels(out / "labels.npz", labels)
    emit(
        {
            "figure": "labels",
            "frames": len(labels),
            "success_frames": labels.positives,
            "episodes": label_config.episodes,
            "image_size": image_size,
            "frames_per_s": len(labels) / (time.perf_counter() - started),
        }
    )

    started = time.perf_counter()
    result = train_reward(
        TrainRewardConfig(
            labels=str(labels_path),
            out=str(out / "classifier"),
            steps=classifier_steps,
            seed=seed,
        )
    )
    emit(
        {
            "figure": "classifier_held_out_accuracy",
            **result["held_out"],
            "train_accuracy": result["train"]["accuracy"],
            "threshold": result["threshold"],
            "steps": result["steps"],
            "seconds": time.perf_counter() - started,
        }
    )
    return result


def ground_truth_eval(run_dir: Path, episodes: int) -> dict:
    """``robot-rl eval --checkpoint RUN/checkpoints``: the run's last checkpoint on the plain
    twin (the task's success and termination; no classifier), on seeds training never used."""
    import contextlib
    import io

    from robot_rl.commands.eval import EvalConfig
    from robot_rl.commands.eval import run as run_eval

    captured = io.StringIO()
    config = EvalConfig(
        checkpoint=str(run_dir / "checkpoints"), episodes=episodes, seed=1_000, json_out=True
    )
    with contextlib.redirect_stdout(captured):
        code = run_eval(config)
    if code != 0:
        raise RuntimeError(f"robot-rl eval failed ({code}): {captured.getvalue()}")
    return json.loads(captured.getvalue().strip().splitlines()[-1])


if __name__ == "__main__":
    main()
