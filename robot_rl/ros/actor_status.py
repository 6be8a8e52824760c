"""The actor reports itself on ``/diagnostics``: control rate, weights version, outbox backlog.

Everything is read from objects the control loop already keeps up to date (the outbox's
sequence counter and backlog, the transport client's newest weights), on a timer of the
backend's node, so the loop itself does no extra work. The control rate is measured in
transitions per second on the robot's clock (simulated seconds on the twin) and on the wall
clock: the first says whether the loop keeps the task's rate, the second what the host sees.
"""

from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.clock import Clock, ClockType

from robot_rl.ros.convert import diagnostic_array
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH

SLOW_FRACTION = 0.8
"""Below this share of the task's control rate the status is a warning."""


class ActorDiagnostics:
    def __init__(self, backend, outbox, client, period: float = 1.0):
        self.backend, self.outbox, self.client = backend, outbox, client
        self._node = node = backend.node
        self._pub = node.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self._last = (outbox.next_seq, backend.now(), time.monotonic())
        self._timer = node.create_timer(
            period, self.publish, clock=Clock(clock_type=ClockType.STEADY_TIME)
        )

    def values(self) -> dict[str, float | int | bool]:
        seq, robot_now, wall_now = self.outbox.next_seq, self.backend.now(), time.monotonic()
        last_seq, last_robot, last_wall = self._last
        self._last = (seq, robot_now, wall_now)
        robot_dt, wall_dt = robot_now - last_robot, wall_now - last_wall
        weights = self.client.latest_weights()
        return {
            "steps": seq,
            "control_hz": (seq - last_seq) / robot_dt if robot_dt > 0 else 0.0,
            "control_hz_wall": (seq - last_seq) / wall_dt if wall_dt > 0 else 0.0,
            "target_hz": self.backend.control_hz,
            "weights_version": weights[0] if weights else -1,
            "outbox_backlog": self.outbox.backlog,
            "learner_connected": self.client.connected,
        }

    def publish(self) -> None:
        values = self.values()
        if not values["learner_connected"]:
            level, message = DiagnosticStatus.WARN, "learner not connected (outbox grows)"
        elif 0 < values["control_hz"] < SLOW_FRACTION * values["target_hz"]:
            level, message = DiagnosticStatus.WARN, "control loop slower than the task's rate"
        else:
            level, message = DiagnosticStatus.OK, "acting"
        texts = {k: f"{v:.2f}" if isinstance(v, float) else str(v) for k, v in values.items()}
        stamp = max(self.backend.now(), 0.0)
        self._pub.publish(
            diagnostic_array(self._node, level, message, "robot_rl/actor", texts, stamp)
        )


def report_actor_status(env, outbox, client) -> ActorDiagnostics:
    """Start publishing the actor's status from the node of ``env``'s ROS backend."""
    return ActorDiagnostics(env.backend, outbox, client)
