"""The simulated FR3 cell (``hardware/fr3_sim.yaml``) on this machine: its world, the Franka node
and both cameras as processes from the hardware file, measured from a ROS 2 client.

    python benchmarks/fr3_sim_cell.py [--seconds 30]

Prints JSON lines:
- ``realtime_factor``: franky-sim's simulated seconds per wall second (the world's diagnostics),
  idle and while the arm follows targets streamed at 10 Hz; below 1, the robot's time runs
  slower than the wall clock: the arm covers less distance per actor step than on a robot;
- ``camera_hz``: frames per wall second on each camera's ``image_raw``, and the frame age at
  arrival (wall clock now minus the stamp of the world state it shows), p50/p95 ms;
- ``cpu_percent_of_one_core``: each process over the measured window, from /proc/<pid>/stat.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def tree_cpu(pid: int) -> float:
    import psutil

    total = 0.0
    for process in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            total += cpu_seconds(process.pid)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each window")
    args = parser.parse_args()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("MUJOCO_GL", "egl")
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import Image

    from robot_rl.ros.convert import from_stamp
    from robot_rl.sim.cells.franka_harness import ArmClient, cell_hardware, loopback_host
    from robot_rl.sim.cells.processes import CellProcesses, wait_for

    logs = Path(tempfile.mkdtemp(prefix="fr3_cell_bench"))
    processes = CellProcesses(
        cell_hardware(loopback_host(37), logs),
        logs,
        only=("fr3_cell", "franka_driver", "front_camera", "wrist_camera"),
    )
    arm = ArmClient("/arm")
    world: dict[str, str] = {}
    frames: dict[str, list[tuple[float, float]]] = {"front": [], "wrist": []}
    lock = threading.Lock()

    def on_diagnostics(msg) -> None:
        for status in msg.status:
            if status.name == "/sim/fr3_cell":
                world.update({kv.key: kv.value for kv in status.values})

    def keeper(camera: str):
        def keep(msg) -> None:
            age = time.time() - from_stamp(msg.header.stamp)
            with lock:
                frames[camera].append((time.monotonic(), age))

        return keep

    from robot_rl.ros.qos import sensor_qos

    arm.node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 50)
    for camera in frames:
        arm.node.create_subscription(
            Image, f"/{camera}_cam/image_raw", keeper(camera), sensor_qos()
        )
    try:
        wait_for(
            lambda: arm.driver_status("/arm/franka_driver").get("motion_enabled") == "True",
            300.0,
            "the Franka node to become active",
        )
        pids = {name: proc.pid for name, proc in processes.started.items()}

        def window(label: str, moving: bool) -> None:
            steps0, cpu0 = int(world.get("steps", 0)), {n: tree_cpu(p) for n, p in pids.items()}
            start = time.monotonic()
            if moving:
                t = 0.0
                while time.monotonic() - start < args.seconds:
                    t = time.monotonic() - start
                    arm.send_pose([0.5 + 0.08 * np.sin(t), 0.1 * np.cos(t), 0.2])
                    time.sleep(0.1)
            else:
                time.sleep(args.seconds)
            elapsed = time.monotonic() - start
            steps = int(world.get("steps", 0)) - steps0
            print(
                json.dumps(
                    {
                        "figure": "realtime_factor",
                        "window": label,
                        "value": round(steps * 1e-3 / elapsed, 3),
                    }
                ),
                flush=True,
            )
            cpu = {n: round(100 * (tree_cpu(p) - cpu0[n]) / elapsed, 1) for n, p in pids.items()}
            print(
                json.dumps({"figure": "cpu_percent_of_one_core", "window": label, **cpu}),
                flush=True,
            )
            with lock:
                for camera, seen in frames.items():
                    recent = [age for t, age in seen if t >= start]
                    ages = np.array(recent) * 1e3 if recent else np.array([np.nan])
                    print(
                        json.dumps(
                            {
                                "figure": "camera_hz",
                                "window": label,
                                "camera": camera,
                                "hz": round(len(recent) / elapsed, 2),
                                "age_ms_p50": round(float(np.median(ages)), 1),
                                "age_ms_p95": round(float(np.percentile(ages, 95)), 1),
                            }
                        ),
                        flush=True,
                    )

        window("idle", moving=False)
        window("following", moving=True)
    finally:
        arm.close()
        processes.stop()


if __name__ == "__main__":
    main()
