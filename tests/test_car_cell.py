"""The simulated car cell (``hardware/car_sim.yaml``): the car twin behind a VESC protocol peer on
a pseudo-terminal, driven by the real VESC node; its forward camera renders that world.

Asserted: cmd_vel drives the twin through the VESC protocol (the true pose moves ahead, and the
node's odometry, from the twin's tachometer and ERPM, agrees with it); the twin's IMU arrives
through COMM_GET_IMU_DATA; the camera publishes frames of the car's world; and ``robot-rl up
robot --hardware hardware/car_sim.yaml --task car_lap`` brings the drivers up, the actor steps,
and Ctrl-C leaves no process behind. Waits are long and bounded; speeds are never asserted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("rclpy")
pytest.importorskip("serial")

from franka_harness import wait_for
from test_fr3_sim_cell import CellProcesses, Watcher

HARDWARE = Path(__file__).parents[1] / "hardware" / "car_sim.yaml"
DEFAULT_PORT = "/tmp/robot_rl_car_sim/vesc"
START = np.array([0.0, -3.25])


def car_hardware(directory: Path) -> Path:
    """``hardware/car_sim.yaml`` with the VESC's pty in ``directory`` (runs never share it)."""
    path = directory / "car_sim.yaml"
    path.write_text(HARDWARE.read_text().replace(DEFAULT_PORT, str(directory / "vesc")))
    return path


class Diagnostics:
    def __init__(self, node):
        from diagnostic_msgs.msg import DiagnosticArray

        self.status: dict[str, dict[str, str]] = {}
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on, 50)

    def _on(self, msg) -> None:
        for status in msg.status:
            self.status[status.name] = {
                **{kv.key: kv.value for kv in status.values},
                "message": status.message,
            }

    def get(self, name: str) -> dict[str, str]:
        return dict(self.status.get(name, {}))


def test_the_vesc_node_drives_the_car_twin_through_the_protocol(tmp_path):
    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import Image, Imu
    from std_msgs.msg import Float64MultiArray

    from robot_rl.ros.qos import command_qos, state_qos

    processes = CellProcesses(car_hardware(tmp_path), tmp_path)
    watcher = Watcher({"/car/odom": Odometry, "/car/imu": Imu, "/front_cam/image_raw": Image})
    state = []
    watcher.node.create_subscription(
        Float64MultiArray, "/sim/car/state", lambda m: state.append(np.array(m.data)), state_qos()
    )
    diagnostics = Diagnostics(watcher.node)
    cmd = watcher.node.create_publisher(Twist, "/car/cmd_vel", command_qos())
    try:
        wait_for(
            lambda: diagnostics.get("/car/vesc").get("motion_enabled") == "True",
            180.0,
            "the cell to bring the VESC node up",
        )
        wait_for(lambda: watcher.get("/car/odom") and state, 60.0, "odom and the world state")
        odom = watcher.get("/car/odom").pose.pose.position
        assert (odom.x, odom.y) == pytest.approx(tuple(START), abs=0.02)
        imu = watcher.get("/car/imu")
        assert imu.linear_acceleration.z == pytest.approx(9.81, abs=0.5)  # the twin at rest
        # drive straight ahead at 1 m/s until the twin has moved a metre
        msg = Twist()
        msg.linear.x = 1.0

        def moved() -> bool:
            cmd.publish(msg)
            return state[-1][1] > START[0] + 1.0

        wait_for(moved, 120.0, "the twin to drive a metre", interval=0.1)
        truth = state[-1][1:3]
        odom = watcher.get("/car/odom")
        position = np.array([odom.pose.pose.position.x, odom.pose.pose.position.y])
        print("truth", truth, "odometry", position, "speed", odom.twist.twist.linear.x)
        assert np.linalg.norm(position - truth) < 0.15  # wheel odometry on a straight line
        assert odom.twist.twist.linear.x > 0.3
        # the camera renders the car's world
        wait_for(lambda: watcher.get("/front_cam/image_raw"), 120.0, "a camera frame")
        image = watcher.get("/front_cam/image_raw")
        assert (image.width, image.height, image.encoding) == (64, 64, "rgb8")
        assert np.frombuffer(bytes(image.data), np.uint8).std() > 1.0  # not a blank frame
        # cmd_vel stops: the VESC node's watchdog stops the car
        wait_for(
            lambda: abs(watcher.get("/car/odom").twist.twist.linear.x) < 0.05,
            60.0,
            "the watchdog to stop the twin",
        )
        cell = diagnostics.get("/sim/car_cell")
        assert int(cell.get("vesc_requests", 0)) > 10, cell
    finally:
        watcher.close()
        codes = processes.stop()
        for name in codes:
            print(name, processes.output(name)[-1500:])
    assert all(code in (0, -2, 130) for code in codes.values()), codes


