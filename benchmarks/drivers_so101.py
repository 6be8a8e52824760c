"""The SO-101 driver's bus side against the servo bus peer on a pty with the arm in MuJoCo behind
it: one sync read of the six servos' feedback (round trip), an inverse-kinematics solve for a
small move (the driver's per-cycle work), the bus thread's cycle rate against ``state_hz``, and
how long a 2 cm pose step takes to reach 3 mm. One JSON line per figure.

    python benchmarks/drivers_so101.py [--seconds 5] [--state-hz 50]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from robot_rl.drivers.arms import so101_calibration as calibration
from robot_rl.drivers.arms import so101_kinematics as kin
from robot_rl.drivers.arms.configs import So101Config
from robot_rl.drivers.arms.feetech_bus import FeetechBus
from robot_rl.drivers.arms.so101_link import LinkSettings, So101Link
from robot_rl.runtime.loop_timing import milliseconds
from robot_rl.sim.cells.feetech_peer import FeetechPeer
from robot_rl.sim.so101_arm import MujocoServoArm

START = {"shoulder_lift": -0.6, "elbow_flex": 0.9, "wrist_flex": 0.4}


def emit(figure: str, **values) -> None:
    print(json.dumps({"benchmark": "drivers_so101", "figure": figure, **values}), flush=True)


def sync_read(link_path: Path, ids, seconds: float) -> None:
    bus = FeetechBus(str(link_path), ids).open()
    times, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.perf_counter()
        bus.feedback()
        times.append(time.perf_counter() - started)
    bus.close()
    emit("sync_read_feedback_ms", servos=len(ids), **milliseconds(times))


def inverse_kinematics(samples: int) -> None:
    rng = np.random.default_rng(0)
    q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.0])
    times, errors = [], []
    for _ in range(samples):
        q = q0 + rng.normal(0.0, 0.2, 5)
        target = kin.forward(q)
        target[:3, 3] += rng.normal(0.0, 0.01, 3)  # a 1 cm move, orientation kept
        started = time.perf_counter()
        solution = kin.inverse(target, q)
        times.append(time.perf_counter() - started)
        errors.append(solution.position_error)
    emit("inverse_kinematics_ms", samples=samples, **milliseconds(times),
         position_error_mm_p99=round(float(np.percentile(errors, 99)) * 1000, 4))  # fmt: skip


def bus_thread(link_path: Path, motors, state_hz: float, seconds: float) -> None:
    config = So101Config(
        port=str(link_path), state_hz=state_hz, reconnect_period=0.2, max_joint_step=0.1
    )
    settings = LinkSettings.of(config, motors)
    link = So101Link(settings, lambda reading: None, lambda level, message: None)
    link.connect()
    link.start()
    link.enable(True)
    try:
        while link.last is None:
            time.sleep(0.01)
        start_pos, quat = link.last.tcp_pos.copy(), link.last.tcp_quat
        target = start_pos + np.array([0.0, 0.02, 0.0])
        cycles, started = link.cycles, time.monotonic()
        reached = None
        while time.monotonic() - started < seconds:
            link.command_pose(target, quat)
            error = float(np.linalg.norm(link.last.tcp_pos - target))
            if reached is None and error < 0.003:
                reached = time.monotonic() - started
            time.sleep(0.02)
        rate = (link.cycles - cycles) / (time.monotonic() - started)
        emit("bus_thread", state_hz=state_hz, cycles_per_s=round(rate, 1),
             step_2cm_to_3mm_s=None if reached is None else round(reached, 2),
             final_error_mm=round(error * 1000, 2), unreachable=link.unreachable)  # fmt: skip
    finally:
        link.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--state-hz", type=float, default=50.0)
    args = parser.parse_args()
    motors = calibration.default()
    ids = [m.id for m in motors.values()]
    directory = Path(tempfile.mkdtemp(prefix="so101_bench_"))
    peer = FeetechPeer(directory / "so101", ids, arm=MujocoServoArm(START)).start()
    try:
        sync_read(peer.link, ids, args.seconds)
        inverse_kinematics(200)
        bus_thread(peer.link, motors, args.state_hz, args.seconds)
    finally:
        peer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
