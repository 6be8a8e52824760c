"""What a task needs from a robot: the contract that the MuJoCo twin and the ROS 2 robot
backend both implement, so one task definition drives either.

A backend speaks in *readings* and *commands*: flat dicts of numpy arrays with the names below
(SI units, world frame unless said otherwise). Tasks turn readings into observations, rewards
and success, and turn normalised actions into commands. Nothing here imports MuJoCo or ROS 2.

Arm readings:
    ``tcp_pos`` (3) m, ``tcp_quat`` (4, w x y z), ``tcp_vel`` (6: linear m/s, angular rad/s),
    ``gripper_pos`` (1: 0 open .. 1 closed), ``joint_pos`` (7) rad, ``joint_vel`` (7) rad/s,
    ``wrench`` (6: force N, torque Nm at the flange, in the tool frame),
    ``image/<camera>`` (H, W, 3) uint8.
Arm commands:
    ``tcp_pos`` (3), ``tcp_quat`` (4): the impedance controller's target pose;
    ``gripper`` (1): 0 open .. 1 closed.
    An entry left out keeps its last commanded value (as the real drivers do): a task's
    "stay" gripper action sends no ``gripper`` entry, and no ``tcp_quat`` keeps the orientation.
Car readings:
    ``odom_pose`` (3: x, y, yaw from the car's odometry), ``velocity`` (3: forward m/s, lateral
    m/s, yaw rate), ``imu_accel`` (3) m/s^2, ``imu_accel_peak`` (3: the sample of largest
    horizontal magnitude since the last read), ``imu_gyro`` (3) rad/s, ``flipped`` (1),
    ``image/<camera>`` (H, W, 3) uint8; twin only (never for navigation or crash detection):
    ``pose`` (3: the true pose; on ROS the odometry's), ``collision`` (1: touched a wall).
Car commands:
    ``speed`` (1) m/s, ``steering`` (1) rad.
Privileged readings (the twin only, for dense rewards, experts and tests): ``object/<name>_pos``
    (3), ``object/<name>_quat`` (4). A real backend has none; tasks that need them for reward use
    a learned reward classifier on the robot.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

Reading = dict[str, np.ndarray]
Command = dict[str, np.ndarray]


@runtime_checkable
class Backend(Protocol):
    is_simulated: bool
    """True for the twin: privileged readings and scene placement are available."""
    control_hz: float
    """The rate at which advance() returns (the task's control rate)."""

    def read(self) -> Reading:
        """The newest reading; raises StaleReadingError when a sensor is too old."""

    def send(self, command: Command) -> None:
        """Hand a command to the controller (the backend applies its own hard limits)."""

    def advance(self) -> None:
        """Let one control period pass: the twin integrates physics, a real robot waits."""

    def close(self) -> None: ...


class ArmBackend(Backend, Protocol):
    camera_names: tuple[str, ...]

    def move_to(self, tcp_pos: np.ndarray, tcp_quat: np.ndarray, gripper: float) -> None:
        """Go to a pose and gripper opening and settle there (used by reset procedures)."""

    def place_object(self, name: str, pos: np.ndarray, quat: np.ndarray) -> None:
        """Twin only: put an object at a pose (scene randomisation)."""


class CarBackend(Backend, Protocol):
    camera_names: tuple[str, ...]

    def place_car(self, x: float, y: float, yaw: float) -> None:
        """Twin only: put the car at a pose at rest."""


class StaleReadingError(RuntimeError):
    """A sensor's newest data is older than the staleness bound: never act on it."""
