"""What a simulated operator sends, in the teleop contract's form: one ``TwistStamped`` on
``/teleop/twist`` and the ``Joy`` on ``/teleop/joy`` whose axes are that twist (linear x y z,
angular x y z), stamped alike, as the real teleop nodes publish them."""

from __future__ import annotations

import time

from geometry_msgs.msg import TwistStamped
from sensor_msgs.msg import Joy

from robot_rl.ros import convert


def publish_teleop(twist_pub, joy_pub, linear, angular, buttons: list[int]) -> None:
    """Publish the twist ``linear``/``angular`` (each three floats in [-1, 1]) and ``buttons``."""
    twist = TwistStamped()
    twist.header = convert.header(time.time(), "base")
    t = twist.twist
    t.linear.x, t.linear.y, t.linear.z = (float(v) + 0.0 for v in linear)
    t.angular.x, t.angular.y, t.angular.z = (float(v) + 0.0 for v in angular)
    joy = Joy(header=twist.header)
    joy.axes = [t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z]
    joy.buttons = list(buttons)
    twist_pub.publish(twist)
    joy_pub.publish(joy)
