"""pick_cube from front and wrist images alone (no privileged state): success over env steps.

    nice -n 10 python benchmarks/pixel_learning.py --part a --seeds 0
    nice -n 10 python benchmarks/pixel_learning.py --part b --seeds 0 --classifier DIR
    python benchmarks/pixel_learning.py --plot          # curves PNG + summary from the JSON lines

(a) `robot-rl train --task pick_cube --cameras front wrist` on the twin: the task's recipe with
    the pixel recipe (runtime/recipes.py), the task's ground-truth reward. Target: 90% within
    5,000 steps on every seed.
(b) The same with the reward classifier's sparse reward and termination in place of the ground
    truth (benchmarks/reward_classifier.py records the labels and trains the classifier on
    front-camera frames at the run's image size; --classifier reuses one), with false-positive
    relabelling as that benchmark runs it (the twin's ground truth answers in the operator's
    place when the classifier fires). Target: 90% within 10,000 steps.

Every evaluation is the training loop's own: deterministic policy, the task's ground-truth
success, ``--eval-episodes`` episodes from fixed seeds, 95% Wilson interval. A run stops at the
first evaluation at or above ``--target`` (``--no-stop``: runs its whole budget).
JSON lines go to OUT/<part>_seed<N>.jsonl as they happen (one per evaluation, then one summary
per run), so a killed run keeps what it measured; ``--measure N`` only times N steps (cost per
step of the recipe, no learning figures).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "pixel_learning"
TARGETS = {"a": (0.9, 5_000), "b": (0.9, 10_000)}
"""Per part: success target and the step budget within which it must be reached."""


class JsonLines:
    """Appends records to a JSON-lines file (flushed per line) and echoes them on stdout."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path

    def __call__(self, record: dict) -> None:
        line = json.dumps(record)
        with open(self.path, "a") as f:
            f.write(line + "\n")
        print(line, flush=True)


class EvalWatch(io.TextIOBase):
    """The training loop's progress stream: passed through to stderr, and at every "eval @"
    line (printed just after eval.jsonl gets its record) the new record goes to ``on_eval``
    with the wall seconds since the run started."""

    def __init__(self, run_dir: Path, on_eval):
        self.run_dir, self.on_eval, self.started = run_dir, on_eval, time.perf_counter()
        evals = run_dir / "eval.jsonl"  # a resumed run's earlier records are already out
        self._seen = len(evals.read_text().splitlines()) if evals.is_file() else 0

    def write(self, text: str) -> int:
        sys.stderr.write(text)
        if "eval @" in text:
            records = (self.run_dir / "eval.jsonl").read_text().splitlines()
            for line in records[self._seen :]:
                self.on_eval(json.loads(line), time.perf_counter() - self.started)
            self._seen = len(records)
        return len(text)

    def flush(self) -> None:
        sys.stderr.flush()


def settings_of(cfg) -> dict:
    """What the run used, as the JSON lines record it."""
    agent = cfg.agent
    return {
        "task": cfg.task,
        "backend": cfg.backend,
        "cameras": list(cfg.cameras),
        "privileged_state": cfg.resolved_privileged_state(),
        "image_size": cfg.image_size,
        "batch_size": cfg.batch_size,
        "utd_ratio": cfg.utd_ratio,
        "encoder": agent.encoder,
        "encoder_frozen": agent.encoder_frozen,
        "encoder_dtype": agent.encoder_dtype,
        "drq_pad": agent.drq_pad,
        "num_critics": agent.num_critics,
        "demos": cfg.demos,
        "start_steps": cfg.start_steps,
        "eval_episodes": cfg.eval_episodes,
        "reward": "classifier" if cfg.reward_classifier else "ground truth",
        "relabel_false_positives": cfg.relabel_false_positives,
    }


def configure(args, seed: int, run_dir: Path, classifier: str | None):
    from task_recipes import task_recipe

    overrides = {"resume": True} if args.resume else {}
    if classifier:
        overrides = {"reward_classifier": classifier, "relabel_false_positives": True}
    if args.measure:
        overrides.update(total_steps=args.measure, eval_every=10**9, checkpoint_every=10**9)
    cfg = task_recipe(
        "pick_cube",
        seed=seed,
        cameras=("front", "wrist"),
        run_dir=str(run_dir),
        total_steps=args.steps or TARGETS[args.part][1],
        eval_every=args.eval_every,
        eval_episodes=args.eval_episodes,
        log_every=min(args.eval_every, 250),
        stop_at_success=None if args.no_stop else args.target,
        **overrides,
    )
    if args.candidate == "frozen64":  # the alternative the recipe was measured against
        frozen = cfg.agent.replace(encoder_frozen=True)
        cfg = dataclasses.replace(cfg, image_size=64, batch_size=256, agent=frozen)
    elif args.candidate == "bf16":  # the recipe with bf16 convolutions in the trained trunk
        cfg = dataclasses.replace(cfg, agent=cfg.agent.replace(encoder_dtype="bfloat16"))
    return cfg


