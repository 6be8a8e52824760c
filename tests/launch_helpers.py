"""The real ROS 2 launch tooling in tests: its environment, and a skip that CI turns into a
failure (the launch wheels come from ../shared/wheels/ros2-launch through scripts/setup.sh)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

STAND_INS = Path(__file__).resolve().parent / "stand_ins"
"""composition_interfaces, which launch_ros imports and no wheel carries (stand_ins/README.md)."""
PREFIX = Path(sys.prefix)
"""The ROS 2 prefix that scripts/setup.sh indexes robot_rl under: the venv."""


def require_launch() -> str:
    """The ``ros2`` executable beside this Python; skips (fails in CI) when it is missing."""
    ros2 = shutil.which("ros2", path=str(Path(sys.executable).parent))
    if ros2 is None or importlib.util.find_spec("launch_ros") is None:
        why = "the ROS 2 launch wheels are not installed (scripts/setup.sh installs them)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return ros2


def ros2_env(log_dir: Path) -> dict[str, str]:
    """What a shell that sourced scripts/setup.sh has, plus the stand-ins and a log folder."""
    env = {**os.environ, "COLUMNS": "250", "PYTHONUNBUFFERED": "1", "ROS_LOG_DIR": str(log_dir)}
    env["AMENT_PREFIX_PATH"] = os.pathsep.join(
        [str(PREFIX), *[p for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]]
    )
    env["PYTHONPATH"] = os.pathsep.join(
        [str(STAND_INS), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    )
    return env
