"""The ROS 2 path of one control step, on the twin nodes as separate processes.

    python benchmarks/ros.py [--quick] [--seconds 30] [--image-size 128]

Starts the arm twin node (real time, speedup 1) and two camera nodes (30 Hz), drives pick_cube
through RobotEnv + the ROS backend at 10 Hz with hold actions, and prints JSON lines:
- ``camera_to_observation_ms``: age of the oldest sensor sample (a camera frame) in each
  observation when ``read`` returns it, p50/p99 (includes waiting for the control tick);
- ``control_loop``: achieved frequency and the jitter of the step period (std, p99 |error|);
- ``node_cpu``: CPU use of each node process (% of one core) from /proc/<pid>/stat.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

CAMERAS = ("front", "wrist")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (psutil is not a dependency)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_nodes(size: int) -> dict[str, subprocess.Popen]:
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    env.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 101))
    commands = {"arm": ["arm_twin_node", "/arm", "-p", "speedup:=1.0"]}
    for camera in CAMERAS:
        commands[f"{camera}_cam"] = [
            "camera_node",
            f"/{camera}_cam",
            "-p",
            f"camera:={camera}",
            "-p",
            f"width:={size}",
            "-p",
            f"height:={size}",
            "-p",
            "rate:=30.0",
        ]
    procs = {}
    for name, (module, namespace, *params) in commands.items():
        procs[name] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                f"robot_rl.sim.nodes.{module}",
                "--ros-args",
                "-r",
                f"__ns:={namespace}",
                *params,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    return procs


def stop_nodes(procs: dict[str, subprocess.Popen]) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs.values():
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--image-size", type=int, default=128)
    parser.add_argument("--quick", action="store_true", help="10 s of control")
    args = parser.parse_args()
    seconds = 10.0 if args.quick else args.seconds
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

    from robot_rl.envs.robot_env import RobotEnv
    from robot_rl.envs.task import make_task
    from robot_rl.ros.backend import RosArmBackend, RosBackendConfig

    procs = start_nodes(args.image_size)
    env = None
    try:
        task = make_task("pick_cube", cameras=CAMERAS, image_size=args.image_size)
        backend = RosArmBackend(task, RosBackendConfig(max_age=0.5, slop=0.2))
        env = RobotEnv(task, backend)
        backend.wait_until_ready(timeout=60)
        env.reset(seed=0)
        cpu_start = {name: cpu_seconds(p.pid) for name, p in procs.items()}
        wall_start = time.monotonic()
        ages, returns, stale = [], [], 0
        hold = np.zeros(4, np.float32)
        while time.monotonic() - wall_start < seconds:
            _, _, _, _, info = env.step(hold)
            returns.append(time.monotonic())
            if "stale" in info:
                stale += 1
            else:
                ages.append(backend.now() - backend.reading_stamp)
        elapsed = time.monotonic() - wall_start
        cpu = {
            name: round(100 * (cpu_seconds(p.pid) - cpu_start[name]) / elapsed, 1)
            for name, p in procs.items()
        }
        periods = np.diff(returns)
        ages_ms = 1000 * np.asarray(ages)
        # ages are read on /clock, which ticks at the physics node's 50 Hz: 20 ms resolution
        base = {
            "cameras": len(CAMERAS),
            "image_size": args.image_size,
            "camera_hz": 30.0,
            "clock_resolution_ms": 20.0,
        }
        lines = [
            {
                "figure": "camera_to_observation_ms",
                **base,
                "p50": round(float(np.percentile(ages_ms, 50)), 2),
                "p99": round(float(np.percentile(ages_ms, 99)), 2),
                "samples": len(ages),
            },
            {
                "figure": "control_loop",
                "target_hz": task.control_hz,
                "achieved_hz": round(float(1 / periods.mean()), 3),
                "period_std_ms": round(float(1000 * periods.std()), 2),
                "period_p99_error_ms": round(
                    float(1000 * np.percentile(np.abs(periods - 1 / task.control_hz), 99)), 2
                ),
                "steps": len(returns),
                "stale_steps": stale,
            },
            {
                "figure": "node_cpu_percent_of_one_core",
                **cpu,
                "total": round(sum(cpu.values()), 1),
                "seconds": round(elapsed, 1),
            },
        ]
        for line in lines:
            print(json.dumps(line), flush=True)
    finally:
        if env is not None:
            env.close()
        stop_nodes(procs)


if __name__ == "__main__":
    main()
