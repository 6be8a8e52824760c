"""Keyboard teleop for a terminal: publishes ``/teleop/twist`` and ``/teleop/joy`` (the teleop
contract of ``robot_rl.ros.teleop_contract``, read by the actor's teleop source and ``--operator
joy``).

    python -m robot_rl.drivers.teleop.keyboard [--ros-args -p rate_hz:=20.0 ...]

Keys (``keyboard_state``): w/s, a/d, r/f move along x, y, z, c closes the gripper, o opens it,
space toggles intervening, y says success, n rejects a classifier's success, q or Ctrl-C quits.
A motion key counts as held for ``key_hold_s`` after its last press (a terminal reports no
releases). The terminal is in raw mode until exit, and a last message releases everything.
"""

from __future__ import annotations

import os
import select
import sys
import termios
import time
import tty
from collections.abc import Sequence

import rclpy
from geometry_msgs.msg import TwistStamped
from rclpy.context import Context
from rclpy.node import Node
from sensor_msgs.msg import Joy
from std_msgs.msg import Header

from robot_rl.drivers.teleop.configs import KeyboardConfig
from robot_rl.drivers.teleop.keyboard_state import (
    QUIT_KEYS,
    KeyboardState,
    TeleopOutput,
    help_line,
)
from robot_rl.ros.node_base import declare_config, node_help
from robot_rl.ros.node_help import help_asked
from robot_rl.ros.qos import teleop_qos
from robot_rl.ros.teleop import JOY_TOPIC, TWIST_TOPIC


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


class KeyboardTeleopNode(Node):
    """Parameters and the two teleop publishers; the terminal loop lives in ``main``."""

    config_class = KeyboardConfig

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


def main(args: Sequence[str] | None = None) -> int:
    if help_asked(args):  # before rclpy and the terminal
        print(node_help(KeyboardTeleopNode))
        return 0
    context = Context()
    rclpy.init(args=args, context=context)
    node = None
    try:
        try:
            node = KeyboardTeleopNode(context=context)
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
