"""Arm geometry shared by the arm tasks, their experts and the arm reset: the tool-down
orientation and yaw, position-delta scaling with the task's safety box. Pure numpy: usable on
the robot without MuJoCo."""

from __future__ import annotations

import numpy as np


def down_quat(yaw: float = 0.0) -> np.ndarray:
    """w-x-y-z quaternion of a tool pointing straight down, turned by ``yaw`` about world z
    (the rotation Rz(yaw) Rx(pi); at yaw 0 the tool x axis is the world x axis)."""
    return np.array([0.0, np.cos(yaw / 2), np.sin(yaw / 2), 0.0])


def yaw_of(quat: np.ndarray) -> float:
    """Heading about world z of a w-x-y-z quaternion (the tool's x axis projected on the table)."""
    w, x, y, z = (float(v) for v in quat)
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


def wrap(angle: float, period: float = 2 * np.pi) -> float:
    """``angle`` wrapped into [-period/2, period/2)."""
    return float((angle + period / 2) % period - period / 2)


def position_step(
    action_xyz: np.ndarray, tcp_pos: np.ndarray, step: float, low, high
) -> tuple[np.ndarray, np.ndarray]:
    """Target = measured TCP + action * step, clipped to the safety box [low, high].

    Returns the target and the normalised delta actually applied. Deltas are taken from the
    measured pose (not the last target), so a blocked arm never winds up a large error.
    """
    tcp_pos = np.asarray(tcp_pos, np.float64)
    target = np.clip(tcp_pos + np.clip(action_xyz, -1.0, 1.0) * step, low, high)
    applied = np.clip((target - tcp_pos) / step, -1.0, 1.0)
    return target, applied
