"""FastRLAP's workflow in the simulated car cell, command by command as a user types them: record a
lap with the gamepad, learn to lap from the forward camera, evaluate. JSON lines.

The cell (``hardware/car_sim.yaml``: the car twin behind a VESC protocol peer on a pty, the real
VESC node, a 10 Hz forward camera, the simulated person at the gamepad) stands in for the car.
Each stage is the robot-rl command a car owner runs, as a subprocess of its own, with the drivers
brought up by the command itself:

1. ``robot-rl record-lap --hardware car_drive.yaml --out lap``: the person drives one slow lap
   (the operator's ``mode: drive``; a copy of the hardware file with that mode, as a person
   decides what they are doing before they start); its odometry becomes the checkpoints;
2. ``robot-rl record-demos --hardware car_demo.yaml --task car_lap --operator joy --episodes
   N``: the person drives ``--demos`` demonstrations with the gamepad (``mode: demonstrate``:
   about 20 s of clean driving each, kept with the success button), HIL-SERL's demo buffer
   (robot mode has no scripted ones; ``--demos 0`` leaves this stage out: FastRLAP's own
   workflow has none);
3. ``robot-rl up robot --hardware car_watch.yaml --task car_lap --cameras front --checkpoints
   lap/checkpoints.json [--demo-path demos] ...``: autonomous practice with crash/stuck
   detection and self-recovery (the person watches, hands off), the learner on this machine;
4. ``robot-rl eval --hardware car_watch.yaml --checkpoint run/learner/checkpoints``: the final
   policy on ``--eval-episodes`` episodes of 30 s.

This process is the evaluator, not the robot: it watches the cell's ground truth
(``/sim/car/state``, ``/sim/collision``; no robot-mode process reads them) to time laps by the
car's true progress along the track's centreline and to see wall contacts, per evaluation
episode (episode boundaries from eval's own lines). Figures: the recorded lap's time (record-lap's
own count), the learned policy's lap time (the task's own count on the car's odometry, eval's
summary: eval ends an episode at its first lap; beside it, from the truth, the lap time at each
episode's true pace along the centreline, and full true turns where an episode has any), its
crash rate (episodes the task ended by its crash/stuck detection) and
contact rate (episodes with a wall contact: ground truth), the wall time of each stage, and of
training: the actor's control rate, the learner's updates/s and ratio, stale truncations, and the
true laps completed during practice against wall time (recoveries included).

The agent is the one ``benchmarks/car_pixels.py`` learned car_lap with in the twin (RLPD with 10
critics, 2 of them in the target, UTD 2, batch 64, 32 px, a frozen random conv trunk through the
embedding cache, 500 random steps), its 5 scripted demonstrations replaced by the operator's.

    python benchmarks/car_cell_workflow.py --quick                 # a few hundred steps
    nice -n 5 python benchmarks/car_cell_workflow.py --steps 6000 --eval-episodes 10
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from robot_rl.runtime.stack_progress import actor_summary

ROOT = Path(__file__).resolve().parents[1]
HARDWARE = ROOT / "hardware" / "car_sim.yaml"
DEFAULT_PORT = "/tmp/robot_rl_car_sim/vesc"
RESULTS = ROOT / "benchmarks" / "results" / "car_cell_workflow" / "results.jsonl"
AGENT = [
    "--image-size", "32", "--batch-size", "64", "--utd-ratio", "2",
    "--agent.num-critics", "10", "--agent.critic-subsample", "2",
    "--agent.critic-actor-ratio", "1", "--agent.init-temperature", "0.01",
    "--agent.encoder-frozen",
]  # fmt: skip
"""car_pixels.py's agent (its ``train_config``) as ``up`` options."""


