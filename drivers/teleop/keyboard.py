"""Keyboard teleop for a terminal: publishes ``/teleop/twist`` and ``/teleop/joy`` (the
teleop contract of ``robot_rl.ros.teleop_contract``, which ``robot_rl.ros.teleop.RosTeleopSource``
and the actor's ``--operator joy`` read).

    python -m robot_rl.drivers.teleop.keyboard [--ros-args -p rate_hz:=20.0 ...]

Keys: w/s +x/-x, a/d +y/-y, r/f +z/-z, c close the gripper, o open it, space toggles
"intervening" (the hold-to-intervene button), q or Ctrl-C quits. The operator's answers (Joy
buttons 3 and 4, for an actor run with ``--operator joy``): y says success (reward 1, the
episode ends; it also confirms a reward classifier's success), n rejects a classifier's success
(``success_key`` and ``reject_key`` change them). Like the actor's own ``--operator keyboard``
keys, but typed in this terminal, so one terminal steers and answers.

A terminal reports key presses, never releases, so a motion key counts as held for ``key_hold_s``
after its last press; holding it down keeps it held through the terminal's auto-repeat (so a
held y is one success, not many). The terminal is put in raw mode (every key arrives at once,
unechoed) and restored on exit, and a last message releases everything so the robot goes back
to the policy without waiting for the staleness bound.
"""

from __future__ import annotations

import functools
import os
import select
import sys
import termios
import time
import tty
from collections.abc import Sequence
from dataclasses import dataclass

from robot_rl.drivers.config import one_of, param, positive
from robot_rl.ros.teleop_contract import (
    CLOSE_BUTTON,
    INTERVENE_BUTTON,
    JOY_BUTTONS,
    OPEN_BUTTON,
    REJECT_BUTTON,
    SUCCESS_BUTTON,
)

MOTION_KEYS = {
    "w": (0, +1.0),
    "s": (0, -1.0),
    "a": (1, +1.0),
    "d": (1, -1.0),
    "r": (2, +1.0),
    "f": (2, -1.0),
}
GRIPPER_KEYS = {"c": CLOSE_BUTTON, "o": OPEN_BUTTON}  # Joy button index pressed by the key
INTERVENE_KEY = " "
QUIT_KEYS = ("q", "\x03", "\x04")  # q, Ctrl-C (raw mode delivers it as a byte), Ctrl-D
TAKEN_KEYS = (*MOTION_KEYS, *GRIPPER_KEYS, INTERVENE_KEY, *QUIT_KEYS)


def help_line(success_key: str = "y", reject_key: str = "n") -> str:
    return (
        "keyboard teleop: w/s +x/-x  a/d +y/-y  r/f +z/-z  c close  o open  "
        f"space toggle intervene  {success_key} success  {reject_key} reject  q quit"
    )


def _one_free_key(key: str) -> bool:
    return (
        len(key) == 1
        and key.isprintable()
        and not key.isspace()
        and key.lower() not in (TAKEN_KEYS)
    )


_free_key = (_one_free_key, "must be one printable key that no other command uses")


@dataclass(frozen=True)
class TeleopOutput:
    linear: tuple[float, float, float]
    buttons: tuple[int, ...]
    """Joy buttons (``JOY_BUTTONS``): intervene, close the gripper, open it, success, reject."""


class KeyboardState:
    """Key presses in, the device's deflection and buttons out (no ROS, no terminal)."""

    def __init__(
        self,
        speed: float = 1.0,
        key_hold_s: float = 0.5,
        success_key: str = "y",
        reject_key: str = "n",
    ):
        if not 0.0 < speed <= 1.0:
            raise ValueError(f"speed must lie in (0, 1], got {speed}")
        if key_hold_s <= 0:
            raise ValueError(f"key_hold_s must be > 0, got {key_hold_s}")
        for name, key in (("success_key", success_key), ("reject_key", reject_key)):
            if not _one_free_key(key):
                raise ValueError(f"{name} {key!r} {_free_key[1]}")
        if success_key.lower() == reject_key.lower():
            raise ValueError("success_key and reject_key must differ")
        self.speed = speed
        self.key_hold_s = key_hold_s
        self.button_keys = {
            **GRIPPER_KEYS,
            success_key.lower(): SUCCESS_BUTTON,
            reject_key.lower(): REJECT_BUTTON,
        }
        self.intervening = False
        self.quit = False
        self._pressed: dict[str, float] = {}  # key -> time of its last press

    def press(self, key: str, now: float) -> None:
        key = key.lower() if key.isalpha() else key
        if key in QUIT_KEYS:
            self.quit = True
        elif key == INTERVENE_KEY:
            self.intervening = not self.intervening
        elif key in MOTION_KEYS or key in self.button_keys:
            self._pressed[key] = now

    def output(self, now: float) -> TeleopOutput:
        held = {k for k, t in self._pressed.items() if now - t <= self.key_hold_s}
        linear = [0.0, 0.0, 0.0]
        for key in held & set(MOTION_KEYS):
            axis, sign = MOTION_KEYS[key]
            linear[axis] += sign * self.speed  # opposite keys cancel
        buttons = [0] * JOY_BUTTONS
        buttons[INTERVENE_BUTTON] = int(self.intervening)
        for key in held & set(self.button_keys):
            buttons[self.button_keys[key]] = 1
        return TeleopOutput(tuple(linear), tuple(buttons))

    def released(self) -> TeleopOutput:
        return TeleopOutput((0.0, 0.0, 0.0), (0,) * JOY_BUTTONS)


