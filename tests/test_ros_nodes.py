"""Node conventions (parameters, params files, lifecycle) and the car twin node with the ROS car
backend, in-process (each node in its own rclpy context and executor thread)."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest
from process_helpers import holds_within
from ros_helpers import Spinner

pytest.importorskip("rclpy")
pytest.importorskip("mujoco")

import rclpy
from rclpy.context import Context

from robot_rl.envs.backend import StaleReadingError
from robot_rl.ros.node_base import ParameterError

pytestmark = pytest.mark.timeout(60)


def _context(args=()):
    context = Context()
    rclpy.init(context=context, args=["--ros-args", *args] if args else [])
    return context


def test_params_file_sets_and_coerces_parameters(tmp_path):
    from robot_rl.sim.nodes.arm_twin_node import ArmTwinNode

    path = tmp_path / "arm.yaml"
    path.write_text("/**:\n  ros__parameters:\n    speedup: 3\n    watchdog_timeout: 0.25\n")
    context = _context(["--params-file", str(path)])
    try:
        node = ArmTwinNode(context=context)
        assert node.params["speedup"] == 3.0 and isinstance(node.params["speedup"], float)
        assert node.params["watchdog_timeout"] == 0.25
        assert node.get_parameter("use_sim_time").value is True
        node.destroy_node()
    finally:
        context.try_shutdown()


def test_bad_parameter_is_a_clear_error():
    from robot_rl.sim.nodes.camera_node import CameraTwinNode

    context = _context(["-p", "rate:=-2.0"])
    try:
        with pytest.raises(ParameterError, match=r"'rate' = -2\.0 must be > 0"):
            CameraTwinNode(context=context)
    finally:
        context.try_shutdown()


def test_node_main_exits_with_one_line_on_bad_parameter():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "robot_rl.sim.nodes.arm_twin_node",
            "--ros-args",
            "-p",
            "speedup:=0.0",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "speedup" in result.stderr and "Traceback" not in result.stderr


def _stale_reason(backend, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            backend.read()
        except StaleReadingError as error:
            return str(error)
        time.sleep(0.05)
    return ""


def test_car_twin_node_through_the_ros_car_backend():
    from robot_rl.envs.task import make_task
    from robot_rl.ros.backend import RosBackendConfig, RosCarBackend
    from robot_rl.sim.nodes.car_twin_node import CarTwinNode, steering_for

    assert abs(steering_for(2.0, 2.0 * np.tan(0.3) / 0.26, 0.26, 0.5) - 0.3) < 1e-12
    context = _context(["-p", "speedup:=4.0", "-r", "__ns:=/car"])
    node = CarTwinNode(context=context)
    assert node.start()  # configure (builds the twin) + activate
    spinner = Spinner(node, context)
    backend = RosCarBackend(
        make_task("car_lap"), RosBackendConfig(max_age=1.0, slop=0.3, clock_timeout=3.0)
    )
    try:
        reading = backend.wait_until_ready(timeout=20)
        assert set(reading) >= {
            "pose",
            "odom_pose",
            "velocity",
            "imu_accel",
            "imu_gyro",
            "imu_accel_peak",
            "flipped",
        }
        assert "collision" not in reading  # the twin's contact flag: evaluation only
        start = reading["pose"].copy()
        drive = {"speed": np.array([1.5]), "steering": np.array([0.0])}
        for _ in range(60):  # about 15 periods when idle; a loaded machine may take longer
            backend.send(drive)
            backend.advance()
            try:
                reading = backend.read()
            except StaleReadingError:  # a sensor lagging for a moment under load: drive on
                continue
            if np.linalg.norm(reading["pose"][:2] - start[:2]) > 0.3:
                break
        assert reading["velocity"][0] > 0.5
        assert np.linalg.norm(reading["pose"][:2] - start[:2]) > 0.3

        # the watchdog stops a car whose commands stop
        assert holds_within(lambda: abs(backend.read()["velocity"][0]) < 0.05, 15.0)
        # e-stop: commands are ignored
        assert backend.estop(True) == "engaged"
        for _ in range(10):
            backend.send(drive)
            backend.advance()
        assert abs(backend.read()["velocity"][0]) < 0.05
        backend.estop(False)
        assert "no fault" in backend.clear_error()

        # a stopped physics node makes readings stale, naming the clock
        spinner.executor.remove_node(node)
        assert "/clock" in _stale_reason(backend, timeout=10)
    finally:
        backend.close()
        spinner.close()


def test_a_device_node_s_lifecycle_publishers_follow_its_state():
    """``DeviceNode``'s transitions run the base's too: a lifecycle publisher sends only while
    the node is active."""
    from std_msgs.msg import String

    from robot_rl.ros.node_base import DeviceNode

    class Device(DeviceNode):
        def __init__(self, **kwargs):
            super().__init__("lifecycle_device", **kwargs)
            self.out = self.create_lifecycle_publisher(String, "/lifecycle_device/out", 10)

    context = _context()
    try:
        node = Device(context=context)
        assert not node.out.is_activated
        node.trigger_configure()
        node.trigger_activate()
        assert node.motion_enabled and node.out.is_activated
        node.trigger_deactivate()
        assert not node.motion_enabled and not node.out.is_activated
        node.destroy_node()
    finally:
        context.try_shutdown()
