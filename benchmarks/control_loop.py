"""The actor's control loop at its rate in the simulated FR3 cell, the learner training beside
it. JSON lines.

Per variant, ``robot-rl up robot --hardware H --task pick_cube --cameras front wrist --operator
joy --minutes M`` runs the whole robot stack on this machine (franky-sim behind the Franka node,
two camera processes publishing ``--camera-size`` px frames at 10 Hz, the simulated operator,
the actor, and the learner in its own process at up's lower priority), and the actor's own
figures are read from its closing line (``control_loop``), the learner's from ``report.json``:

- ``period_ms`` (p50, p99, max) and ``late_share``: steps more than 1.1x the task's period
  apart (resets left out);
- ``frame_to_command_ms`` (p50, p99, max): a policy command's stamp less the newest camera
  frame's stamp in the reading it was computed from;
- ``frame_age_at_tick_ms``: the same frame's age when the control tick came (cameras, rendering
  and transport: what comes before the actor's own work);
- ``inference_ms``: the policy's forward pass (once the learner's weights are there; the
  learner starts after 200 transitions).

Variants: ``conv`` (the CPU pixel recipe: the conv trunk on 32 px) and ``resnet10`` (a frozen
ResNet-10 on 64 px, its weights as initialised: the cost of inference, not a trained policy).

    python benchmarks/control_loop.py [--minutes 3] [--variants conv,resnet10] [--camera-size 128]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from robot_rl.runtime.stack_progress import actor_summary

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {
    "conv": ["--image-size", "32"],
    "resnet10": ["--image-size", "64", "--agent.encoder", "resnet10", "--agent.encoder-frozen"],
}


def cell_file(folder: Path, size: int) -> Path:
    """hardware/fr3_sim.yaml on an address of this run's own, its cameras at ``size`` px."""
    text = (ROOT / "hardware" / "fr3_sim.yaml").read_text()
    text = text.replace("127.13.0.1", f"127.13.{os.getpid() % 250 + 1}.1")
    text = text.replace("width: 64", f"width: {size}").replace("height: 64", f"height: {size}")
    path = folder / "fr3_sim.yaml"
    path.write_text(text)
    return path


def run_variant(name: str, hardware: Path, folder: Path, minutes: float, seed: int) -> dict:
    run_dir = folder / name
    command = [
        sys.executable, "-m", "robot_rl.cli", "up", "robot", "--hardware", str(hardware),
        "--task", "pick_cube", "--cameras", "front", "wrist", "--operator", "joy",
        "--minutes", str(minutes), "--eval-episodes", "0", "--seed", str(seed),
        "--start-steps", "200", "--run-dir", str(run_dir), *VARIANTS[name],
    ]  # fmt: skip
    started = time.monotonic()
    loads = []
    with open(folder / f"{name}.log", "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        while process.poll() is None:
            loads.append(os.getloadavg()[0])
            time.sleep(10.0)
    record = {
        "variant": name,
        "command": " ".join(command[3:]),
        "exit": process.returncode,
        "wall_s": round(time.monotonic() - started, 1),
        "load_1min": [round(min(loads), 2), round(max(loads), 2)] if loads else None,
        "cpus": os.cpu_count(),
    }
    actor = actor_summary(run_dir / "logs" / "actor.log")
    report = run_dir / "report.json"
    learner = json.loads(report.read_text()).get("learner") or {} if report.is_file() else {}
    if actor is None:
        record["error"] = f"no actor summary; see {folder / f'{name}.log'}"
        return record
    record.update(
        steps=actor.get("steps"),
        learner_updates=learner.get("updates"),
        control_loop=actor.get("control_loop"),
    )
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="actor time per variant")
    parser.add_argument("--variants", default="conv,resnet10")
    parser.add_argument("--camera-size", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="one minute, the conv variant")
    parser.add_argument("--out", default=None, help="also append the lines to this file")
    parser.add_argument("--work", default=None, help="keep the runs here (default: a tmp dir)")
    args = parser.parse_args()
    variants = ["conv"] if args.quick else args.variants.split(",")
    minutes = 1.0 if args.quick else args.minutes
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variant(s) {unknown}; choose from {sorted(VARIANTS)}")
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(os.getpid() % 100 + 101))
    os.environ.setdefault("MUJOCO_GL", "egl")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.work or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        hardware = cell_file(folder, args.camera_size)
        for name in variants:
            record = {"camera_px": args.camera_size, "minutes": minutes}
            record.update(run_variant(name, hardware, folder, minutes, args.seed))
            line = json.dumps(record)
            print(line, flush=True)
            if args.out:
                with open(args.out, "a") as out:
                    out.write(line + "\n")


if __name__ == "__main__":
    main()
