"""The simulated car cell (``hardware/car_sim.yaml``): the car twin behind a VESC protocol peer on
a pseudo-terminal, driven by the real VESC node; its forward camera renders that world.

Asserted: cmd_vel drives the twin through the VESC protocol (the true pose moves ahead, and the
node's odometry, from the twin's tachometer and ERPM, agrees with it); the twin's IMU arrives
through COMM_GET_IMU_DATA; the camera publishes frames of the car's world; and ``robot-rl up
robot --hardware hardware/car_sim.yaml --task car_lap`` brings the drivers up, the actor steps,
and Ctrl-C leaves no process behind. Waits are long and bounded; speeds are never asserted.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("rclpy")
pytest.importorskip("serial")

from process_helpers import UP_ROBOT_TINY, CellProcesses, UpStack, wait_for
from ros_helpers import Diagnostics, Watcher

HARDWARE = Path(__file__).parents[1] / "hardware" / "car_sim.yaml"
DEFAULT_PORT = "/tmp/robot_rl_car_sim/vesc"
START = np.array([0.0, -3.25])


def car_hardware(directory: Path) -> Path:
    """``hardware/car_sim.yaml`` with the VESC's pty in ``directory`` (runs never share it)."""
    path = directory / "car_sim.yaml"
    path.write_text(HARDWARE.read_text().replace(DEFAULT_PORT, str(directory / "vesc")))
    return path


@pytest.fixture(scope="class")
def car_cell(tmp_path_factory):
    """The cell's nodes (the car twin behind the VESC peer, the VESC node, the camera) for one
    class, with a watcher on the car's topics and the twin's true state, and a cmd_vel
    publisher. Its processes' exit codes are checked by the class's last test."""
    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import Image, Imu
    from std_msgs.msg import Float64MultiArray

    from robot_rl.ros.qos import command_qos, state_qos

    tmp_path = tmp_path_factory.mktemp("car_cell")
    processes = CellProcesses(car_hardware(tmp_path), tmp_path)
    watcher = Watcher({"/car/odom": Odometry, "/car/imu": Imu, "/front_cam/image_raw": Image})
    state = []
    watcher.node.create_subscription(
        Float64MultiArray, "/sim/car/state", lambda m: state.append(np.array(m.data)), state_qos()
    )
    diagnostics = Diagnostics(watcher.node)
    cmd = watcher.node.create_publisher(Twist, "/car/cmd_vel", command_qos())
    cell = SimpleNamespace(
        processes=processes, watcher=watcher, state=state, diagnostics=diagnostics, cmd=cmd
    )
    try:
        wait_for(
            lambda: diagnostics.get("/car/vesc").get("motion_enabled") == "True",
            180.0,
            "the cell to bring the VESC node up",
        )
        wait_for(lambda: watcher.get("/car/odom") and state, 60.0, "odom and the world state")
        yield cell
    finally:
        watcher.close()
        cell.codes = processes.stop()
        for name in cell.codes:
            print(name, processes.output(name)[-1500:])


def drive_a_metre(cell) -> None:
    """Straight ahead at 1 m/s until the twin has moved a metre from the start."""
    from geometry_msgs.msg import Twist

    msg = Twist()
    msg.linear.x = 1.0

    def moved() -> bool:
        cell.cmd.publish(msg)
        return cell.state[-1][1] > START[0] + 1.0

    wait_for(moved, 120.0, "the twin to drive a metre", interval=0.1)


