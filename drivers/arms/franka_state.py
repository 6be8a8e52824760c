"""A libfranka robot state as the arm's topic contract wants it: positions, quaternions
w-x-y-z, the TCP twist in the base frame and the external wrench in the flange frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TWIST_SMOOTHING = 0.5
"""Weight of the newest finite difference in the published twist. libfranka sends no measured
Cartesian velocity, and computing J(q) dq here would use the robot model that franky's control
loop is using at the same moment."""


@dataclass
class ArmState:
    """One reading, in the units and frames of the topic contract."""

    stamp: float
    joint_pos: np.ndarray
    joint_vel: np.ndarray
    joint_effort: np.ndarray
    tcp_pos: np.ndarray
    tcp_quat: np.ndarray
    tcp_vel: np.ndarray
    """Base frame: linear (m/s), then angular (rad/s)."""
    wrench: np.ndarray
    """External force (N) and torque (Nm) on the end effector, in the flange frame."""
    gripper: float | None
    """0 open .. 1 closed; None without a hand."""


def to_wxyz(quat_xyzw) -> np.ndarray:
    x, y, z, w = np.asarray(quat_xyzw, np.float64)
    return np.array([w, x, y, z])


def has_errors(errors) -> bool:
    """Whether a libfranka ``Errors`` has any flag set."""
    return any(errors.__getstate__())


def pose_twist(previous: ArmState, current: ArmState) -> np.ndarray:
    """Base-frame twist (linear, angular) between two readings, by finite difference."""
    dt = current.stamp - previous.stamp
    linear = (current.tcp_pos - previous.tcp_pos) / dt
    w0, v0 = previous.tcp_quat[0], -previous.tcp_quat[1:]  # conjugate of the previous
    w1, v1 = current.tcp_quat[0], current.tcp_quat[1:]
    w = w1 * w0 - v1 @ v0  # current * previous^-1: the rotation in the base frame
    v = w1 * v0 + w0 * v1 + np.cross(v1, v0)
    if w < 0:
        w, v = -w, -v
    norm = float(np.linalg.norm(v))
    angle = 2.0 * np.arctan2(norm, w)
    angular = v / norm * angle / dt if norm > 1e-12 else np.zeros(3)
    return np.concatenate([linear, angular])


def arm_state(state, stamp: float, gripper: float | None, previous: ArmState | None) -> ArmState:
    """``ArmState`` from a franky ``RobotState`` read at ``stamp`` (wall seconds)."""
    pose = state.O_T_EE
    rotation = np.asarray(pose.matrix)[:3, :3]
    flange_in_ee = np.asarray(state.F_T_EE.matrix)[:3, :3]
    to_flange = (rotation @ flange_in_ee.T).T  # flange <- base
    wrench = np.asarray(state.O_F_ext_hat_K, np.float64)
    reading = ArmState(
        stamp=stamp,
        joint_pos=np.asarray(state.q, np.float64),
        joint_vel=np.asarray(state.dq, np.float64),
        joint_effort=np.asarray(state.tau_J, np.float64),
        tcp_pos=np.asarray(pose.translation, np.float64),
        tcp_quat=to_wxyz(pose.quaternion),
        tcp_vel=np.zeros(6),
        wrench=np.concatenate([to_flange @ wrench[:3], to_flange @ wrench[3:]]),
        gripper=gripper,
    )
    if previous is not None and stamp - previous.stamp > 1e-4:
        raw = pose_twist(previous, reading)
        reading.tcp_vel = TWIST_SMOOTHING * raw + (1 - TWIST_SMOOTHING) * previous.tcp_vel
    return reading
