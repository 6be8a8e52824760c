"""The robot-mode control loop in the simulated FR3 cell: staleness truncations, control period
and the age of what the arm is commanded on. JSON lines.

The cell's drivers come up from ``hardware/fr3_sim.yaml`` as ``robot-rl up robot --drivers-only``
brings them up (franky-sim behind libfranka, the Franka node, two 10 Hz cameras, the simulated
operator, each its own process); this process then runs pick_cube in robot mode over the ROS 2
backend from the front and wrist cameras, with random actions inside the task's box, exactly
the env the actor steps (no policy: its inference time is the learner benchmarks' business).
Per variant it reports:

- ``stale_share``: steps truncated because a reading was stale (issue 26 asks < 1%), with the
  reasons' first words counted;
- ``period_ms``: wall time between the starts of two steps (the task asks 100 ms), p50/p99;
- ``command_age_ms``: when a command is sent, the age of the slowest sensor sample it was
  computed from (``backend.reading_stamp``: the older camera frame), p50/p99.

Variants, measured in the same run: ``rates`` (the bounds the hardware file's sensor rates
give, each topic's history kept by time: what every robot-mode command now uses) and, with
``--baseline``, ``count8`` (the history cut at 8 samples per topic and a 0.1 s sync window,
the backend before this change).

    python benchmarks/cell_control_loop.py [--steps 300] [--baseline]
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from robot_rl.runtime.loop_timing import milliseconds

ROOT = Path(__file__).resolve().parents[1]


def _cell_file(folder: Path) -> Path:
    """hardware/fr3_sim.yaml on an address of this run's own (two cells may share a machine)."""
    text = (ROOT / "hardware" / "fr3_sim.yaml").read_text()
    address = f"127.13.{os.getpid() % 250 + 1}.1"
    path = folder / "fr3_sim.yaml"
    path.write_text(text.replace("127.13.0.1", address))
    return path


def run_variant(hardware, name: str, steps: int, seed: int) -> dict:
    import robot_rl.ros.sync as sync
    from robot_rl.envs.task import make_task
    from robot_rl.ros.config import RosBackendConfig
    from robot_rl.runtime.environments import make_ros_env
    from robot_rl.runtime.observation_mode import ObservationMode
    from robot_rl.stack import hardware_ros_config

    cameras = ("front", "wrist")
    mode = ObservationMode(cameras=cameras, image_size=32, robot_mode=True)
    task = make_task("pick_cube", **mode.task_options("pick_cube"))
    base = RosBackendConfig(use_sim_time=False, node_name=f"bench_{name}")
    ros = hardware_ros_config(base, hardware, cameras)
    saved = sync.MAX_HISTORY
    if name == "count8":
        sync.MAX_HISTORY = 8
        ros = RosBackendConfig(**{**ros.__dict__, "max_age": 0.3, "slop": 0.1})
    try:
        env = make_ros_env(task, ros)
    finally:
        sync.MAX_HISTORY = saved
    backend = env.backend
    ages: list[float] = []
    send = backend.send

    def timed_send(command):
        if backend.reading_stamp is not None:
            ages.append(time.time() - backend.reading_stamp)
        return send(command)

    backend.send = timed_send
    rng = np.random.default_rng(seed)
    starts, stale, reasons = [], 0, collections.Counter()
    try:
        env.reset(seed=seed)
        for _ in range(steps):
            starts.append(time.monotonic())
            action = rng.uniform(-0.5, 0.5, env.action_space.shape).astype(np.float32)
            _, _, terminated, truncated, info = env.step(action)
            if "stale" in info:
                stale += 1
                reasons[" ".join(info["stale"].split()[:3])] += 1
            elif terminated or truncated:
                env.reset()
                starts.append(np.nan)  # a reset is no control period
    finally:
        env.close()
    periods = [b - a for a, b in itertools.pairwise(starts) if np.isfinite(a + b)]
    return {
        "variant": name,
        "steps": steps,
        "max_age": ros.max_age,
        "slop": ros.slop,
        "stale_share": round(stale / steps, 4),
        "stale_reasons": dict(reasons.most_common(3)),
        "period_ms": milliseconds(periods),
        "command_age_ms": milliseconds(ages),
        "load_1min": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="control steps per variant")
    parser.add_argument("--baseline", action="store_true", help="also run the count8 variant")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(os.getpid() % 100 + 101))
    os.environ.setdefault("MUJOCO_GL", "egl")
    from rich.console import Console

    from robot_rl.hardware import load_hardware
    from robot_rl.runtime.driver_bringup import drivers_up

    console = Console(stderr=True)
    with tempfile.TemporaryDirectory() as folder:
        path = _cell_file(Path(folder))
        with drivers_up(path, Path(folder) / "logs", console) as bringup:
            hardware = load_hardware(path)
            variants = ["rates", *(["count8"] if args.baseline else [])]
            for name in variants:
                bringup.check()
                print(json.dumps(run_variant(hardware, name, args.steps, args.seed)), flush=True)


if __name__ == "__main__":
    main()