class TestTheVescNodeDrivesTheCarTwinThroughTheProtocol:
    """In this order: at rest, driven a metre, stopped by the watchdog."""

    def test_at_rest_odometry_starts_at_the_start_and_the_imu_feels_gravity(self, car_cell):
        odom = car_cell.watcher.get("/car/odom").pose.pose.position
        assert (odom.x, odom.y) == pytest.approx(tuple(START), abs=0.02)
        imu = car_cell.watcher.get("/car/imu")
        assert imu.linear_acceleration.z == pytest.approx(9.81, abs=0.5)  # the twin at rest

    def test_cmd_vel_drives_the_twin_and_the_odometry_agrees(self, car_cell):
        drive_a_metre(car_cell)
        truth = car_cell.state[-1][1:3]
        odom = car_cell.watcher.get("/car/odom")
        position = np.array([odom.pose.pose.position.x, odom.pose.pose.position.y])
        print("truth", truth, "odometry", position, "speed", odom.twist.twist.linear.x)
        assert np.linalg.norm(position - truth) < 0.15  # wheel odometry on a straight line
        assert odom.twist.twist.linear.x > 0.3

    def test_the_camera_renders_the_cars_world(self, car_cell):
        wait_for(lambda: car_cell.watcher.get("/front_cam/image_raw"), 120.0, "a camera frame")
        image = car_cell.watcher.get("/front_cam/image_raw")
        assert (image.width, image.height, image.encoding) == (64, 64, "rgb8")
        assert np.frombuffer(bytes(image.data), np.uint8).std() > 1.0  # not a blank frame

    def test_the_vesc_nodes_watchdog_stops_the_car_when_cmd_vel_stops(self, car_cell):
        if car_cell.state[-1][1] <= START[0] + 1.0:  # run alone: drive first
            drive_a_metre(car_cell)
        wait_for(
            lambda: abs(car_cell.watcher.get("/car/odom").twist.twist.linear.x) < 0.05,
            60.0,
            "the watchdog to stop the twin",
        )
        cell = car_cell.diagnostics.get("/sim/car_cell")
        assert int(cell.get("vesc_requests", 0)) > 10, cell

    def test_the_cells_processes_stop_cleanly(self, car_cell):
        car_cell.watcher.close()
        car_cell.codes = codes = car_cell.processes.stop()
        assert all(code in (0, -2, 130) for code in codes.values()), codes


UP_ARGS = ["--task", "car_lap", "--cameras", "front", "--image-size", "64", *UP_ROBOT_TINY]


@pytest.fixture(scope="module")
def up_car(tmp_path_factory):
    """``up robot --hardware car_sim.yaml --task car_lap``, once for the module, until the
    drivers are active and the actor started."""
    from robot_rl.ros.qos import sensor_qos  # noqa: F401  (rclpy is importable)

    tmp_path = tmp_path_factory.mktemp("up_car_cell")
    hardware = car_hardware(tmp_path)
    up = UpStack(
        ["robot", "--hardware", str(hardware), "--run-dir", str(tmp_path / "run"), *UP_ARGS],
        tmp_path / "up.log",
    )
    watcher = Watcher({})
    diagnostics = Diagnostics(watcher.node)
    try:
        up.wait_for(
            lambda: (
                "actor" in up.output()
                and diagnostics.get("/car/vesc").get("motion_enabled") == "True"
            ),
            420.0,
            "the drivers to be active and the actor started",
        )
        yield SimpleNamespace(up=up, diagnostics=diagnostics, directory=tmp_path)
    finally:
        up.ctrl_c()
        watcher.close()
        print(up.output()[-4000:])


def test_up_robot_publishes_the_car_cells_camera(up_car):
    up_car.up.wait_for(
        lambda: (
            up_car.diagnostics.get("/front_cam/front_camera").get("message") == "publishing frames"
        ),
        120.0,
        "the camera's frames",
    )


def test_up_robot_steps_the_car_lap_actor_on_the_cell(up_car):
    diagnostics = up_car.diagnostics
    up_car.up.wait_for(
        lambda: int(diagnostics.get("/actor").get("steps", 0)) > 10, 420.0, "the actor to step"
    )
    steps = int(diagnostics.get("/actor")["steps"])
    up_car.up.wait_for(
        lambda: int(diagnostics.get("/actor").get("steps", 0)) > steps + 5,
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


def test_ctrl_c_stops_every_process_of_the_car_stack(up_car):
    """Last in this module: nothing may be left, and the cell took its port away."""
    code, left = up_car.up.ctrl_c()
    text = up_car.up.output()
    assert code == 130, text[-3000:]
    assert len(up_car.up.descendants) >= 5  # the cell's 3 nodes, the actor and the learner
    assert left == [], f"processes left after Ctrl-C: {left}"
    assert not (up_car.directory / "vesc").exists()  # the cell took its port away
