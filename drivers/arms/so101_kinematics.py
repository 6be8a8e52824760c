"""The SO-101's kinematics: forward (joint angles to the gripper's TCP pose) and inverse (a TCP
target to joint angles within the joints' limits), in numpy.

The chain's numbers are the arm's published model (TheRobotStudio/SO-ARM100,
``Simulation/SO101/so101_new_calib.urdf``, Apache-2.0): each joint's origin in its parent link
(xyz in m, roll-pitch-yaw in rad, URDF's fixed-axis convention), every joint turning about its
own z axis, and the joints' limits; the TCP is the model's ``gripperframe`` between the jaws.
Angles are the model's: zero is the calibrated middle of each joint (LeRobot's calibration puts
the servos' middle there).

The arm has five joints before the gripper, so not every pose is reachable: the inverse
kinematics follows the position and, with ``orientation_weight``, the orientation as far as it
can (damped least squares on the geometric Jacobian), clamps to the limits at every iteration,
and says how far from the target it ended.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
GRIPPER = "gripper"
ORIGINS = (
    ((0.0207909, -0.0230745, 0.0948817), (-3.14159, 6.03684e-16, 1.5708)),
    ((-0.0303992, -0.0182778, -0.0542), (-1.5708, -1.5708, 0.0)),
    ((-0.11257, -0.028, 2.46331e-16), (-1.22818e-15, 5.75928e-16, 1.5708)),
    ((-0.1349, 0.0052, 1.65232e-16), (3.2474e-15, 2.86219e-15, -1.5708)),
    ((0.0, -0.0611, 0.0181), (1.5708, -9.38083e-08, 3.14159)),
)
"""Each joint's origin in its parent link: xyz, rpy."""
TCP = ((-0.0079, -0.000218121, -0.0981274), (1.5708, 1.22465e-16, 1.5708))
"""``gripperframe`` in the gripper link (after wrist_roll)."""
LIMITS = np.array(
    [[-1.91986, 1.91986], [-1.74533, 1.74533], [-1.69, 1.69], [-1.65806, 1.65806],
     [-2.79253, 2.79253]]
)  # fmt: skip
"""rad, per joint of ``JOINTS``."""
GRIPPER_LIMITS = (-0.174533, 1.74533)
"""The moving jaw, rad: closed at the low end."""


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = (f(a) for a in (roll, pitch, yaw) for f in (np.cos, np.sin))
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])  # fmt: skip


def _transform(xyz, rpy) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3], t[:3, 3] = rpy_matrix(*rpy), xyz
    return t


def _rot_z(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    t = np.eye(4)
    t[:2, :2] = [[c, -s], [s, c]]
    return t


_ORIGINS = [_transform(*o) for o in ORIGINS]
_TCP = _transform(*TCP)


def joint_frames(q) -> tuple[list[np.ndarray], np.ndarray]:
    """Each joint's frame (before its own rotation) and the TCP's, in the base frame."""
    t, frames = np.eye(4), []
    for origin, angle in zip(_ORIGINS, q, strict=True):
        t = t @ origin
        frames.append(t)
        t = t @ _rot_z(angle)
    return frames, t @ _TCP


def forward(q) -> np.ndarray:
    """The TCP's pose in the base frame (4x4) at joint angles ``q`` (rad, ``JOINTS``' order)."""
    return joint_frames(np.asarray(q, float))[1]


def jacobian(q) -> tuple[np.ndarray, np.ndarray]:
    """The geometric Jacobian (6 x 5: linear, then angular) at ``q``, and the TCP pose."""
    frames, tcp = joint_frames(q)
    p = tcp[:3, 3]
    columns = []
    for frame in frames:
        z, origin = frame[:3, 2], frame[:3, 3]
        columns.append(np.concatenate([np.cross(z, p - origin), z]))
    return np.array(columns).T, tcp


def rotation_error(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """The rotation vector (base frame) that turns ``current`` into ``target`` (3x3 each)."""
    r = target @ current.T
    angle = np.arccos(np.clip((np.trace(r) - 1.0) / 2.0, -1.0, 1.0))
    axis = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    if angle < 1e-9:
        return 0.5 * axis
    if np.pi - angle < 1e-6:  # half a turn: the axis from the symmetric part
        axis = np.sqrt(np.maximum((np.diag(r) + 1.0) / 2.0, 0.0))
        return angle * axis
    return angle * axis / (2.0 * np.sin(angle))


@dataclass(frozen=True)
class Solution:
    q: np.ndarray
    position_error: float
    """m, from the target position to where ``q`` puts the TCP."""
    orientation_error: float
    """rad."""


def inverse(target: np.ndarray, q0, orientation_weight: float = 0.2, iterations: int = 60,
            damping: float = 0.02, tolerance: float = 2e-4) -> Solution:  # fmt: skip
    """Joint angles near ``q0`` that put the TCP at ``target`` (4x4), within the limits."""
    q = np.clip(np.asarray(q0, float), LIMITS[:, 0], LIMITS[:, 1])
    weights = np.array([1.0, 1.0, 1.0, *(orientation_weight,) * 3])
    for _ in range(iterations):
        jac, tcp = jacobian(q)
        error = np.concatenate(
            [target[:3, 3] - tcp[:3, 3], rotation_error(target[:3, :3], tcp[:3, :3])]
        )
        jw, ew = jac * weights[:, None], error * weights
        if np.linalg.norm(ew) < tolerance:
            break
        step = jw.T @ np.linalg.solve(jw @ jw.T + damping**2 * np.eye(6), ew)
        q = np.clip(q + step, LIMITS[:, 0], LIMITS[:, 1])
        if np.linalg.norm(step) < 1e-7:
            break
    tcp = forward(q)
    return Solution(
        q=q,
        position_error=float(np.linalg.norm(target[:3, 3] - tcp[:3, 3])),
        orientation_error=float(np.linalg.norm(rotation_error(target[:3, :3], tcp[:3, :3]))),
    )
