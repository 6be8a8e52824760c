"""Every driver node by name, in the manner of LeRobot's device registries: a hardware file
says ``type: franka`` and the registry knows the kind of device, its console script and the
module that holds its config dataclass and node class. The table is static and its modules are
imported only on ``load``, so reading it needs no ROS 2 and no device library.

Each driver module defines ``CONFIG`` (a dataclass whose fields are the node's ROS 2
parameters, see ``robot_rl.drivers.config``) and ``NODE`` (the node class).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, fields
from types import ModuleType


@dataclass(frozen=True)
class DeviceType:
    name: str
    kind: str
    """arm, camera, teleop or car: the folder under drivers/ and the node's role."""
    executable: str
    """Console script that runs the node (``pyproject.toml``)."""
    module: str
    summary: str
    lifecycle: bool = True
    """Its node is a lifecycle node (``DeviceNode``: ready when ``active``); False: a plain node
    (the keyboard, the simulated cells' parts: ready once in the graph)."""

    def load(self) -> ModuleType:
        """The driver module (imports its device library)."""
        return importlib.import_module(self.module)

    def parameter_names(self) -> tuple[str, ...]:
        """The node's parameters: its config dataclass's fields."""
        return tuple(f.name for f in fields(self.load().CONFIG))


DEVICES: dict[str, DeviceType] = {
    d.name: d
    for d in (
        DeviceType(
            "franka",
            "arm",
            "robot-rl-franka",
            "robot_rl.drivers.arms.franka",
            "Franka FR3/Panda over libfranka (franky): Cartesian impedance, watchdog",
        ),
        DeviceType(
            "realsense",
            "camera",
            "robot-rl-realsense",
            "robot_rl.drivers.cameras.realsense",
            "Intel RealSense through pyrealsense2",
        ),
        DeviceType(
            "opencv_camera",
            "camera",
            "robot-rl-camera",
            "robot_rl.drivers.cameras.opencv_camera",
            "UVC camera, video file or GStreamer pipeline through cv2.VideoCapture",
        ),
        DeviceType(
            "spacemouse",
            "teleop",
            "robot-rl-spacemouse",
            "robot_rl.drivers.teleop.spacemouse",
            "3Dconnexion SpaceMouse over HID",
        ),
        DeviceType(
            "gamepad",
            "teleop",
            "robot-rl-gamepad",
            "robot_rl.drivers.teleop.gamepad",
            "gamepad over evdev",
        ),
        DeviceType(
            "keyboard",
            "teleop",
            "robot-rl-keyboard-teleop",
            "robot_rl.drivers.teleop.keyboard",
            "terminal keyboard",
            lifecycle=False,
        ),
        DeviceType(
            "vesc",
            "car",
            "robot-rl-vesc",
            "robot_rl.drivers.car.vesc",
            "VESC motor controller over serial: motor, steering servo, odometry, IMU",
        ),
        DeviceType(
            "realsense_imu",
            "car",
            "robot-rl-realsense-imu",
            "robot_rl.drivers.car.realsense_imu",
            "RealSense D435i/D455 IMU (gyro + accelerometer) as sensor_msgs/Imu",
        ),
        # the simulated FR3 cell (sim/cells): one executable, its part chosen by `part`
        DeviceType(
            "fr3_sim_cell",
            "arm",
            "robot-rl-fr3-sim-cell",
            "robot_rl.sim.cells.fr3_cell",
            "simulated FR3 cell's world: franky-sim (libfranka protocol on loopback)",
            lifecycle=False,
        ),
        DeviceType(
            "fr3_sim_camera",
            "camera",
            "robot-rl-fr3-sim-cell",
            "robot_rl.sim.cells.cell_camera",
            "a camera of the simulated FR3 cell",
            lifecycle=False,
        ),
        DeviceType(
            "fr3_sim_human",
            "teleop",
            "robot-rl-fr3-sim-cell",
            "robot_rl.sim.cells.cell_human",
            "the simulated FR3 cell's operator, on the SpaceMouse's topics",
            lifecycle=False,
        ),
        # the simulated car cell (sim/cells): the car twin behind a VESC on a pty
        DeviceType(
            "car_sim_cell",
            "car",
            "robot-rl-car-sim-cell",
            "robot_rl.sim.cells.car_cell",
            "simulated car cell's world: the car twin answering as a VESC on a pty",
            lifecycle=False,
        ),
        DeviceType(
            "car_sim_camera",
            "camera",
            "robot-rl-car-sim-cell",
            "robot_rl.sim.cells.car_camera",
            "the simulated car's forward camera",
            lifecycle=False,
        ),
        DeviceType(
            "car_sim_human",
            "teleop",
            "robot-rl-car-sim-cell",
            "robot_rl.sim.cells.car_human",
            "the simulated car cell's operator, on the gamepad's topics",
            lifecycle=False,
        ),
    )
}


def device_type(name: str) -> DeviceType:
    try:
        return DEVICES[name]
    except KeyError:
        raise KeyError(
            f"unknown device type {name!r}; known: {', '.join(sorted(DEVICES))}"
        ) from None


def by_executable(executable: str) -> DeviceType | None:
    return next((d for d in DEVICES.values() if d.executable == executable), None)
