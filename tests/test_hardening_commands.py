"""Stale driver commands (issue 14, point 6): a command stamped 0, stamped in the future, or
older than the watchdog bound never moves the arm twin, in-process over real ROS 2 topics; a
command stamped on the node's clock, as the actor's ROS backend stamps it, does."""

from __future__ import annotations

import time

import numpy as np
import pytest
from process_helpers import holds_within

from robot_rl.drivers.command_guard import FUTURE_TOLERANCE_S, stale_reason


def test_stale_reason_refuses_unstamped_old_and_future_stamps():
    assert stale_reason(100.0, 100.2, 0.5) is None
    assert stale_reason(100.0 + FUTURE_TOLERANCE_S / 2, 100.0, 0.5) is None  # clock skew
    assert "unstamped" in stale_reason(0.0, 100.0, 0.5)
    assert "unstamped" in stale_reason(float("nan"), 100.0, 0.5)
    assert "stale" in stale_reason(99.0, 100.0, 0.5)
    assert "future" in stale_reason(1100.0, 100.0, 0.5)


pytestmark = pytest.mark.timeout(120)


def test_the_arm_twin_refuses_unstamped_future_and_stale_commands_and_holds():
    pytest.importorskip("rclpy")
    pytest.importorskip("mujoco")
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.context import Context
    from ros_helpers import Spinner

    from robot_rl.ros.convert import pose_to_msg
    from robot_rl.ros.qos import command_qos
    from robot_rl.sim.nodes.arm_twin_node import ArmTwinNode

    context = Context()
    rclpy.init(context=context, args=["--ros-args", "-p", "speedup:=2.0", "-r", "__ns:=/arm"])
    node = ArmTwinNode(context=context)
    assert node.start()
    spinner = Spinner(node, context)
    other = Context()
    rclpy.init(context=other)
    commander = rclpy.create_node("commander", context=other)
    publisher = commander.create_publisher(PoseStamped, "/arm/cmd/ee_pose", command_qos())
    commander_spinner = Spinner(commander, other)

    def stream(target, quat, stamp, seconds=1.0):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            publisher.publish(pose_to_msg(target, quat, stamp(), "base"))
            time.sleep(0.02)

    def position():
        return np.asarray(node.reading["tcp_pos"], float).copy()

    try:
        assert holds_within(lambda: "tcp_pos" in node.reading and node.sim_time > 0.2, 20.0)
        assert holds_within(lambda: publisher.get_subscription_count() > 0, 20.0)
        time.sleep(0.5)
        start, quat = position(), np.asarray(node.reading["tcp_quat"], float)
        fresh = lambda: node.sim_time  # as the actor stamps: on the node's own clock
        # fresh commands move it (and prove the topic is connected)
        stream(start + np.array([0.0, 0.0, 0.05]), quat, fresh, seconds=1.0)
        assert holds_within(lambda: np.linalg.norm(position() - start) > 0.02, 20.0)
        assert holds_within(lambda: node.holding, timeout=20)  # the watchdog holds once they stop
        # a stamp twice the watchdog's bound (0.5 s) old needs that much sim time behind it
        assert holds_within(lambda: node.sim_time > 2.0, timeout=120)
        for name, stamp in [
            ("stamp 0", lambda: 0.0),
            ("1000 s in the future", lambda: node.sim_time + 1000.0),
            ("older than the watchdog", lambda: node.sim_time - 1.0),
        ]:
            held = position()
            stream(held + np.array([0.08, 0.0, 0.0]), quat, stamp, seconds=1.0)
            moved = np.linalg.norm(position() - held)
            assert moved < 0.01, f"a command with {name} moved the arm {moved:.3f} m"
            assert node.holding
        held = position()
        stream(held + np.array([0.05, 0.0, 0.0]), quat, fresh, seconds=1.0)
        assert holds_within(lambda: np.linalg.norm(position() - held) > 0.02, 20.0)
    finally:
        commander_spinner.close()
        spinner.close()