def cell_files(directory: Path) -> tuple[Path, Path]:
    """The cell's hardware file with its VESC pty in ``directory`` (runs never share a port), the
    operator driving (record-lap) and watching (up, eval)."""
    text = HARDWARE.read_text().replace(DEFAULT_PORT, str(directory / "vesc"))
    if "mode: watch" not in text:
        raise SystemExit(f"{HARDWARE}: its simulated_human has no 'mode: watch' line")
    drive, watch = directory / "car_drive.yaml", directory / "car_watch.yaml"
    demo = directory / "car_demo.yaml"
    drive.write_text(text.replace("mode: watch", "mode: drive"))
    demo.write_text(text.replace("mode: watch", "mode: demonstrate"))
    watch.write_text(text)
    return drive, demo, watch


class Truth:
    """The cell's ground truth, for evaluation only: the car's progress along the track's
    centreline (a full turn is a lap, timed by the world's wall stamps) and wall contacts, in
    segments (an evaluation episode) or over a whole stage."""

    def __init__(self):
        from std_msgs.msg import Bool, Float64MultiArray

        from robot_rl.ros.background_node import BackgroundNode
        from robot_rl.ros.qos import sensor_qos, state_qos
        from robot_rl.sim.car_track import DEFAULT_TRACK, centreline

        self.line = centreline(DEFAULT_TRACK)
        self._lock = threading.Lock()
        self._index: int | None = None
        self.progress = 0
        self.lap_started: float | None = None
        self.laps: list[tuple[float, float]] = []  # (wall stamp at the lap's end, lap time s)
        self.contacts = 0
        self._touching = False
        self.stamp = 0.0
        self.started: float | None = None
        self.node = BackgroundNode(
            "car_workflow_evaluator",
            [
                (Float64MultiArray, "/sim/car/state", self._on_state, state_qos()),
                (Bool, "/sim/collision", self._on_collision, sensor_qos()),
            ],
        )

    def _on_state(self, msg) -> None:
        data = np.asarray(msg.data, np.float64)
        if data.size < 3:
            return
        stamp, xy = float(data[0]), data[1:3]
        index = self.line.nearest(xy)
        with self._lock:
            self.stamp = stamp
            if self._index is None:
                self._index, self.lap_started, self.started = index, stamp, stamp
                return
            n = len(self.line)
            self.progress += (index - self._index + n // 2) % n - n // 2  # signed, wrap-aware
            self._index = index
            if self.progress >= n:  # one more full turn of the track
                self.progress -= n
                self.laps.append((stamp, stamp - self.lap_started))
                self.lap_started = stamp

    def _on_collision(self, msg) -> None:
        with self._lock:
            touching = bool(msg.data)
            self.contacts += int(touching and not self._touching)
            self._touching = touching

    def restart(self) -> None:
        """A new segment: progress and the lap clock start here."""
        with self._lock:
            self._index, self.progress, self.started = None, 0, None
            self.laps, self.contacts = [], 0

    def segment(self) -> dict:
        """The segment's laps, wall contacts, and its progress along the centreline (m, laps
        included) in its seconds: eval ends an episode at the task's lap, which counts from
        the first checkpoint ahead of the car, a little short of a full turn from where the
        truth starts; ``pace_lap_s`` is the lap time at the segment's mean pace."""
        with self._lock:
            metres = (self.progress + len(self.line) * len(self.laps)) * self.line.spacing
            seconds = self.stamp - self.started if self.started is not None else 0.0
            length = len(self.line) * self.line.spacing
            return {
                "lap_times": [round(t, 2) for _, t in self.laps],
                "contacts": self.contacts,
                "progress_m": round(metres, 2),
                "seconds": round(seconds, 2),
                "pace_lap_s": round(seconds * length / metres, 2) if metres > 1.0 else None,
            }

    def close(self) -> None:
        self.node.close()


def run_stage(name: str, command: list[str], log: Path, timeout: float, on_line=None) -> dict:
    """``command`` to its end (at most ``timeout`` s: then SIGINT, as Ctrl-C), its output into
    ``log`` and, line by line, to ``on_line``; its exit code, wall seconds and lines."""
    print(f"[{name}] $ {' '.join(command)}", file=sys.stderr, flush=True)
    started = time.monotonic()
    lines: list[str] = []
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    with open(log, "w") as out:
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        timer = threading.Timer(timeout, lambda: proc.send_signal(2))
        timer.start()
        try:
            for line in proc.stdout:
                out.write(line)
                out.flush()
                lines.append(line.rstrip("\n"))
                if on_line is not None:
                    on_line(line)
            code = proc.wait()
        finally:
            timer.cancel()
    wall = time.monotonic() - started
    print(f"[{name}] exit {code} after {wall:.0f} s (log {log})", file=sys.stderr, flush=True)
    return {"code": code, "wall_s": round(wall, 1), "lines": lines}


def emit(record: dict, results: Path) -> None:
    line = json.dumps(record)
    print(line, flush=True)
    results.parent.mkdir(parents=True, exist_ok=True)
    with open(results, "a") as f:
        f.write(line + "\n")


def last_match(pattern: str, lines: list[str]):
    for line in reversed(lines):
        match = re.search(pattern, line)
        if match:
            return match
    return None


def record_lap(args, drive: Path, out: Path, truth: Truth) -> dict:
    truth.restart()
    stage = run_stage(
        "record-lap",
        ["robot-rl", "record-lap", "--hardware", str(drive), "--out", str(out / "lap")],
        out / "record_lap.log",
        args.lap_timeout,
    )
    closed = last_match(r"lap closed: ([\d.]+) m in ([\d.]+) s", stage["lines"])
    figures = {
        "stage": "record-lap",
        "code": stage["code"],
        "wall_s": stage["wall_s"],
        "checkpoints": str(out / "lap" / "checkpoints.json"),
        "lap_length_m": float(closed.group(1)) if closed else None,
        "lap_time_s": float(closed.group(2)) if closed else None,
        "wall_contacts": truth.segment()["contacts"],  # a clean lap has none
    }
    if (out / "lap" / "checkpoints.json").is_file():
        figures["n_checkpoints"] = len(
            json.loads((out / "lap" / "checkpoints.json").read_text())["points"]
        )
    return figures


def record_demos(args, demo: Path, out: Path) -> dict:
    command = [
        "robot-rl", "record-demos", "--hardware", str(demo), "--task", "car_lap",
        "--cameras", "front", "--image-size", "32", "--operator", "joy",
        "--checkpoints", str(out / "lap" / "checkpoints.json"),
        "--episodes", str(args.demos), "--out", str(out / "demos"),
    ]  # fmt: skip
    stage = run_stage("record-demos", command, out / "record_demos.log", args.demo_timeout)
    done = last_match(r"recorded (\d+) successful episodes \((\d+) attempts, (\d+) steps\)",
                      stage["lines"])  # fmt: skip
    return {
        "stage": "record-demos",
        "code": stage["code"],
        "wall_s": stage["wall_s"],
        "kept": int(done.group(1)) if done else len(list((out / "demos").glob("*.mcap"))),
        "attempts": int(done.group(2)) if done else None,
        "demo_steps": int(done.group(3)) if done else None,
    }


def train(args, watch: Path, out: Path, truth: Truth) -> dict:
    truth.restart()
    started = time.time()
    command = [
        "robot-rl", "up", "robot", "--hardware", str(watch), "--task", "car_lap",
        "--cameras", "front", "--checkpoints", str(out / "lap" / "checkpoints.json"),
        "--total-steps", str(args.steps), "--start-steps", str(args.start_steps),
        "--seed", str(args.seed), "--run-dir", str(out / "run"), "--eval-episodes", "0",
        "--log-every", "30", *AGENT,
        *(["--demo-path", str(out / "demos")] if args.demos else []),
    ]  # fmt: skip
    stage = run_stage("up robot", command, out / "up.log", args.up_timeout)
    lines = stage["lines"]
    figures = {"stage": "up robot", "code": stage["code"], "wall_s": stage["wall_s"]}
    figures["recipe_line"] = next((x for x in lines if "recipe" in x.lower()), None)
    progress = last_match(r"env steps (\d+) .*learner ([\d.]+) updates/s \((\d+) in all\)"
                          r".*actor ([\d.-]+) Hz", lines)  # fmt: skip
    if progress:
        figures.update(
            env_steps=int(progress.group(1)),
            learner_updates_per_s_last=float(progress.group(2)),
            updates=int(progress.group(3)),
            actor_hz_last=progress.group(4),
        )
    stale = last_match(r"stale steps (\d+)", lines)
    figures["stale_steps"] = int(stale.group(1)) if stale else 0
    report_file = out / "run" / "report.json"
    if report_file.is_file():
        report = json.loads(report_file.read_text())
        figures["utd"] = report.get("utd")
        figures["train_seconds"] = round(report.get("train_seconds", 0.0), 1)
        learner = report.get("learner") or {}
        figures["learner"] = {
            k: v for k, v in learner.items() if isinstance(v, (int, float, str)) and k != "config"
        }
    actor = actor_summary(out / "run" / "logs" / "actor.log")
    if actor is not None:
        figures["actor"] = actor
        figures["control_period_ms"] = {
            "p50": round(actor.get("control_period_ms_p50", 0.0), 1),
            "p99": round(actor.get("control_period_ms_p99", 0.0), 1),
        }
    learner = figures.get("learner") or {}
    if learner.get("update_seconds"):
        # while it updates (compiling and waiting for the first transitions left out)
        figures["learner_updates_per_s"] = round(learner["updates"] / learner["update_seconds"], 2)
    if figures.get("train_seconds") and figures.get("env_steps"):
        # env steps per wall second over the whole practice, resets and recoveries included
        figures["env_steps_per_s"] = round(figures["env_steps"] / figures["train_seconds"], 2)
    practice = truth.segment()
    figures["true_practice_laps"] = len(practice["lap_times"])
    figures["true_practice_lap_times"] = practice["lap_times"]
    figures["true_practice_lap_minutes"] = [round((s - started) / 60, 2) for s, _ in truth.laps]
    figures["wall_contacts"] = practice["contacts"]
    return figures


def evaluate(args, watch: Path, out: Path, truth: Truth) -> dict:
    episodes: list[dict] = []
    running = re.compile(r"episode (\d+)/\d+: running")
    ended = re.compile(r"episode (\d+)/\d+: (success|failure|no success) after (\d+) steps")

    def on_line(line: str) -> None:
        if running.search(line):
            truth.restart()
        elif match := ended.search(line):
            episodes.append(
                {"outcome": match.group(2), "steps": int(match.group(3)), **truth.segment()}
            )

    report = out / "eval.jsonl"
    command = [
        "robot-rl", "eval", "--hardware", str(watch),
        "--checkpoint", str(out / "run" / "learner" / "checkpoints"),
        "--episodes", str(args.eval_episodes), "--seed", str(10_000 + args.seed),
        "--report", str(report),
    ]  # fmt: skip
    stage = run_stage("eval", command, out / "eval.log", args.eval_timeout, on_line)
    summary = None
    if report.is_file():
        for line in report.read_text().splitlines():
            record = json.loads(line)
            if record.get("kind") == "summary":
                summary = record
    laps = [t for e in episodes for t in e["lap_times"]]
    n = max(len(episodes), 1)
    # episodes that covered most of a lap (eval ends one at the task's lap): their pace
    paced = [e["pace_lap_s"] for e in episodes if e["pace_lap_s"] and e["progress_m"] > 20.0]
    final = (summary or {}).get("final_info") or {}
    return {
        "stage": "eval",
        "code": stage["code"],
        "wall_s": stage["wall_s"],
        "episodes": len(episodes),
        "true_laps": len(laps),
        "lap_time_s": round(float(np.mean(laps)), 2) if laps else None,
        "best_lap_time_s": round(float(np.min(laps)), 2) if laps else None,
        "pace_lap_time_s": round(float(np.mean(paced)), 2) if paced else None,
        "task_laps_per_episode": final.get("laps"),
        "task_lap_time_s": final.get("lap_time"),
        "lap_rate": summary.get("success_rate") if summary else None,
        "crash_rate": sum(e["outcome"] == "failure" for e in episodes) / n,
        "contact_rate": sum(e["contacts"] > 0 for e in episodes) / n,
        "per_episode": episodes,
        "task_summary": {
            k: summary.get(k)
            for k in ("success_rate", "failure_rate", "final_info", "success_judged_by", "step")
        }
        if summary
        else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few hundred steps, 1 episode")
    parser.add_argument("--steps", type=int, default=6000, help="env steps of practice")
    parser.add_argument("--start-steps", type=int, default=500)
    parser.add_argument("--demos", type=int, default=5, help="operator demonstrations (0: none)")
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="default runs/car_cell_workflow-<time>")
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--lap-timeout", type=float, default=400.0)
    parser.add_argument("--demo-timeout", type=float, default=900.0)
    parser.add_argument("--up-timeout", type=float, default=None, help="default: from --steps")
    parser.add_argument("--eval-timeout", type=float, default=None)
    args = parser.parse_args()
    if args.quick:
        args.steps, args.start_steps, args.eval_episodes = 300, 100, 1
        args.demos = min(args.demos, 1)
    args.up_timeout = args.up_timeout or 900 + args.steps * 0.4
    args.eval_timeout = args.eval_timeout or 300 + args.eval_episodes * 90
    out = Path(args.out or f"runs/car_cell_workflow-{time.strftime('%Y%m%d-%H%M%S')}").absolute()
    out.mkdir(parents=True, exist_ok=True)
    # this workflow's graph is its own (a machine shared with other cells and tests)
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(110, 200)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    drive, demo, watch = cell_files(out)
    results = Path(args.results)
    run = {
        "run": out.name,
        "seed": args.seed,
        "quick": args.quick,
        "demos": args.demos,
        "load_1min": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }
    truth = Truth()
    started = time.monotonic()
    try:
        lap = record_lap(args, drive, out, truth)
        emit({**run, **lap}, results)
        if lap["code"] != 0:
            raise SystemExit(f"record-lap failed: {out / 'record_lap.log'}")
        demos = {"wall_s": 0.0}
        if args.demos:
            demos = record_demos(args, demo, out)
            emit({**run, **demos}, results)
            if demos["code"] != 0 or not demos["kept"]:
                raise SystemExit(f"record-demos failed: {out / 'record_demos.log'}")
        trained = train(args, watch, out, truth)
        emit({**run, "steps": args.steps, **trained}, results)
        if trained["code"] != 0 or not (out / "run" / "learner" / "checkpoints").is_dir():
            raise SystemExit(f"up robot failed: {out / 'up.log'}")
        evaluated = evaluate(args, watch, out, truth)
        emit({**run, "steps": args.steps, **evaluated}, results)
        recorded = lap["lap_time_s"]
        learned = evaluated["task_lap_time_s"] or evaluated["pace_lap_time_s"]
        emit(
            {
                **run,
                "stage": "summary",
                "steps": args.steps,
                "recorded_lap_s": recorded,
                "learned_lap_s": learned,
                "learned_pace_lap_s": evaluated["pace_lap_time_s"],
                "learned_true_lap_s": evaluated["lap_time_s"],
                "speedup_vs_recorded": round(recorded / learned, 2)
                if recorded and learned
                else None,
                "lap_rate": evaluated["lap_rate"],
                "crash_rate": evaluated["crash_rate"],
                "contact_rate": evaluated["contact_rate"],
                "wall_s": {
                    "record_lap": lap["wall_s"],
                    "record_demos": demos["wall_s"],
                    "up_robot": trained["wall_s"],
                    "eval": evaluated["wall_s"],
                    "total": round(time.monotonic() - started, 1),
                },
                "load_1min_end": round(os.getloadavg()[0], 2),
            },
            results,
        )
    finally:
        truth.close()


if __name__ == "__main__":
    main()
