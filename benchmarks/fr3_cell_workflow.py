"""The HIL-SERL robot workflow in a simulated arm cell (the FR3's, or with ``--cell so101`` the
SO-101's), command by command as a robot owner types them (README, "The robot workflow"), timed
stage by stage. JSON lines.

1. ``robot-rl up robot --hardware H --drivers-only``: the cell's drivers alone (kept up for
   stages 2 and 3, as a person keeps the robot on between recordings);
2. ``robot-rl record-demos --hardware H --no-start-drivers``: the cell's simulated operator,
   switched to ``demonstrate`` (a standard ROS 2 parameter set: what a person decides to do),
   drives whole episodes with the SpaceMouse's topics and judges each with its buttons;
3. ``robot-rl record-labels --hardware H --no-start-drivers``: the operator, in ``label``
   mode, moves the arm through successes, near misses and failures, holding the success
   button while it sees success; then it goes back to ``correct`` and the drivers stop;
4. ``robot-rl train-reward``: the classifier on those cell frames, with its held-out precision
   and recall;
5. ``robot-rl up robot`` with the demos, the classifier, relabelling and the operator's
   corrections (``--operator joy``): RL in the cell, the learner beside it on this machine;
6. ``robot-rl eval --hardware H --judge cell-ground-truth``: the final policy, judged by the
   cell's ground truth (evaluation only; the report says so), the classifier and the operator
   as witnesses.

Every stage prints one JSON line (its command, wall seconds, figures read from its output or
artefacts); the last line sums up. ``--quick`` is CI's version: a few demos, a few label
episodes, a few hundred steps, a few evaluation episodes.

    python benchmarks/fr3_cell_workflow.py --seed 0 [--cell so101] [--quick] [--minutes 30]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPERATOR = "/teleop/simulated_human"
FULL = {"demos": 20, "label_episodes": 30, "steps": 100_000, "eval_episodes": 50}
"""The full run's RL stage ends on --minutes (cell time); its steps are only a ceiling."""
QUICK = {"demos": 2, "label_episodes": 4, "steps": 300, "eval_episodes": 2}
ATTEMPTS_PER_DEMO = 8
"""record-demos gives up after this many attempts per demo wanted (its own default, 3 per demo
and 10, cut the SO-101 cell's seed 2 off at 9 demos of 10 after 40 attempts)."""


CELLS = {
    "fr3": ("fr3_sim.yaml", "pick_cube", "127.13.0.1"),
    "so101": ("so101_sim.yaml", "so101_pick_cube", "/tmp/robot_rl_so101_sim/bus"),
}
"""Per cell: its hardware file, its task, and the address its world serves the robot on."""


def cell_file(folder: Path, cell: str, operator: dict | None = None) -> Path:
    """The cell's hardware file on an address of this run's own (two cells may share a
    machine): a loopback host of its own for franky-sim, a port in ``folder`` for the bus;
    ``operator``: parameters of the simulated operator's node to set (as a person who decides
    how to act, e.g. ``{"episode_share": 0.0}``: it never corrects)."""
    import yaml

    name, _, address = CELLS[cell]
    own = f"127.13.{os.getpid() % 250 + 1}.1" if cell == "fr3" else str(folder / "bus")
    path = folder / name
    text = (ROOT / "hardware" / name).read_text().replace(address, own)
    if operator:
        spec = yaml.safe_load(text)
        (human,) = [n for n in spec["nodes"] if n["name"] == "simulated_human"]
        human["parameters"].update(operator)
        text = yaml.safe_dump(spec, sort_keys=False)
    path.write_text(text)
    return path


def robot_rl(*args: str) -> list[str]:
    return [sys.executable, "-m", "robot_rl.cli", *args]


