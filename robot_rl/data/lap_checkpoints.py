"""A car's lap checkpoints: taken from one driven lap, kept in a small JSON file.

Points every ``spacing`` metres along the lap are what ``car_lap`` practises towards.
``robot-rl record-lap`` writes the file, ``--checkpoints FILE`` reads it: ``format``
(``robot_rl.car_checkpoints/1``), ``frame`` (``odom``: the odometry frame, origin at the lap's
start), ``spacing`` and ``lap_length`` (m), ``start`` ([x, y, yaw] where the lap began),
``points`` ([[x, y], ...] in driving order) and free-form facts (``source``, ...).
Pure numpy + json: no ROS 2 or MuJoCo import.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from robot_rl.errors import UserError

FORMAT = "robot_rl.car_checkpoints/1"


class CheckpointsFileError(UserError):
    """A checkpoints file that is missing, malformed or too short."""


def path_length(positions: np.ndarray) -> np.ndarray:
    """Cumulative distance (N,) along positions (N, >=2), starting at 0."""
    steps = np.linalg.norm(np.diff(np.asarray(positions, np.float64)[:, :2], axis=0), axis=1)
    return np.concatenate([[0.0], np.cumsum(steps)])


def checkpoints_from_lap(poses: np.ndarray, spacing: float) -> np.ndarray:
    """Positions (K, 2) every ``spacing`` metres along a recorded lap of poses (N, >=2). The lap
    is a closed loop, so the last checkpoint is its end (= its start) unless the previous one is
    within half a spacing of it."""
    positions = np.asarray(poses, np.float64)[:, :2]
    if len(positions) < 2 or spacing <= 0:
        raise ValueError("need at least two poses and a positive spacing")
    travelled = path_length(positions)
    marks = np.arange(spacing, travelled[-1] + 1e-9, spacing)
    if travelled[-1] - (marks[-1] if len(marks) else 0.0) > spacing / 2:
        marks = np.append(marks, travelled[-1])
    xs = np.interp(marks, travelled, positions[:, 0])
    ys = np.interp(marks, travelled, positions[:, 1])
    return np.stack([xs, ys], axis=1)


class LapWatcher:
    """Says when a driven lap has closed: the car is back within ``close_radius`` of where it
    started after covering at least ``min_length`` metres (so leaving the start does not count)
    and after first getting farther than ``leave_radius`` from it."""

    def __init__(self, min_length: float, close_radius: float = 0.8, leave_radius: float = 2.0):
        if min_length <= 0 or close_radius <= 0 or leave_radius <= close_radius:
            raise ValueError("need min_length > 0 and leave_radius > close_radius > 0")
        self.min_length = min_length
        self.close_radius = close_radius
        self.leave_radius = leave_radius
        self.poses: list[np.ndarray] = []
        self.length = 0.0
        self.left_start = False

    def add(self, pose: np.ndarray) -> bool:
        """Record one pose (x, y, yaw); True once the lap has closed."""
        pose = np.asarray(pose, np.float64)[:3].copy()
        if self.poses:
            self.length += float(np.linalg.norm(pose[:2] - self.poses[-1][:2]))
        self.poses.append(pose)
        away = float(np.linalg.norm(pose[:2] - self.poses[0][:2]))
        self.left_start = self.left_start or away > self.leave_radius
        return self.closed

    @property
    def closed(self) -> bool:
        if not self.poses or not self.left_start or self.length < self.min_length:
            return False
        return float(np.linalg.norm(self.poses[-1][:2] - self.poses[0][:2])) < self.close_radius


def write_checkpoints(
    path: str | os.PathLike,
    points: np.ndarray,
    *,
    spacing: float,
    lap_length: float,
    start: np.ndarray,
    **info,
) -> Path:
    """Write the checkpoints file atomically (a temporary file, then rename)."""
    points = np.asarray(points, np.float64)
    if points.ndim != 2 or points.shape[1] != 2 or len(points) < 3:
        raise ValueError(f"need at least 3 points (K, 2), got shape {points.shape}")
    document = {
        "format": FORMAT,
        "frame": "odom",
        "spacing": float(spacing),
        "lap_length": round(float(lap_length), 3),
        "start": [round(float(v), 4) for v in np.asarray(start)[:3]],
        "points": [[round(float(x), 3), round(float(y), 3)] for x, y in points],
        **{k: v for k, v in info.items() if v is not None},
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(_dumps(document))
    os.replace(tmp, path)
    return path


def read_checkpoints_file(path: str | os.PathLike) -> dict:
    """The whole document, checked; refuses a bad file in one line."""
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise CheckpointsFileError(
            f"checkpoints file {path} not found (robot-rl record-lap writes one)"
        ) from None
    except (OSError, ValueError) as error:
        raise CheckpointsFileError(f"checkpoints file {path}: not JSON ({error})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CheckpointsFileError(f"checkpoints file {path}: format is not {FORMAT}")
    points = np.asarray(document.get("points", []), np.float64)
    if points.ndim != 2 or points.shape[1:] != (2,) or len(points) < 3:
        raise CheckpointsFileError(
            f"checkpoints file {path}: 'points' must hold at least 3 [x, y] pairs"
        )
    if not np.all(np.isfinite(points)):
        raise CheckpointsFileError(f"checkpoints file {path}: non-finite points")
    return document


def load_checkpoints(path: str | os.PathLike) -> tuple[tuple[float, float], ...]:
    """The checkpoints of a file, as ``car_lap``'s ``checkpoints`` field takes them."""
    points = read_checkpoints_file(path)["points"]
    return tuple((float(x), float(y)) for x, y in points)


def _dumps(document: dict) -> str:
    """JSON with one line per entry and one line per point (readable, diff-friendly)."""
    lines = []
    for key, value in document.items():
        if key == "points":
            rows = ",\n".join(f"    {json.dumps(point)}" for point in value)
            lines.append(f'  "points": [\n{rows}\n  ]')
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"