class RawTerminal:
    """Context manager: the terminal in raw mode, its settings restored however we leave."""

    def __init__(self, fd: int):
        if not os.isatty(fd):
            raise RuntimeError("keyboard teleop needs a terminal on stdin (run it in a shell)")
        self.fd = fd
        self._saved = None

    def __enter__(self) -> RawTerminal:
        self._saved = termios.tcgetattr(self.fd)
        tty.setraw(self.fd)
        return self

    def __exit__(self, *exc) -> None:
        termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

    def read_keys(self, timeout: float) -> str:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return ""
        data = os.read(self.fd, 64)
        if not data:
            return QUIT_KEYS[-1]  # end of input: quit
        return data.decode(errors="ignore")


@dataclass(frozen=True)
class KeyboardConfig:
    """The keyboard node's parameters (``robot_rl.drivers.config``)."""

    rate_hz: float = param(
        20.0, "publishing rate (Hz); keep it above 1 / the source's staleness bound", positive
    )
    speed: float = param(
        1.0,
        "deflection of a motion key, in (0, 1] of the task's largest step",
        (lambda v: 0.0 < v <= 1.0, "must lie in (0, 1]"),
    )
    key_hold_s: float = param(
        0.5, "a key counts as held this long after its last press (s)", positive
    )
    success_key: str = param(
        "y",
        "key that says success: /teleop/joy button 3, which the actor's --operator joy pays as "
        "reward 1 and as a classifier's confirmation",
        _free_key,
    )
    reject_key: str = param(
        "n", "key that rejects a reward classifier's success: /teleop/joy button 4", _free_key
    )
    frame_id: str = param("base", "frame of the twist: 'base' or 'tool'", one_of("base", "tool"))


@functools.cache
def _node_class():
    """The node class, built on first use so that importing this module needs no ROS 2."""
    from geometry_msgs.msg import TwistStamped
    from rclpy.node import Node
    from sensor_msgs.msg import Joy
    from std_msgs.msg import Header

    from robot_rl.ros.node_base import declare_config
    from robot_rl.ros.qos import teleop_qos
    from robot_rl.ros.teleop import JOY_TOPIC, TWIST_TOPIC

    class KeyboardTeleopNode(Node):
        """Parameters and the two teleop publishers; the terminal loop lives in ``main``."""

        def __init__(self, **kwargs):
            super().__init__("keyboard_teleop", **kwargs)
            self.config = declare_config(self, KeyboardConfig)
            self._twist_pub = self.create_publisher(TwistStamped, TWIST_TOPIC, teleop_qos())
            self._joy_pub = self.create_publisher(Joy, JOY_TOPIC, teleop_qos())

        def publish(self, out: TeleopOutput) -> None:
            stamp = self.get_clock().now().to_msg()
            twist = TwistStamped(header=Header(stamp=stamp, frame_id=self.config.frame_id))
            twist.twist.linear.x, twist.twist.linear.y, twist.twist.linear.z = out.linear
            joy = Joy(header=Header(stamp=stamp), buttons=list(out.buttons))
            self._twist_pub.publish(twist)
            self._joy_pub.publish(joy)

    return KeyboardTeleopNode


def __getattr__(name: str):
    if name == "NODE":  # the registry's node class, without importing ROS 2 before it is asked
        return _node_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


CONFIG = KeyboardConfig


def main(args: Sequence[str] | None = None) -> int:
    from robot_rl.ros.node_help import help_asked, help_text, parameters_of, summary_of

    if help_asked(args):  # before rclpy and the terminal
        print(help_text(summary_of(__name__), [("parameters", parameters_of(KeyboardConfig))]))
        return 0
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(args=args, context=context)
    node = None
    try:
        try:
            node = _node_class()(context=context)
            publish = node.publish
            c = node.config
            state = KeyboardState(c.speed, c.key_hold_s, c.success_key, c.reject_key)
            terminal = RawTerminal(sys.stdin.fileno())
        except (ValueError, RuntimeError) as err:
            print(f"keyboard_teleop: {err}", file=sys.stderr)
            return 2
        period = 1.0 / node.config.rate_hz
        with terminal:
            # raw mode: a bare \n would not return the carriage
            sys.stdout.write(help_line(c.success_key, c.reject_key) + "\r\n")
            sys.stdout.flush()
            next_publish = time.monotonic()
            while not state.quit:
                for key in terminal.read_keys(max(0.0, next_publish - time.monotonic())):
                    state.press(key, time.monotonic())
                now = time.monotonic()
                if now >= next_publish:
                    publish(state.output(now))
                    next_publish = now + period
            publish(state.released())
            # Give the reliable release a moment to reach subscribers before the node goes.
            time.sleep(0.2)
        return 0
    finally:
        if node is not None:
            node.destroy_node()
        context.try_shutdown()


if __name__ == "__main__":
    raise SystemExit(main())
