"""The Franka driver node against franky-sim (the real libfranka protocol, MuJoCo behind it), both
as processes on a loopback address, measured from a ROS 2 client as the actor sees the arm.

    python benchmarks/drivers_franka.py [--quick] [--repeats 5]

Prints JSON lines (times in ms, distances in mm):
- ``state_rate_hz``: publication rate of each state topic while the arm holds;
- ``sim_real_time_factor``: simulated seconds per wall second of franky-sim over the run
  (below 1 on a loaded machine, and every time here stretches with it);
- ``command_to_motion_ms``: from publishing a 3 cm target to the TCP having moved 0.5 mm on
  ``ee_pose`` (DDS both ways, the node, franky's 1 kHz loop, the simulated robot), p50/max;
- ``tracking``: error between ``ee_pose`` and the newest commanded target while following a
  5 cm, 4 s sine streamed at 10 Hz (RMS, p95), and a 10 cm step: time to within 6 mm and the
  error once settled;
- ``watchdog_stop`` / ``estop_stop``: from the last command (watchdog) or the e-stop call to the
  arm standing still, and how far it went meanwhile; the e-stop bound is one 10 Hz period;
- ``cpu_percent_of_one_core``: the driver node and the franky-sim peer over the whole run,
  from /proc/<pid>/stat.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

CLK_TCK = os.sysconf("SC_CLK_TCK")
REACHED = 0.006
"""Within this (m) counts as there: the impedance controller settles a few mm off its target."""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def emit(**line) -> None:
    print(json.dumps(line), flush=True)


def moved_at(arm, since: float, origin: np.ndarray, distance: float, timeout: float) -> float:
    """Receive time of the first ee_pose after ``since`` at least ``distance`` from origin."""
    from robot_rl.sim.cells.franka_harness import wait_for

    def first():
        with arm._lock:
            hits = [
                t for t, p in arm.poses if t >= since and np.linalg.norm(p - origin) >= distance
            ]
        return hits[0] if hits else None

    return wait_for(first, 60.0, "the arm to move")


def still_from(arm, since: float, window: float = 0.2, tolerance: float = 0.001) -> float:
    """Start of the first ``window`` after ``since`` in which the TCP moved less than
    ``tolerance`` (waits for it)."""
    from robot_rl.sim.cells.franka_harness import wait_for

    def find():
        with arm._lock:
            samples = [(t, p) for t, p in arm.poses if t >= since]
        times = np.array([t for t, _ in samples])
        points = np.array([p for _, p in samples]).reshape(-1, 3)
        for i, start in enumerate(times):
            inside = (times >= start) & (times <= start + window)
            if times[-1] < start + window:
                return None
            if np.ptp(points[inside], axis=0).max() < tolerance:
                return float(times[i])
        return None

    return wait_for(find, 60.0, "the arm to stand still", interval=0.1)


def go_to(arm, pos) -> np.ndarray:
    arm.track(pos, tolerance=REACHED)
    arm.wait_still()
    return arm.position()


def measure_rates(arm, seconds: float) -> None:
    before = dict(arm.counts)
    time.sleep(seconds)
    rates = {
        name: round((arm.counts.get(name, 0) - before.get(name, 0)) / seconds, 1)
        for name in ("joint_states", "ee_pose", "ee_twist", "ee_wrench", "gripper/joint_states")
    }
    emit(figure="state_rate_hz", seconds=seconds, **rates)


def measure_latency(arm, repeats: int) -> None:
    latencies = []
    for i in range(repeats):
        start = go_to(arm, [0.5, 0.0, 0.4])
        target = start + np.array([0.03 if i % 2 == 0 else -0.03, 0.0, 0.0])
        sent = time.monotonic()
        arm.stream(target)
        moved = moved_at(arm, sent, start, 0.0005, 60.0)
        arm.stop_stream()
        latencies.append(1000 * (moved - sent))
    emit(
        figure="command_to_motion_ms",
        p50=round(float(np.median(latencies)), 1),
        max=round(float(np.max(latencies)), 1),
        repeats=repeats,
        threshold_mm=0.5,
    )


def measure_tracking(arm, seconds: float) -> None:
    from robot_rl.sim.cells.franka_harness import wait_for

    centre = go_to(arm, [0.5, 0.0, 0.4])
    commanded: list[tuple[float, np.ndarray]] = []
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        now = time.monotonic()
        target = centre + np.array([0.0, 0.05 * np.sin(2 * np.pi * (now - start) / 4.0), 0.0])
        arm.send_pose(target)
        commanded.append((now, target))
        time.sleep(0.1)
    with arm._lock:
        samples = [(t, p) for t, p in arm.poses if start + 1.0 <= t <= start + seconds]
    times = np.array([t for t, _ in commanded])
    errors = [
        np.linalg.norm(p - commanded[max(0, np.searchsorted(times, t) - 1)][1]) for t, p in samples
    ]
    errors_mm = 1000 * np.asarray(errors)
    step_start = go_to(arm, [0.5, -0.05, 0.4])
    goal = step_start + np.array([0.0, 0.1, 0.0])
    sent = time.monotonic()
    arm.stream(goal, hz=10.0)
    wait_for(lambda: np.linalg.norm(arm.position() - goal) < REACHED, 60.0, "the step")
    reached = time.monotonic()
    time.sleep(3.0)
    settled = 1000 * float(np.linalg.norm(arm.position() - goal))
    arm.stop_stream()
    emit(
        figure="tracking",
        sine_amplitude_mm=50,
        sine_period_s=4.0,
        command_hz=10,
        rms_mm=round(float(np.sqrt(np.mean(errors_mm**2))), 2),
        p95_mm=round(float(np.percentile(errors_mm, 95)), 2),
        step_mm=100,
        step_to_6mm_ms=round(1000 * (reached - sent)),
        step_settled_error_mm=round(settled, 2),
    )


def measure_stops(arm, watchdog_timeout: float) -> None:
    for kind in ("watchdog", "estop"):
        start = go_to(arm, [0.5, -0.12, 0.4])
        arm.stream(start + np.array([0.0, 0.24, 0.0]), hz=10.0)
        moved_at(arm, time.monotonic(), start, 0.03, 60.0)  # well under way
        if kind == "watchdog":
            trigger = arm.stop_stream()
        else:
            trigger = time.monotonic()
            arm.estop(True)
        at_trigger = arm.position()
        still = still_from(arm, trigger)
        went = 1000 * float(np.linalg.norm(arm.position() - at_trigger))
        if kind == "estop":
            arm.stop_stream()
            arm.estop(False)
        extra = (
            {"watchdog_timeout_ms": round(1000 * watchdog_timeout)}
            if kind == "watchdog"
            else {"bound_ms": 100, "within_bound": bool(still - trigger <= 0.1)}
        )
        emit(
            figure=f"{kind}_stop",
            stop_ms=round(1000 * (still - trigger)),
            travel_after_mm=round(went, 1),
            **extra,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, shorter windows")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    from robot_rl.sim.cells.franka_harness import ArmClient, Driver, Peer, loopback_host, wait_for

    repeats = 2 if args.quick else args.repeats
    watchdog_timeout = 0.3
    logs = Path(tempfile.mkdtemp(prefix="franka_bench_"))
    host = loopback_host(2)
    peer = Peer(host, logs / "peer.log")
    peer.start()
    driver = Driver(
        logs / "driver.log",
        robot_ip=host,
        watchdog_timeout=watchdog_timeout,
        command_max_age=1.0,
        workspace_min=[0.3, -0.2, 0.2],
        workspace_max=[0.7, 0.2, 0.6],
    )
    arm = ArmClient()
    try:
        wait_for(
            lambda: arm.driver_status().get("motion_enabled") == "True",
            120.0,
            "the driver to become active",
        )
        cpu_start = {"driver": cpu_seconds(driver.popen.pid), "peer": cpu_seconds(peer.proc.pid)}
        wall_start, sim_start = time.monotonic(), peer.status()["sim_time"]
        measure_rates(arm, 3.0 if args.quick else 10.0)
        measure_latency(arm, repeats)
        measure_tracking(arm, 8.0)
        measure_stops(arm, watchdog_timeout)
        elapsed = time.monotonic() - wall_start
        emit(
            figure="sim_real_time_factor",
            seconds=round(elapsed, 1),
            value=round((peer.status()["sim_time"] - sim_start) / elapsed, 3),
        )
        emit(
            figure="cpu_percent_of_one_core",
            seconds=round(elapsed, 1),
            driver=round(100 * (cpu_seconds(driver.popen.pid) - cpu_start["driver"]) / elapsed, 1),
            peer=round(100 * (cpu_seconds(peer.proc.pid) - cpu_start["peer"]) / elapsed, 1),
            cores=os.cpu_count(),
            load_average_1min=round(os.getloadavg()[0], 2),
        )
    finally:
        arm.close()
        driver.stop()
        peer.kill()


if __name__ == "__main__":
    main()