def run_stage(name: str, command: list[str], log: Path, timeout: float) -> tuple[dict, str]:
    """Run ``command`` to its end (its output to ``log``); (the stage's record, the output)."""
    started = time.monotonic()
    with open(log, "w") as out:
        done = subprocess.run(
            command, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False
        )
    text = log.read_text(errors="replace")
    record = {
        "stage": name,
        "command": " ".join(command[2:]),
        "seconds": round(time.monotonic() - started, 1),
        "exit": done.returncode,
    }
    if done.returncode != 0:
        tail = "\n".join(text.splitlines()[-15:])
        raise RuntimeError(f"stage {name} exited with {done.returncode}; {log}:\n{tail}")
    return record, text


class OperatorSwitch:
    """Sets the cell operator's ``mode`` parameter (``ros2 param set``), as a person decides."""

    def __init__(self):
        import rclpy
        import rclpy.executors

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("workflow_harness", context=self.context)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=self.context)

    def set(self, mode: str, timeout: float = 120.0) -> None:
        import rclpy
        import rclpy.executors
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        client = self.node.create_client(SetParameters, f"{OPERATOR}/set_parameters")
        if not client.wait_for_service(timeout_sec=timeout):
            raise RuntimeError(f"{OPERATOR}/set_parameters did not appear in {timeout} s")
        request = SetParameters.Request(
            parameters=[Parameter("mode", value=mode).to_parameter_msg()]
        )
        future = client.call_async(request)
        rclpy.spin_until_future_complete(
            self.node, future, executor=self.executor, timeout_sec=timeout
        )
        result = future.result()
        if result is None or not result.results[0].successful:
            raise RuntimeError(f"the operator refused mode {mode!r}: {result}")

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


