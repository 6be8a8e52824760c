"""A ``TeleopSource`` fed by the teleop topics (types and QoS: docs/ARCHITECTURE.md), so any
device node plugs in (SpaceMouse, gamepad, keyboard) that publishes ``/teleop/twist``, the
device's deflection per axis normalised to [-1, 1] (full deflection = the task's largest step)
in the intervention wrapper's frame, and ``/teleop/joy``, buttons at the indices of
``robot_rl.ros.teleop_contract``. Devices publish at a steady rate; a message older than
``max_age_s`` (by arrival time on this host's monotonic clock, so the sender's clock does not
matter) counts as released: a device that dies or a link that drops never keeps steering. The
node is a ``BackgroundNode``."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
from geometry_msgs.msg import TwistStamped
from sensor_msgs.msg import Joy

from robot_rl.envs.backend import Reading
from robot_rl.envs.intervention import OperatorCommand
from robot_rl.ros.background_node import BackgroundNode
from robot_rl.ros.convert import twist_to_array
from robot_rl.ros.qos import teleop_qos
from robot_rl.ros.teleop_contract import (
    CLOSE_BUTTON,
    INTERVENE_BUTTON,
    JOY_TOPIC,
    OPEN_BUTTON,
    TWIST_TOPIC,
)

TWIST_FIELDS = ("linear.x", "linear.y", "linear.z", "angular.x", "angular.y", "angular.z")


@dataclass(frozen=True)
class TeleopMapping:
    """Which message field drives each action entry."""

    axes: tuple[str, ...] = ("linear.x", "linear.y", "linear.z", "gripper")
    """One per action entry: a twist field (``TWIST_FIELDS``), 'gripper' (+1 close, -1 open,
    0 keep, from the buttons) or 'none' (always 0). The default fits the arm's xyz + gripper;
    the car would use ('linear.x', 'angular.z')."""
    intervene_button: int = INTERVENE_BUTTON
    close_button: int = CLOSE_BUTTON
    open_button: int = OPEN_BUTTON

    def __post_init__(self) -> None:
        known = (*TWIST_FIELDS, "gripper", "none")
        unknown = [axis for axis in self.axes if axis not in known]
        if unknown or not self.axes:
            raise ValueError(f"unknown teleop axes {unknown or self.axes}; choose from {known}")
        if min(self.intervene_button, self.close_button, self.open_button) < 0:
            raise ValueError("button indices must be >= 0")

    def action(self, deflection, buttons) -> np.ndarray | None:
        """The action in [-1, 1] from a twist's 6 deflections (None: no twist) and the buttons'
        states; None when a value is not finite (a broken device message never steers). The
        live source and recorded bags (``robot_rl.data.ros_bag_demos``) both map through it."""
        deflection = np.zeros(6) if deflection is None else np.asarray(deflection, np.float64)
        close, release = _button(buttons, self.close_button), _button(buttons, self.open_button)
        grip = float(close) - float(release)
        action = np.zeros(len(self.axes), np.float32)
        for i, axis in enumerate(self.axes):
            if axis == "gripper":
                action[i] = grip
            elif axis != "none":
                action[i] = deflection[TWIST_FIELDS.index(axis)]
        if not np.all(np.isfinite(action)):
            return None
        return np.clip(action, -1.0, 1.0)


def _button(buttons, index: int) -> bool:
    return index < len(buttons) and bool(buttons[index])


class RosTeleopSource(BackgroundNode):
    """Subscribes to the teleop topics; ``poll`` turns the newest fresh messages into a command."""

    def __init__(
        self,
        mapping: TeleopMapping | None = None,
        max_age_s: float = 0.3,
        node_name: str = "teleop_source",
        twist_topic: str = TWIST_TOPIC,
        joy_topic: str = JOY_TOPIC,
    ):
        if max_age_s <= 0:
            raise ValueError(f"max_age_s must be > 0, got {max_age_s}")
        self.mapping = mapping or TeleopMapping()
        self.max_age_s = max_age_s
        self._lock = threading.Lock()
        self._twist: tuple[np.ndarray, float] | None = None  # (6 values, arrival time)
        self._joy: tuple[tuple[int, ...], float] | None = None
        twist = (TwistStamped, twist_topic, self._on_twist, teleop_qos())
        super().__init__(node_name, [twist, (Joy, joy_topic, self._on_joy, teleop_qos())])

    def _on_twist(self, msg: TwistStamped) -> None:
        with self._lock:
            self._twist = (twist_to_array(msg.twist), time.monotonic())

    def _on_joy(self, msg: Joy) -> None:
        with self._lock:
            self._joy = (tuple(int(b) for b in msg.buttons), time.monotonic())

    def _fresh(self, entry, now: float):
        return entry if entry is not None and now - entry[1] <= self.max_age_s else None

    def poll(self, reading: Reading | None = None) -> OperatorCommand | None:
        now = time.monotonic()
        with self._lock:
            twist, joy = self._fresh(self._twist, now), self._fresh(self._joy, now)
        if twist is None and joy is None:
            return None
        buttons = joy[0] if joy is not None else ()
        action = self.mapping.action(twist[0] if twist is not None else None, buttons)
        if action is None:
            return None
        stamp = max(entry[1] for entry in (twist, joy) if entry is not None)
        return OperatorCommand(
            action=action, button=_button(buttons, self.mapping.intervene_button), stamp=stamp
        )

    def reset(self) -> None:
        """Nothing per episode: the operator's device state carries over."""

    def __enter__(self) -> RosTeleopSource:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
