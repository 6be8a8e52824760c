"""Teleop driver nodes: how old the newest device report is when the twist that carries it
arrives at a subscriber of ``/teleop/twist``, and the node process's CPU share. One JSON line
per device.

    python benchmarks/teleop.py [--devices spacemouse gamepad] [--seconds 10] [--report-hz 125]

Each node runs in a child process of its own, fed by a synthetic device at ``--report-hz``
through the production read path where there is one without hardware (the gamepad: an
``EvdevFile`` on a pipe, written by a thread in the child; the SpaceMouse: a device object
that hands out the report due now, as hidapi would). Every report carries its sequence number
in one axis; this process decodes it from the twist it receives and takes the arrival time
(``time.monotonic``, one clock for both processes on one machine) minus the report's due time.
That age includes the wait for the node's next tick (``rate_hz``, 50 Hz): a report is at most
one report interval old when a tick drains it, and a change reaches the subscriber within one
tick plus the transport.
CPU share: the child's user + system time over its spinning wall time (1.0 = one core),
the synthetic device's own work included.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import threading
import time

import numpy as np

WRAP = 300
"""Sequence numbers are sent modulo this (fits a SpaceMouse axis, 350 counts)."""


# -- child: a node on a synthetic device ---------------------------------------------------
def _spacemouse_opener(t0: float, report_hz: float):
    from robot_rl.drivers.teleop.hid_spacemouse import TRANSLATION_REPORT

    class Synthetic:
        description = "synthetic SpaceMouse"

        def __init__(self):
            self.sent = -1

        def read(self) -> bytes:
            due = math.floor((time.monotonic() - t0) * report_hz)
            if due <= self.sent:
                return b""
            self.sent = due  # a device that is read late sends its newest report, not a backlog
            ty = due % WRAP
            return bytes([TRANSLATION_REPORT]) + np.array([0, ty, 0], "<i2").tobytes()

        def close(self) -> None:
            pass

    return lambda config: Synthetic()


def _gamepad_opener(t0: float, report_hz: float, stop: threading.Event):
    from evdev import ecodes

    from robot_rl.drivers.teleop.evdev_gamepad import (
        EV_ABS,
        EV_SYN,
        SYN_REPORT,
        AxisRange,
        pack_event,
    )
    from robot_rl.drivers.teleop.gamepad import EvdevFile

    ranges = {ecodes.ABS_X: AxisRange(-32768, 32767), ecodes.ABS_Y: AxisRange(-32768, 32767)}

    def write(fd: int) -> None:
        k = 0
        while not stop.is_set():
            wait = t0 + k / report_hz - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            value = -100 * (k % WRAP)
            os.write(
                fd, pack_event(EV_ABS, ecodes.ABS_Y, value) + pack_event(EV_SYN, SYN_REPORT, 0)
            )
            k = max(k + 1, math.floor((time.monotonic() - t0) * report_hz))

    def opener(config):
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        threading.Thread(target=write, args=(write_fd,), daemon=True).start()
        return EvdevFile(read_fd, ranges, "synthetic gamepad", lambda: ({}, []))

    return opener


def child(device: str, t0: float, report_hz: float, seconds: float) -> None:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from robot_rl.drivers.teleop.gamepad import GamepadNode
    from robot_rl.drivers.teleop.spacemouse import SpaceMouseNode

    rclpy.init(args=["--ros-args", "-p", "deadband:=0.0"])
    stop = threading.Event()
    if device == "spacemouse":
        node = SpaceMouseNode(opener=_spacemouse_opener(t0, report_hz))
    else:
        node = GamepadNode(opener=_gamepad_opener(t0, report_hz, stop))
    assert node.start(), "the node did not reach active"
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu0, wall0 = usage.ru_utime + usage.ru_stime, time.monotonic()
    end = wall0 + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.1)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu, wall = usage.ru_utime + usage.ru_stime - cpu0, time.monotonic() - wall0
    stop.set()
    print(json.dumps({"cpu_s": cpu, "wall_s": wall}), flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


# -- parent: the subscriber that measures ----------------------------------------------
def decode(device: str, linear_x: float) -> int:
    if device == "spacemouse":
        return round(linear_x * 350.0)
    # the gamepad's centred range: -ABS_Y = -(2 * raw + 1) / 65535 with raw = -100 k
    return round((linear_x * 65535.0 + 1.0) / 200.0)


def measure(device: str, seconds: float, report_hz: float) -> dict:
    import rclpy
    from geometry_msgs.msg import TwistStamped
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    from robot_rl.ros.qos import teleop_qos
    from robot_rl.ros.teleop import TWIST_TOPIC

    arrivals: list[tuple[float, float]] = []
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node("teleop_benchmark", context=context)
    node.create_subscription(
        TwistStamped,
        TWIST_TOPIC,
        lambda m: arrivals.append((time.monotonic(), m.twist.linear.x)),
        teleop_qos(),
    )
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    t0 = time.monotonic() + 3.0  # the child's first report is due once it has started
    proc = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--child",
            device,
            "--t0",
            repr(t0),
            "--report-hz",
            str(report_hz),
            "--seconds",
            str(seconds),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        while proc.poll() is None:
            executor.spin_once(timeout_sec=0.05)
        out = proc.stdout.read().strip().splitlines()
    finally:
        if proc.poll() is None:
            proc.kill()
        node.destroy_node()
        context.try_shutdown()
    cpu = json.loads(out[-1]) if out else {"cpu_s": float("nan"), "wall_s": float("nan")}
    latencies = []
    for arrival, linear_x in arrivals:
        if arrival < t0 or linear_x == 0.0:
            continue  # before the first report: the released frame
        newest = math.floor((arrival - t0) * report_hz)
        k = newest - (newest - decode(device, linear_x)) % WRAP
        latencies.append(arrival - (t0 + k / report_hz))
    lat = np.array(latencies) * 1e3
    return {
        "benchmark": "teleop_driver",
        "device": device,
        "report_hz": report_hz,
        "messages": len(lat),
        "latency_ms_mean": round(float(lat.mean()), 2) if len(lat) else None,
        "latency_ms_p50": round(float(np.percentile(lat, 50)), 2) if len(lat) else None,
        "latency_ms_p99": round(float(np.percentile(lat, 99)), 2) if len(lat) else None,
        "cpu_share": round(cpu["cpu_s"] / cpu["wall_s"], 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--devices", nargs="+", default=["spacemouse", "gamepad"], choices=["spacemouse", "gamepad"]
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--report-hz", type=float, default=125.0)
    parser.add_argument("--child", choices=["spacemouse", "gamepad"], help=argparse.SUPPRESS)
    parser.add_argument("--t0", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.t0, args.report_hz, args.seconds)
        return
    for device in args.devices:
        print(json.dumps(measure(device, args.seconds, args.report_hz)), flush=True)


if __name__ == "__main__":
    main()