def test_up_robot_runs_car_lap_on_the_simulated_car_cell(tmp_path):
    import psutil

    from robot_rl.ros.qos import sensor_qos  # noqa: F401  (rclpy is importable)

    hardware = car_hardware(tmp_path)
    run_dir = tmp_path / "run"
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "250",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    command = [
        sys.executable,
        "-m",
        "robot_rl.cli",
        "up",
        "robot",
        "--hardware",
        str(hardware),
        "--task",
        "car_lap",
        "--cameras",
        "front",
        "--image-size",
        "64",
        "--total-steps",
        "100000",
        "--start-steps",
        "20",
        "--batch-size",
        "16",
        "--utd-ratio",
        "1",
        "--agent.num-critics",
        "2",
        "--agent.hidden-dims",
        "32",
        "32",
        "--eval-episodes",
        "0",
        "--ready-timeout",
        "300",
        "--grace",
        "30",
        "--run-dir",
        str(run_dir),
        "--log-every",
        "2",
    ]
    log = tmp_path / "up.log"
    with open(log, "w") as out:
        up = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    watcher = Watcher({})
    diagnostics = Diagnostics(watcher.node)
    descendants: set[int] = set()

    def alive() -> bool:
        assert up.poll() is None, f"up exited ({up.returncode}):\n{log.read_text()[-3000:]}"
        descendants.update(p.pid for p in psutil.Process(up.pid).children(recursive=True))
        return True

    try:
        wait_for(
            lambda: (
                alive()
                and "actor" in log.read_text(errors="replace")
                and diagnostics.get("/car/vesc").get("motion_enabled") == "True"
            ),
            420.0,
            "the drivers to be active and the actor started",
        )
        wait_for(
            lambda: (
                alive()
                and diagnostics.get("/front_cam/front_camera").get("message") == "publishing frames"
            ),
            120.0,
            "the camera's frames",
        )
        wait_for(
            lambda: alive() and int(diagnostics.get("/actor").get("steps", 0)) > 10,
            420.0,
            "the actor to step",
        )
        steps = int(diagnostics.get("/actor")["steps"])
        wait_for(
            lambda: alive() and int(diagnostics.get("/actor").get("steps", 0)) > steps + 5,
            180.0,
            "the actor to keep stepping",
        )
        vesc = diagnostics.get("/car/vesc")
        print(
            "actor:",
            diagnostics.get("/actor"),
            "\nvesc:",
            vesc,
            "\ncell:",
            diagnostics.get("/sim/car_cell"),
        )
        assert int(vesc["cycles"]) > 0 and vesc["estop"] == "False"
    finally:
        if up.poll() is None:
            descendants.update(p.pid for p in psutil.Process(up.pid).children(recursive=True))
            os.kill(up.pid, signal.SIGINT)
        try:
            code = up.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
            code = None
        watcher.close()
        text = log.read_text(errors="replace")
        print(text[-4000:])
        time.sleep(0.5)
        left = [
            p
            for p in descendants
            if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert code == 130, text[-3000:]
    assert len(descendants) >= 5  # the cell's 3 nodes, the actor and the learner
    assert left == [], f"processes left after Ctrl-C: {left}"
    assert not (tmp_path / "vesc").exists()  # the cell took its port away
