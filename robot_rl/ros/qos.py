"""The QoS profiles of the topic contract (docs/ARCHITECTURE.md), in one place so no node picks
its own.

Sensor streams are best effort with a shallow queue: a late image is worth less than the next
one, and a reliable stream would stall behind a lost sample. Commands and teleop are reliable
with depth 1: only the newest command matters, but it must arrive. A best-effort subscriber
matches a reliable publisher; the reverse does not, so subscribers to sensors must use
``sensor_qos``.
"""

from __future__ import annotations

from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
)

SENSOR_DEPTH_RANGE = (1, 5)


def sensor_qos(depth: int = 5) -> QoSProfile:
    """Best effort, keep last ``depth`` (1-5), volatile: cameras, joint states, odometry."""
    low, high = SENSOR_DEPTH_RANGE
    if not low <= int(depth) <= high:
        raise ValueError(f"sensor QoS depth must be in {low}..{high}, got {depth}")
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=int(depth),
        reliability=ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.VOLATILE,
    )


def command_qos() -> QoSProfile:
    """Reliable, keep last 1, volatile: ``cmd/ee_pose``, ``cmd/gripper``, ``cmd_vel``."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=1,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE,
    )


def teleop_qos() -> QoSProfile:
    """Teleop streams are commands: reliable, depth 1."""
    return command_qos()


def state_qos() -> QoSProfile:
    """Twin-internal full simulation state (``/sim/state``): sensor-like, newest only."""
    return sensor_qos(1)


DIAGNOSTICS_DEPTH = 10
"""``/diagnostics`` uses the default profile (reliable, depth 10), as ROS tools expect."""
