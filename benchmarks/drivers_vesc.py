"""The VESC node (its own process) against a VESC peer on a pseudo-terminal: how long a cmd_vel
takes to reach the VESC as a set-point (it goes out on the node's next telemetry cycle), the
odom rate at a subscriber, how long the e-stop takes to put zero on the wire, and the node's CPU.
One JSON line per figure.

    python benchmarks/drivers_vesc.py [--seconds 10] [--telemetry-hz 50]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ERPM_PER_MPS = 60 / (2 * math.pi * 0.05) * 10 * 2  # the node's default calibration


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--telemetry-hz", type=float, default=50.0)
    parser.add_argument("--command-hz", type=float, default=20.0)
    args = parser.parse_args()

    import psutil
    import rclpy
    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry
    from std_srvs.srv import SetBool

    from robot_rl.ros.qos import command_qos, sensor_qos
    from robot_rl.sim.cells.vesc_peer import SimpleDrivetrain, VescPeer

    arrivals: dict[int, float] = {}

    class Stamped(SimpleDrivetrain):
        def apply(self, kind, value):
            if kind == "rpm" and round(value) not in arrivals:
                arrivals[round(value)] = time.monotonic()
            super().apply(kind, value)

    directory = Path(tempfile.mkdtemp(prefix="vesc_bench_"))
    peer = VescPeer(directory / "vesc", Stamped()).start()
    node = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "robot_rl.drivers.car.vesc",
            "--ros-args",
            "-r",
            "__ns:=/car",
            "-p",
            f"port:={directory / 'vesc'}",
            "-p",
            f"telemetry_hz:={args.telemetry_hz}",
            "-p",
            "watchdog_timeout:=0.5",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    rclpy.init()
    client = rclpy.create_node("vesc_bench")
    odom_times: list[float] = []
    client.create_subscription(
        Odometry, "/car/odom", lambda m: odom_times.append(time.monotonic()), sensor_qos()
    )
    pub = client.create_publisher(Twist, "/car/cmd_vel", command_qos())
    estop = client.create_client(SetBool, "/car/estop")
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor()
    executor.add_node(client)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    try:
        deadline = time.monotonic() + 60
        while not odom_times and time.monotonic() < deadline:
            time.sleep(0.05)
        process = psutil.Process(node.pid)
        process.cpu_percent()
        sent: dict[int, float] = {}
        start = time.monotonic()
        k = 0
        while time.monotonic() - start < args.seconds:
            speed = 0.5 + 0.002 * (k % 1000)
            msg = Twist()
            msg.linear.x = speed
            sent[round(speed * ERPM_PER_MPS)] = time.monotonic()
            pub.publish(msg)
            k += 1
            time.sleep(1.0 / args.command_hz)
        cpu = process.cpu_percent()
        window = [t for t in odom_times if t >= start]
        latencies = [arrivals[e] - t for e, t in sent.items() if e in arrivals]
        lat = np.array(latencies) * 1000
        figures = [
            {
                "figure": "cmd_vel_to_vesc_ms",
                "p50": round(float(np.percentile(lat, 50)), 2),
                "p95": round(float(np.percentile(lat, 95)), 2),
                "commands": len(sent),
                "arrived": len(latencies),
                "telemetry_hz": args.telemetry_hz,
            },
            {"figure": "odom_hz", "value": round(len(window) / args.seconds, 1)},
            {"figure": "node_cpu_percent", "value": round(cpu, 1)},
        ]
        # e-stop: the service call to zero at the peer
        assert estop.wait_for_service(timeout_sec=10)
        t0 = time.monotonic()
        future = estop.call_async(SetBool.Request(data=True))
        while peer.last("rpm") != 0.0 and time.monotonic() - t0 < 5:
            time.sleep(0.0005)
        figures.append(
            {"figure": "estop_to_zero_ms", "value": round((time.monotonic() - t0) * 1000, 2)}
        )
        while not future.done():
            time.sleep(0.01)
        load = os.getloadavg()[0]
        for figure in figures:
            print(json.dumps({**figure, "seconds": args.seconds, "load": round(load, 1)}))
    finally:
        os.killpg(node.pid, signal.SIGINT)
        node.wait(20)
        executor.shutdown(timeout_sec=2.0)
        spin.join(timeout=2.0)
        client.destroy_node()
        rclpy.try_shutdown()
        peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