def drivers_only(hardware: Path, log: Path) -> subprocess.Popen:
    """Stage 1: ``up robot --drivers-only`` in the background, returned once all are active."""
    out = open(log, "w")  # noqa: SIM115 (the process writes it until it is stopped)
    proc = subprocess.Popen(
        robot_rl("up", "robot", "--hardware", str(hardware), "--drivers-only"),
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300.0
    while "drivers active" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the drivers did not come up; {log}")
        time.sleep(0.5)
    return proc


def stop(proc: subprocess.Popen, grace: float = 30.0) -> int:
    os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait(10)


def _last_json(text: str) -> dict:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            return json.loads(line)
    return {}


def rl_curve(learner: Path, started: float, window: int = 20) -> dict:
    """The RL stage's learning curve from the learner's per-episode metrics: for each block of
    ``window`` episodes, the cell's wall minutes since the RL stage ``started`` (epoch s), the
    env steps at its end, its success rate, its unaided success rate (no operator step in the
    episode: the policy's own) and the operator's share of steps."""
    metrics = (learner / "metrics.jsonl").read_text().splitlines()
    episodes = [e for e in map(json.loads, filter(None, metrics)) if "charts/success" in e]
    rows = []
    for start in range(0, len(episodes), window):
        block = episodes[start : start + window]
        helped = [e.get("robot/intervention_rate", 0.0) for e in block]
        success = [e["charts/success"] for e in block]
        own = [s and not h for s, h in zip(success, helped, strict=True)]
        lengths = [e["charts/episode_length"] for e in block]
        ended = block[-1].get("wall_time")  # runs logged before it was recorded: none
        rows.append([
            None if ended is None else round((ended - started) / 60, 1),
            block[-1]["step"], start + len(block),
            round(100 * sum(success) / len(block)), round(100 * sum(own) / len(block)),
            round(100 * sum(h * n for h, n in zip(helped, lengths, strict=True)) / sum(lengths)),
        ])  # fmt: skip
    return {
        "stage": "rl_curve",
        "columns": [
            "minutes",
            "steps",
            "episodes",
            "success_pct",
            "unaided_success_pct",
            "operator_steps_pct",
        ],
        "per_episodes": window,
        "rows": rows,
    }


def _actor_summary(log: Path) -> dict:
    """The actor's closing JSON line (steps, episodes, control period p50/p99)."""
    return _last_json(log.read_text(errors="replace")) if log.exists() else {}


def _figure(pattern: str, text: str, cast=float):
    found = re.findall(pattern, text)
    return cast(found[-1]) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cell", choices=sorted(CELLS), default="fr3", help="which arm's cell")
    parser.add_argument("--quick", action="store_true", help="CI's short version")
    parser.add_argument(
        "--minutes", type=float, default=None, help="RL budget in cell time (full run: 30)"
    )
    parser.add_argument("--steps", type=int, default=None, help="RL env steps (default: a budget)")
    parser.add_argument("--demos", type=int, default=None)
    parser.add_argument("--label-episodes", type=int, default=None)
    parser.add_argument("--eval-episodes", type=int, default=None)
    parser.add_argument(
        "--intervention-penalty",
        type=float,
        default=None,
        help="up robot's --intervention-penalty (default: up's)",
    )
    parser.add_argument(
        "--operator-share",
        type=float,
        default=None,
        help="during RL, the operator corrects at most this share of an episode's periods "
        "(the cell's own default: 0.3; 0: it never corrects, and still presses success and "
        "answers the classifier's questions)",
    )
    parser.add_argument(
        "--operator-decay-steps",
        type=int,
        default=None,
        help="during RL, the operator's share falls linearly to none over this many control "
        "periods, as a person steps in less as the robot learns (the cell's default: never)",
    )
    parser.add_argument("--out", default=None, help="run folder (default runs/CELL-cell-<time>)")
    parser.add_argument(
        "--reuse",
        default=None,
        help="an earlier run folder whose demos and classifier to use: RL and eval only",
    )
    args = parser.parse_args()
    plan = dict(QUICK if args.quick else FULL)
    for key in plan:
        if getattr(args, key.replace("-", "_"), None) is not None:
            plan[key] = getattr(args, key)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(os.getpid() % 100 + 101))
    os.environ.setdefault("MUJOCO_GL", "egl")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(args.out or f"runs/{args.cell}-cell-{stamp}").absolute()
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    hardware = cell_file(out, args.cell)
    operator = {
        name: value
        for name, value in (
            ("episode_share", args.operator_share),
            ("decay_steps", args.operator_decay_steps),
        )
        if value is not None
    }
    rl_hardware = hardware
    if operator:  # a copy for the RL stage only (the demos need the hand)
        (out / "rl").mkdir(exist_ok=True)
        rl_hardware = cell_file(out / "rl", args.cell, operator)
    task = CELLS[args.cell][1]
    seed, cameras, size = str(args.seed), ["front", "wrist"], "32"
    records: list[dict] = []

    def emit(record: dict) -> None:
        records.append(record)
        print(json.dumps(record), flush=True)

    started = time.monotonic()

    def record_and_train_classifier() -> None:
        """Stages 1-4, in ``out``."""
        # 1-3: drivers up once; demos, then labels, with the operator switched between them
        t0 = time.monotonic()
        drivers = drivers_only(hardware, logs / "drivers.log")
        emit({"stage": "drivers", "seconds": round(time.monotonic() - t0, 1)})
        switch = OperatorSwitch()
        try:
            switch.set("demonstrate")
            record, text = run_stage(
                "demos",
                robot_rl(
                    "record-demos",
                    "--hardware",
                    str(hardware),
                    "--no-start-drivers",
                    "--task",
                    task,
                    "--cameras",
                    *cameras,
                    "--image-size",
                    size,
                    "--episodes",
                    str(plan["demos"]),
                    "--max-attempts",  # a person records until the demos are there
                    str(ATTEMPTS_PER_DEMO * plan["demos"]),
                    "--out",
                    str(out / "demos"),
                    "--seed",
                    seed,
                ),
                logs / "demos.log",
                timeout=3600,
            )
            kept = len(list((out / "demos").glob("*.mcap")))
            attempts = _figure(r"\((\d+) attempts", text, int)
            emit({**record, "kept": kept, "attempts": attempts})
            switch.set("label")
            record, text = run_stage(
                "labels",
                robot_rl(
                    "record-labels",
                    "--hardware",
                    str(hardware),
                    "--no-start-drivers",
                    "--task",
                    task,
                    "--camera",
                    "front",
                    "--image-size",
                    size,
                    "--episodes",
                    str(plan["label_episodes"]),
                    "--out",
                    str(out / "labels.npz"),
                    "--seed",
                    seed,
                ),
                logs / "labels.log",
                timeout=3600,
            )
            frames = _figure(r"(\d+) frames \(", text, int)
            positives = _figure(r"\((\d+) success", text, int)
            emit({**record, "frames": frames, "success_frames": positives})
            switch.set("correct")
        finally:
            switch.close()
            stop(drivers)
        # 4: the classifier on the cell's own frames
        record, text = run_stage(
            "classifier",
            robot_rl(
                "train-reward",
                "--labels",
                str(out / "labels.npz"),
                "--out",
                str(out / "classifier"),
                "--seed",
                seed,
                "--json-out",
            ),
            logs / "classifier.log",
            timeout=3600,
        )
        result = _last_json(text)
        emit({**record, **{k: result.get(k) for k in ("held_out", "threshold", "trunk")}})

    source = Path(args.reuse).absolute() if args.reuse else out
    if args.reuse:  # the demos, labels and classifier of an earlier run: RL and eval only
        emit({"stage": "reuse", "from": str(source)})
    else:
        record_and_train_classifier()
    # 5: RL with corrections
    steps = plan["steps"] if args.steps is None else args.steps
    minutes = args.minutes if args.minutes is not None or args.quick else 30.0
    budget = [] if minutes is None else ["--minutes", f"{minutes:g}"]  # cell time, not steps
    if args.intervention_penalty is not None:
        budget += ["--intervention-penalty", f"{args.intervention_penalty:g}"]
    rl_started = time.time()
    record, text = run_stage(
        "rl",
        robot_rl(
            "up",
            "robot",
            "--hardware",
            str(rl_hardware),
            "--task",
            task,
            "--cameras",
            *cameras,
            "--image-size",
            size,
            "--demo-path",
            str(source / "demos"),
            "--reward-classifier",
            str(source / "classifier"),
            "--relabel-false-positives",
            "--operator",
            "joy",
            "--total-steps",
            str(steps),
            *budget,
            "--eval-episodes",
            "0",
            "--seed",
            seed,
            "--run-dir",
            str(out / "up"),
        ),
        logs / "rl.log",
        timeout=3 * 3600,
    )
    report = json.loads((out / "up" / "report.json").read_text())
    emit(
        {
            **record,
            "steps": (report.get("learner") or {}).get("received"),
            "recipe": _figure(r"(recipe: [^\n]*)", text, str),
            "utd": report.get("utd"),
            "learner": report.get("learner"),
            "actor": _actor_summary(logs.parent / "up" / "logs" / "actor.log"),
        }
    )
    emit(rl_curve(out / "up" / "learner", rl_started))
    # 6: evaluation judged by the cell's ground truth
    record, text = run_stage(
        "eval",
        robot_rl(
            "eval",
            "--hardware",
            str(hardware),
            "--checkpoint",
            str(out / "up" / "learner" / "checkpoints"),
            "--episodes",
            str(plan["eval_episodes"]),
            "--judge",
            "cell-ground-truth",
            "--reward-classifier",
            str(source / "classifier"),
            "--operator",
            "joy",
            "--json-out",
            "--seed",
            seed,
        ),
        logs / "eval.log",
        timeout=3600,
    )
    emit({**record, "result": _last_json(text)})
    emit(
        {
            "stage": "workflow",
            "cell": args.cell,
            "seed": args.seed,
            "quick": args.quick,
            "wall_seconds": round(time.monotonic() - started, 1),
            "stage_seconds": {r["stage"]: r.get("seconds") for r in records},
            "run": str(out),
        }
    )


if __name__ == "__main__":
    main()
