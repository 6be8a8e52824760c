"""An arm driver's own hard limits (the Franka node's and the SO-101 node's), as pure functions
(no ROS 2, no device library), so every rule that keeps a command safe is tested without a robot:

- ``pose_command_reason``: a pose command must be stamped, fresh, not from the future, finite,
  in the base frame, with a quaternion of unit length (within ``QUAT_NORM_TOLERANCE``);
- ``Workspace.clip``: the target position stays inside the node's own box, whatever the task's
  box says (the task clips first; this is the layer under it);
- ``limit_step``: one command moves the target at most ``max_translation`` metres and
  ``max_rotation`` radians away from where the arm *is* (the measured pose, not the last
  target), so a burst of commands cannot wind the target up far ahead of the arm.

Quaternions are w-x-y-z, as everywhere in the project.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robot_rl.drivers.command_guard import non_finite_reason, stale_reason

QUAT_NORM_TOLERANCE = 0.1
"""A commanded quaternion whose norm is further than this from 1 is malformed, not rounded."""

BASE_FRAMES = ("", "base")
"""Frames a pose command may be given in (empty: the sender did not say, as the twin allows)."""


def pose_command_reason(
    pos, quat, frame_id: str, stamp: float, now: float, max_age: float
) -> str | None:
    """Why a ``cmd/ee_pose`` command must not reach the robot, or None if it may."""
    reason = stale_reason(stamp, now, max_age)
    if reason is not None:
        return reason
    reason = non_finite_reason([*np.ravel(pos), *np.ravel(quat)])
    if reason is not None:
        return reason
    if frame_id not in BASE_FRAMES:
        return f"pose command in frame {frame_id!r}, expected 'base'"
    norm = float(np.linalg.norm(quat))
    if abs(norm - 1.0) > QUAT_NORM_TOLERANCE:
        return f"quaternion norm {norm:.3f} is not 1"
    return None


def gripper_command_reason(value: float) -> str | None:
    """Why a ``cmd/gripper`` value must not reach the hand, or None if it may."""
    return non_finite_reason([value])


@dataclass(frozen=True)
class Workspace:
    """An axis-aligned box in the robot's base frame (metres)."""

    low: tuple[float, float, float]
    high: tuple[float, float, float]

    def __post_init__(self) -> None:
        if len(self.low) != 3 or len(self.high) != 3:
            raise ValueError("workspace bounds need 3 values each")
        if not all(math.isfinite(v) for v in (*self.low, *self.high)):
            raise ValueError("workspace bounds must be finite")
        if not all(lo < hi for lo, hi in zip(self.low, self.high, strict=True)):
            raise ValueError(f"workspace low {self.low} must lie below high {self.high}")

    def clip(self, pos) -> np.ndarray:
        return np.clip(np.asarray(pos, np.float64), self.low, self.high)

    def contains(self, pos, tolerance: float = 0.0) -> bool:
        pos = np.asarray(pos, np.float64)
        low, high = np.asarray(self.low), np.asarray(self.high)
        return bool(np.all(pos >= low - tolerance) and np.all(pos <= high + tolerance))


def normalise(quat) -> np.ndarray:
    quat = np.asarray(quat, np.float64)
    return quat / np.linalg.norm(quat)


def quat_angle(a, b) -> float:
    """Rotation angle (rad, 0..pi) between two unit quaternions (sign-insensitive)."""
    dot = abs(float(np.dot(normalise(a), normalise(b))))
    return 2.0 * math.acos(min(1.0, dot))


def slerp(a, b, fraction: float) -> np.ndarray:
    """Unit quaternion ``fraction`` of the way from ``a`` to ``b`` along the shorter arc."""
    a, b = normalise(a), normalise(b)
    dot = float(np.dot(a, b))
    if dot < 0.0:  # q and -q are the same rotation: take the short way
        b, dot = -b, -dot
    if dot > 0.9995:  # nearly equal: linear interpolation is exact enough and stable
        return normalise(a + fraction * (b - a))
    theta = math.acos(dot)
    return (math.sin((1 - fraction) * theta) * a + math.sin(fraction * theta) * b) / math.sin(theta)


def limit_step(
    current_pos, current_quat, target_pos, target_quat, max_translation: float, max_rotation: float
) -> tuple[np.ndarray, np.ndarray]:
    """The target moved back towards the current pose so that it lies at most
    ``max_translation`` (m) and ``max_rotation`` (rad) away from it."""
    current_pos = np.asarray(current_pos, np.float64)
    target_pos = np.asarray(target_pos, np.float64)
    step = target_pos - current_pos
    distance = float(np.linalg.norm(step))
    if distance > max_translation:
        target_pos = current_pos + step * (max_translation / distance)
    angle = quat_angle(current_quat, target_quat)
    quat = normalise(target_quat)
    if angle > max_rotation:
        quat = slerp(current_quat, target_quat, max_rotation / angle)
    return target_pos, quat


def safe_target(
    current_pos,
    current_quat,
    target_pos,
    target_quat,
    workspace: Workspace,
    max_translation: float,
    max_rotation: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The pose the robot may be sent: the target clipped to the box, then limited to one step
    from the measured pose. An arm already inside the box stays inside (the box is convex and
    the step runs along the segment towards a point in it); an arm outside is led back in."""
    return limit_step(
        current_pos,
        current_quat,
        workspace.clip(target_pos),
        target_quat,
        max_translation,
        max_rotation,
    )