def run_seed(args, seed: int, emit: JsonLines, classifier: str | None) -> dict:
    from rich.console import Console

    from robot_rl.runtime.train_loop import train

    suffix = "" if args.candidate == "recipe" else f"_{args.candidate}"
    run_dir = Path(args.runs) / f"{args.part}{suffix}_seed{seed}"
    cfg = configure(args, seed, run_dir, classifier)
    settings = settings_of(cfg)
    budget = cfg.total_steps
    first_hit: list[int] = []  # in this call (a resumed run: its continuation)

    def on_eval(record: dict, wall_s: float) -> None:
        if record["success_rate"] >= args.target and not first_hit:
            first_hit.append(record["step"])
        emit(
            {
                "part": args.part,
                "seed": seed,
                "steps": record["step"],
                "success": record["success_rate"],
                "success_ci95": [record["success_ci_low"], record["success_ci_high"]],
                "eval_episodes": record["episodes"],
                "wall_s": round(wall_s, 1),
            }
        )

    watch = EvalWatch(run_dir, on_eval)
    summary = train(cfg, console=Console(file=watch, soft_wrap=True))
    wall_s = time.perf_counter() - watch.started
    final = summary["final_eval"]
    result = {
        "part": args.part,
        "seed": seed,
        "summary": True,
        "reached_target": bool(first_hit),
        "steps_to_target": first_hit[0] if first_hit else None,
        "target": args.target,
        "budget": budget,
        "steps_run": final["step"],
        "final_success": final["success_rate"],
        "final_success_ci95": [final["success_ci_low"], final["success_ci_high"]],
        "wall_s": round(wall_s, 1),
        "s_per_step": round(wall_s / final["step"], 3),
        "settings": settings,
        **({"reward_relabel": summary["reward_relabel"]} if "reward_relabel" in summary else {}),
    }
    if args.measure:
        result = {
            "part": args.part,
            "seed": seed,
            "measure": True,
            "steps": final["step"],
            "wall_s": round(wall_s, 1),
            "settings": settings,
        }
    emit(result)
    if not args.measure and args.confirm_episodes:
        confirm(args, seed, emit)
    return result


def confirm(args, seed: int, emit: JsonLines) -> None:
    """The run's last checkpoint under ``robot-rl eval``: deterministic policy, ground-truth
    success, ``--confirm-episodes`` episodes on seeds (1000+) that training never evaluated on:
    a tighter interval than the 10-episode evaluation that stopped the run."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from reward_classifier import ground_truth_eval

    started = time.perf_counter()
    suffix = "" if args.candidate == "recipe" else f"_{args.candidate}"
    run_dir = Path(args.runs) / f"{args.part}{suffix}_seed{seed}"
    result = ground_truth_eval(run_dir, args.confirm_episodes)
    emit(
        {
            "part": args.part,
            "seed": seed,
            "confirm": True,
            "steps": result["step"],
            "confirm_success": result["success_rate"],
            "success_ci95": [result["success_ci_low"], result["success_ci_high"]],
            "eval_episodes": result["episodes"],
            "wall_s": round(time.perf_counter() - started, 1),
        }
    )


def make_classifier(args, emit: JsonLines) -> str:
    """Labels and classifier at the pixel recipe's image size, with benchmarks/
    reward_classifier.py's own recording and training."""
    from rich.console import Console

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from reward_classifier import record_and_train_classifier

    from robot_rl.runtime.recipes import PIXEL_RECIPE

    out = Path(args.runs) / "classifier"
    out.mkdir(parents=True, exist_ok=True)
    result = record_and_train_classifier(
        out,
        image_size=PIXEL_RECIPE["image_size"],
        seed=0,
        label_episodes=args.label_episodes,
        classifier_steps=args.classifier_steps,
        progress=Console(stderr=True),
        emit=lambda record: emit({"part": "b", **record}),
    )
    return result["checkpoint"]


