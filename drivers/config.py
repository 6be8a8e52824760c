"""A driver's configuration is a dataclass; each field is one ROS 2 parameter of its node, with
its default, a one-line description and a check. ``robot_rl.ros.node_base.declare_config``
declares them on the node and returns the filled dataclass, so the hardware file, ``--ros-args
-p`` and the Python API all name the same fields.

    @dataclass(frozen=True)
    class FrankaConfig:
        robot_ip: str = param("172.16.0.2", "address of the robot's control box")
        watchdog_timeout: float = param(0.2, "hold when no fresh command within (s)", positive)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

Check = tuple[Callable[[Any], bool], str]
"""A predicate on the value and what it demands, in words (for the error message)."""

positive: Check = (lambda v: v > 0, "must be > 0")
non_negative: Check = (lambda v: v >= 0, "must be >= 0")


def one_of(*choices: Any) -> Check:
    return (lambda v: v in choices, f"must be one of {', '.join(map(str, choices))}")


def length(n: int) -> Check:
    return (lambda v: len(v) == n, f"must have {n} elements")


def param(default: Any, description: str, check: Check | None = None) -> Any:
    """A config field that is also a ROS 2 parameter. Lists are stored as tuples."""
    if isinstance(default, list):
        default = tuple(default)
    return dataclasses.field(default=default, metadata={"description": description, "check": check})
