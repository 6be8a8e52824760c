"""The ROS 2 teleop source: twist and joy in, operator commands out; stale input is released.

Discovery stays on this host in this run's own domain (conftest.py)."""

import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from geometry_msgs.msg import TwistStamped  # noqa: E402
from rclpy.context import Context  # noqa: E402
from sensor_msgs.msg import Joy  # noqa: E402

from robot_rl.envs.intervention import TeleopSource  # noqa: E402
from robot_rl.ros.qos import teleop_qos  # noqa: E402
from robot_rl.ros.teleop import JOY_TOPIC, TWIST_TOPIC, RosTeleopSource, TeleopMapping  # noqa: E402


def wait_for(predicate, timeout=10.0, every=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if every is not None:
            every()
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


@pytest.fixture
def device():
    """A stand-in device node publishing on the teleop topics."""
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node("fake_teleop_device", context=context)
    twist_pub = node.create_publisher(TwistStamped, TWIST_TOPIC, teleop_qos())
    joy_pub = node.create_publisher(Joy, JOY_TOPIC, teleop_qos())

    def publish(linear=(0.0, 0.0, 0.0), angular=(0.0, 0.0, 0.0), buttons=(0, 0, 0)):
        twist = TwistStamped()
        twist.twist.linear.x, twist.twist.linear.y, twist.twist.linear.z = linear
        twist.twist.angular.x, twist.twist.angular.y, twist.twist.angular.z = angular
        joy = Joy()
        joy.buttons = list(buttons)
        twist_pub.publish(twist)
        joy_pub.publish(joy)

    yield publish
    node.destroy_node()
    context.try_shutdown()


def test_twist_and_buttons_become_an_operator_command(device):
    with RosTeleopSource(max_age_s=0.3) as source:
        assert isinstance(source, TeleopSource)
        assert source.poll() is None  # nothing heard yet

        def heard():
            command = source.poll()
            # the two topics match one at a time: wait for both (button and deflection)
            heard_both = command is not None and command.button and command.action[0] != 0
            return command if heard_both else None

        publish = lambda: device(linear=(0.5, -0.25, 2.0), buttons=(1, 1, 0))
        command = wait_for(heard, every=publish)
        # z is clipped into the normalised range; button 1 closes the gripper
        np.testing.assert_allclose(command.action, [0.5, -0.25, 1.0, 1.0])
        assert command.stamp <= time.monotonic()

        # stale input counts as released: no command at all
        wait_for(lambda: source.poll() is None)


def test_mapping_picks_the_axes_a_task_needs(device):
    mapping = TeleopMapping(axes=("linear.x", "angular.z"), intervene_button=2)
    with RosTeleopSource(mapping, max_age_s=0.3, node_name="car_teleop") as source:
        publish = lambda: device(
            linear=(0.4, 0.0, 0.0), angular=(0.0, 0.0, -0.6), buttons=(0, 0, 1)
        )
        command = wait_for(lambda: source.poll(), every=publish)
        np.testing.assert_allclose(command.action, [0.4, -0.6], rtol=1e-6)
        assert command.button


def test_bad_mapping_is_refused():
    with pytest.raises(ValueError, match="unknown teleop axes"):
        TeleopMapping(axes=("linear.w",))
    with pytest.raises(ValueError, match="max_age_s"):
        RosTeleopSource(max_age_s=0)
