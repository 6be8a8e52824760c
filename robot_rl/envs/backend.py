"""What a task needs from a robot: the contract that the MuJoCo twin and the ROS 2 robot
backend both implement, so one task definition drives either. No MuJoCo or ROS 2 import.

Readings and commands are flat dicts of numpy arrays, SI units, world frame unless said; a
command entry left out keeps its last commanded value (no ``gripper``: the gripper stays).
Arm readings: ``tcp_pos`` (3) m, ``tcp_quat`` (4, w x y z), ``tcp_vel`` (6: m/s, rad/s),
``gripper_pos`` (1: 0 open .. 1 closed), ``joint_pos`` (7) rad, ``joint_vel`` (7) rad/s,
``wrench`` (6: N, Nm at the flange, tool frame), ``image/<camera>`` (H, W, 3) uint8.
Arm commands: ``tcp_pos`` (3), ``tcp_quat`` (4): the impedance target; ``gripper`` (1: 0 .. 1).
Car readings: ``odom_pose`` (3: odometry x, y, yaw), ``velocity`` (3: forward, lateral m/s, yaw
rate), ``imu_accel`` (3) m/s^2, ``imu_accel_peak`` (3: the largest horizontal sample since the
last read), ``imu_gyro`` (3) rad/s, ``flipped`` (1), ``image/<camera>``; twin only, never for
navigation or crash detection: ``pose`` (3), ``collision`` (1). Car commands: ``speed`` (1) m/s,
``steering`` (1) rad. Privileged (twin only; a robot uses a reward classifier instead):
``object/<name>_pos`` (3), ``object/<name>_quat`` (4).
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

    def begin_reset(self) -> None:
        """A reset procedure begins, before its first reading and move: a robot's driver runs
        its own reset (to its reset pose; the twin node's also randomises the scene), so the
        procedure goes on from where that left the arm. The in-process twin: nothing."""

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
