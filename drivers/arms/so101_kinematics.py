"""The SO-101's kinematics: forward (joint angles to the gripper's TCP pose) and inverse (a TCP
target to joint angles within the joints' limits), in numpy.

The chain's numbers are the arm's published model (TheRobotStudio/SO-ARM100,
``Simulation/SO101/so101_new_calib.urdf``, Apache-2.0): each joint's origin in its parent link
(xyz in m, roll-pitch-yaw in rad, URDF's fixed-axis convention), every joint turning about its
own z axis, and the joints' limits; the TCP is the model's ``gripperframe`` between the jaws,
its axes turned (``TOOL_AXES``) to the arm contract's tool frame: z out of the jaws (the
approach), x forward along the arm when the jaws point down, as the Franka's TCP; so a task's
``down_quat(yaw)`` means the same to both arms.
Angles are the model's: zero is the calibrated middle of each joint (LeRobot's calibration puts
the servos' middle there). The base frame is the model's turned a quarter about z
(``BASE_YAW``), so that the arm reaches along +x as the Franka does (the model's reach is -y).

The arm has five joints before the gripper, so not every pose is reachable: the inverse
kinematics reaches the position first and the orientation as far as the position leaves it
free (damped least squares on the geometric Jacobian, the orientation in the position's null
space), clamps to the limits at every iteration, and says how far from the target it ended.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robot_rl.ros.arm_contract import SO101_JOINTS

JOINTS = SO101_JOINTS
GRIPPER = "gripper"
ORIGINS = (
    ((0.0207909, -0.0230745, 0.0948817), (-3.14159, 6.03684e-16, 1.5708)),
    ((-0.0303992, -0.0182778, -0.0542), (-1.5708, -1.5708, 0.0)),
    ((-0.11257, -0.028, 2.46331e-16), (-1.22818e-15, 5.75928e-16, 1.5708)),
    ((-0.1349, 0.0052, 1.65232e-16), (3.2474e-15, 2.86219e-15, -1.5708)),
    ((0.0, -0.0611, 0.0181), (1.5708, -9.38083e-08, 3.14159)),
)
"""Each joint's origin in its parent link: xyz, rpy."""
BASE_YAW = np.pi / 2
"""The model's base frame in the driver's base frame: turned about z."""
TCP = ((-0.0079, -0.000218121, -0.0981274), (1.5708, 1.22465e-16, 1.5708))
"""``gripperframe`` in the gripper link (after wrist_roll)."""
LIMITS = np.array(
    [[-1.91986, 1.91986], [-1.74533, 1.74533], [-1.69, 1.69], [-1.65806, 1.65806],
     [-2.79253, 2.79253]]
)  # fmt: skip
"""rad, per joint of ``JOINTS``."""
TOOL_AXES = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])
"""The contract's tool axes in ``gripperframe``'s (columns x, y, z): the model's jaws point
along its -y, and its z lies along the arm when they point down."""
GRIPPER_LIMITS = (-0.174533, 1.74533)
"""The moving jaw, rad: closed at the low end."""


GRIPPER_OPEN = 0.3
"""rad: how far the jaw opens on an open command by default (the driver's ``gripper_open``):
about 4 cm between the jaws' pads, enough for a small cube, and the moving jaw, which dips as
it swings, stays clear of the table."""


def jaw_goal(command: float, open_angle: float = GRIPPER_OPEN, threshold: float = 0.5) -> float:
    """The jaw's angle (rad) for a ``cmd/gripper`` value (0 open .. 1 closed): its closed limit
    at or above ``threshold``, ``open_angle`` below."""
    return GRIPPER_LIMITS[0] if command >= threshold else open_angle


def closed_fraction(jaw: float, open_angle: float = GRIPPER_OPEN) -> float:
    """The jaw's angle (rad) as the arm contract's gripper position: 0 open (at ``open_angle``,
    where an open command puts it) .. 1 closed (the low limit)."""
    low = GRIPPER_LIMITS[0]
    return float(np.clip((open_angle - jaw) / (open_angle - low), 0.0, 1.0))


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = (f(a) for a in (roll, pitch, yaw) for f in (np.cos, np.sin))
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])  # fmt: skip


def transform(xyz, rpy) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3], t[:3, 3] = rpy_matrix(*rpy), xyz
    return t


def rot_z(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    t = np.eye(4)
    t[:2, :2] = [[c, -s], [s, c]]
    return t


_BASE = rot_z(BASE_YAW)
_ORIGINS = [transform(*o) for o in ORIGINS]
TOOL_IN_WRIST = transform(*TCP)
TOOL_IN_WRIST[:3, :3] = TOOL_IN_WRIST[:3, :3] @ TOOL_AXES
"""The TCP with the contract's tool axes in the wrist_roll link's frame (4x4)."""


def joint_frames(q) -> tuple[list[np.ndarray], np.ndarray]:
    """Each joint's frame (before its own rotation) and the TCP's, in the base frame."""
    t, frames = _BASE, []
    for origin, angle in zip(_ORIGINS, q, strict=True):
        t = t @ origin
        frames.append(t)
        t = t @ rot_z(angle)
    return frames, t @ TOOL_IN_WRIST


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


MAX_ITERATION_STEP = 0.2
"""rad: the joints' move per iteration of the inverse kinematics, at most."""


def _damped_pinv(jac: np.ndarray, damping: float) -> np.ndarray:
    return jac.T @ np.linalg.inv(jac @ jac.T + damping**2 * np.eye(jac.shape[0]))


def inverse(target: np.ndarray, q0, orientation_gain: float = 0.5, iterations: int = 60,
            damping: float = 0.02, tolerance: float = 1e-4) -> Solution:  # fmt: skip
    """Joint angles near ``q0`` that put the TCP at ``target`` (4x4), within the limits: the
    position first, the orientation in what the position leaves free (its Jacobian's null
    space: two of the three rotations on this arm), scaled by ``orientation_gain``."""
    q = np.clip(np.asarray(q0, float), LIMITS[:, 0], LIMITS[:, 1])
    eye = np.eye(len(JOINTS))
    for _ in range(iterations):
        jac, tcp = jacobian(q)
        e_pos = target[:3, 3] - tcp[:3, 3]
        e_rot = rotation_error(target[:3, :3], tcp[:3, :3])
        j_pos, j_rot = jac[:3], jac[3:]
        pinv_pos = _damped_pinv(j_pos, damping)
        step = pinv_pos @ e_pos
        free = eye - np.linalg.pinv(j_pos, rcond=1e-4) @ j_pos  # an exact projector
        step += (
            orientation_gain * free @ _damped_pinv(j_rot @ free, damping) @ (e_rot - j_rot @ step)
        )
        size = np.linalg.norm(step)
        if size > MAX_ITERATION_STEP:  # far from the target: small steps stay stable
            step *= MAX_ITERATION_STEP / size
        q = np.clip(q + step, LIMITS[:, 0], LIMITS[:, 1])
        if np.linalg.norm(e_pos) < tolerance and np.linalg.norm(step) < 1e-5:
            break
    tcp = forward(q)
    return Solution(
        q=q,
        position_error=float(np.linalg.norm(target[:3, 3] - tcp[:3, 3])),
        orientation_error=float(np.linalg.norm(rotation_error(target[:3, :3], tcp[:3, :3]))),
    )