def plot(out: Path) -> None:
    """One PNG per part (success against steps, every seed with its 95% band) and a summary."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summaries_out = []
    for part, (target, budget) in TARGETS.items():
        files = sorted(out.glob(f"{part}_seed*.jsonl"))
        if not files:
            continue
        fig, ax = plt.subplots(figsize=(6.5, 4))
        runs = []
        for path in files:
            records = [json.loads(line) for line in path.read_text().splitlines() if line]
            points = [r for r in records if "success" in r and "steps" in r]
            confirms = [r for r in records if r.get("confirm")]
            summaries = [r for r in records if r.get("summary")]
            if not points:
                continue
            seed = points[0]["seed"]
            steps = [p["steps"] for p in points]
            line = ax.plot(steps, [p["success"] for p in points], marker="o", label=f"seed {seed}")
            ax.fill_between(
                steps,
                [p["success_ci95"][0] for p in points],
                [p["success_ci95"][1] for p in points],
                alpha=0.15,
                color=line[0].get_color(),
            )
            for c in confirms:
                ax.errorbar(
                    c["steps"],
                    c["confirm_success"],
                    fmt="s",
                    color=line[0].get_color(),
                    yerr=[
                        [c["confirm_success"] - c["success_ci95"][0]],
                        [c["success_ci95"][1] - c["confirm_success"]],
                    ],
                )
            if not summaries:  # stopped before its end (Ctrl-C, deadline): its last eval
                last = points[-1]
                summaries = [
                    {
                        "seed": seed,
                        "final_success": last["success"],
                        "stopped": True,
                        "steps_run": last["steps"],
                        "wall_s": last["wall_s"],
                    }
                ]
            if summaries:
                hits = [p["steps"] for p in points if p["success"] >= target]
                runs.append(
                    {
                        **summaries[-1],
                        "steps_to_target": hits[0] if hits else None,
                        "confirm": confirms[-1] if confirms else None,
                        "confirms": [(c["steps"], c["confirm_success"]) for c in confirms],
                    }
                )
        ax.axhline(target, color="grey", ls="--", lw=1, label=f"target {target:.0%}")
        ax.set(
            xlabel="environment steps",
            ylabel="eval success (95% Wilson band)",
            ylim=(-0.02, 1.02),
            xlim=(0, budget),
            title=f"pick_cube from pixels ({part}): "
            + ("ground-truth reward" if part == "a" else "classifier reward"),
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        fig.savefig(out / f"{part}_curves.png", dpi=100)
        plt.close(fig)
        if not runs:
            continue
        reached = [r["steps_to_target"] for r in runs if r["steps_to_target"] is not None]
        summary = {
            "part": part,
            "seeds": [r["seed"] for r in runs],
            "target": target,
            "budget": budget,
            "seeds_at_target_within_budget": sum(s <= budget for s in reached),
            "steps_to_target": [r["steps_to_target"] for r in runs],
            "final_success": [r["final_success"] for r in runs],
            "confirm_success": [r["confirm"] and r["confirm"]["confirm_success"] for r in runs],
            "confirm_ci95": [r["confirm"] and r["confirm"]["success_ci95"] for r in runs],
            "confirms_step_success": [r["confirms"] for r in runs],
            "wall_s_last_call": [r["wall_s"] for r in runs],
        }
        summaries_out.append(summary)
        print(json.dumps(summary))
    (out / "summary.jsonl").write_text("".join(json.dumps(s) + "\n" for s in summaries_out))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("a", "b"), default="a")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--steps", type=int, default=None, help="budget (default: the target's)")
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument("--no-stop", action="store_true", help="run the whole budget")
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument(
        "--confirm-episodes", type=int, default=50, help="eval of the last checkpoint (0: none)"
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue each seed's run to --steps (--no-stop)"
    )
    parser.add_argument("--confirm-only", action="store_true", help="only the confirming eval")
    parser.add_argument("--classifier", default=None, help="(b) a trained classifier directory")
    parser.add_argument("--label-episodes", type=int, default=160)
    parser.add_argument("--classifier-steps", type=int, default=2_000)
    parser.add_argument("--measure", type=int, default=0, help="only time this many steps")
    parser.add_argument(
        "--candidate",
        choices=("recipe", "frozen64", "bf16"),
        default="recipe",
        help="frozen64: a frozen random trunk with the embedding cache, 64 px, batch 256; "
        "bf16: the recipe with encoder_dtype=bfloat16",
    )
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="JSON lines and PNGs")
    parser.add_argument("--runs", default="runs/pixel_learning", help="run directories")
    parser.add_argument("--plot", action="store_true", help="only draw curves from --out")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.plot:
        plot(out)
        return 0
    name = args.part if args.candidate == "recipe" else f"{args.part}_{args.candidate}"
    if args.measure:
        name = f"{args.part}_measure_{args.candidate}"
    for seed in (int(s) for s in args.seeds.split(",")):
        emit = JsonLines(out / f"{name}_seed{seed}.jsonl")
        if args.confirm_only:
            confirm(args, seed, emit)
            continue
        classifier = None
        if args.part == "b":
            classifier = args.classifier or make_classifier(args, emit)
            args.classifier = classifier  # one classifier for every seed of this call
        run_seed(args, seed, emit, classifier)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
