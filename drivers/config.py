"""A driver's configuration is a dataclass; each field is one ROS 2 parameter of its node, with
its default, a one-line description and a check. ``robot_rl.ros.node_base.declare_config``
declares them on the node and returns the filled dataclass, so the hardware file, ``--ros-args
-p`` and the Python API all name the same fields.

    @dataclass(frozen=True)
    class FrankaConfig:
        robot_ip: str = param("172.16.0.2", "address of the robot's control box")
        watchdog_timeout: float = param(0.2, "hold when no fresh command within (s)", positive)

A device type registers its config with ``@register_device`` (kind, console script, node class
as ``"module:attribute"``), in a light module of its kind folder (``configs.py``: no ROS 2, no
device library); ``robot_rl.drivers.registry`` collects them.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from types import ModuleType
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


@dataclass(frozen=True)
class DeviceType:
    name: str
    kind: str
    """arm, camera, teleop or car: the folder under drivers/ and the node's role."""
    executable: str
    """Console script that runs the node (``pyproject.toml``)."""
    node: str
    """The node class, ``"module:attribute"``."""
    summary: str
    lifecycle: bool
    """Its node is a lifecycle node (``DeviceNode``: ready when ``active``); False: a plain node
    (the keyboard, the simulated cells' parts: ready once in the graph)."""
    config: type
    """The config dataclass: its fields are the node's parameters."""

    @property
    def module(self) -> str:
        return self.node.partition(":")[0]

    def load(self) -> ModuleType:
        """The node's module (imports ROS 2 and may import its device library)."""
        return importlib.import_module(self.module)

    def node_class(self) -> type:
        return getattr(self.load(), self.node.partition(":")[2])

    def parameter_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self.config))


DEVICES: dict[str, DeviceType] = {}


def register_device(
    name: str, *, kind: str, executable: str, node: str, summary: str, lifecycle: bool = True
):
    """Class decorator: the decorated dataclass is device ``name``'s config."""

    def register(config: type) -> type:
        DEVICES[name] = DeviceType(name, kind, executable, node, summary, lifecycle, config)
        return config

    return register
