"""gym_hil's pick-cube envs through ``robot-rl train --backend gym``: success over steps.

    python benchmarks/gym_hil.py --variant state --seeds 0 1 2
    python benchmarks/gym_hil.py --variant image --seeds 0 --steps 4000
    python benchmarks/gym_hil.py --variant state --env-id gym_hil/PandaPickCube-v0
    python benchmarks/gym_hil.py --variant state --seeds 0 --quick   # a few hundred steps

The env is gym_hil's PandaPickCube-v0 (the Base env behind LeRobot's action wrapper: moves of
2.5 cm steps, the grip as 0/1/2) with its state scaled as LeRobot normalises it
(``robot_rl.sim.gym_hil_env``); ``--env-id`` runs it raw, or the Base env (moves in metres,
bounded at 1 m a step). The cube is placed at random in gym_hil's sampling box at every reset
(``random_block_position=True``; ``--fixed-block``: gym_hil's default, always at one spot, where
the deterministic policy's evaluation episodes are all alike).

Each run is the command line a user types (printed in the summary record): 20 demonstrations
from the scripted picker (``robot_rl.sim.experts.gym_hil_pick``, ``--expert``), the ensemble
agent, sparse reward (1 on a 10 cm lift), evaluation of the deterministic policy every
``--eval-every`` steps on ``--eval-episodes`` episodes, stopping at ``--target``. The image
variant observes the front and wrist cameras at 32 px and ``agent_pos`` (no cube position).
JSON lines go to OUT/<variant>_seed<N>.jsonl as they happen (one per evaluation, then a
summary). Needs gym_hil: ``pip install -e '.[gym-hil]'`` in a venv with MuJoCo < 3.9.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "robot_rl.sim.gym_hil_env:robot_rl/PandaPickCubeScaled-v0"
RAW_ID = "gym_hil/PandaPickCube-v0"
BASE_ID = "gym_hil/PandaPickCubeBase-v0"
SUFFIX = {ENV_ID: "", RAW_ID: "_raw", BASE_ID: "_base"}
"""Result and run names per env."""
EXPERT = "robot_rl.sim.experts.gym_hil_pick:PickCubeExpert"
VARIANTS = {
    "state": ([], []),
    "image": (["image_obs=True"], ["--cameras", "front", "wrist", "--image-size", "32",
                                   "--batch-size", "64"]),
}  # fmt: skip
"""Per variant: its --env-kwargs, its other options."""
GRIPPER = ["--agent.gripper"]
"""The grip (gym_hil's 0 open / 1 stay / 2 close, the agent's -1 / 0 / +1) learned by the
discrete gripper critic, as LeRobot's HIL-SERL learns it; a continuous grip integrates the
policy's noise into the fingers' command."""
LEROBOT_FIGURE = (
    "gym-hil's README (pypi.org/project/gym-hil): LeRobot's HIL-SERL policy, trained 10 minutes "
    "with a human in the loop on PandaPickCube (images, a GPU), performs the task; no success "
    "rate or step count is published"
)


def command(args, seed: int, run_dir: Path) -> list[str]:
    steps = 600 if args.quick else args.steps
    every = 300 if args.quick else args.eval_every
    env_kwargs, options = VARIANTS[args.variant]
    if args.env_id == RAW_ID:
        env_kwargs = [*env_kwargs, "reset_delay_seconds=0"]
    if not args.fixed_block:
        env_kwargs = [*env_kwargs, "random_block_position=True"]
    if args.reward != "sparse":
        env_kwargs = [*env_kwargs, f"reward_type={args.reward}"]
    kwargs = ["--env-kwargs", *env_kwargs] if env_kwargs else []
    return [
        "robot-rl", "train", "--backend", "gym", "--env-id", args.env_id, *kwargs, *options,
        "--expert", EXPERT, "--demos", str(args.demos), "--seed", str(seed), *GRIPPER,
        "--total-steps", str(steps), "--start-steps", str(min(args.start_steps, steps // 2)),
        "--eval-every", str(every), "--eval-episodes", str(args.eval_episodes),
        "--log-every", str(every), "--stop-at-success", str(args.target),
        "--run-dir", str(run_dir),
    ]  # fmt: skip


def emit(path: Path, record: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")
    print(json.dumps(record), flush=True)


def run_seed(args, seed: int) -> dict:
    base = SUFFIX[args.env_id] + ("_fixed" if args.fixed_block else "")
    base += "" if args.reward == "sparse" else f"_{args.reward}"
    out = Path(args.out) / f"{args.variant}{base}_seed{seed}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("")  # one file per run
    run_dir = Path(args.runs).resolve() / f"{args.variant}{base}_seed{seed}"
    argv = command(args, seed, run_dir)
    started, seen, first_hit = time.perf_counter(), 0, None
    proc = subprocess.Popen(
        [sys.executable, "-m", "robot_rl.cli", *argv[1:]],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
    )  # fmt: skip
    for line in proc.stdout:
        sys.stderr.write(line)
        if "eval @" not in line:
            continue
        records = (run_dir / "eval.jsonl").read_text().splitlines()
        for record in map(json.loads, records[seen:]):
            if record["success_rate"] >= args.target and first_hit is None:
                first_hit = record["step"]
            emit(out, {
                "variant": args.variant, "seed": seed, "steps": record["step"],
                "success": record["success_rate"],
                "success_ci95": [record["success_ci_low"], record["success_ci_high"]],
                "eval_episodes": record["episodes"],
                "wall_s": round(time.perf_counter() - started, 1),
            })  # fmt: skip
        seen = len(records)
    code = proc.wait()
    summary = json.loads((run_dir / "summary.json").read_text()) if code == 0 else {}
    final = summary.get("final_eval") or {}
    result = {
        "variant": args.variant, "seed": seed, "summary": True, "exit_code": code,
        "command": shlex.join(argv), "target": args.target,
        "reached_target": first_hit is not None, "steps_to_target": first_hit,
        "final_success": final.get("success_rate"), "steps_run": final.get("step"),
        "wall_s": round(time.perf_counter() - started, 1), "lerobot_figure": LEROBOT_FIGURE,
        "date": time.strftime("%Y-%m-%d"),
    }  # fmt: skip
    emit(out, result)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="state")
    parser.add_argument("--env-id", choices=list(SUFFIX), default=ENV_ID)
    parser.add_argument("--fixed-block", action="store_true", help="the cube always at one spot")
    parser.add_argument(
        "--reward", choices=["sparse", "dense"], default="sparse",
        help="gym_hil's reward_type: sparse (1 on a 10 cm lift) or dense (reach, then lift)",
    )  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=20_000, help="step budget per seed")
    parser.add_argument("--start-steps", type=int, default=500)
    parser.add_argument("--demos", type=int, default=20)
    parser.add_argument("--eval-every", type=int, default=1_000)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument("--quick", action="store_true", help="600 steps, an eval every 300")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "gym_hil"))
    parser.add_argument("--runs", default="runs/gym_hil")
    args = parser.parse_args()
    results = [run_seed(args, seed) for seed in args.seeds]
    return 0 if all(r["exit_code"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
