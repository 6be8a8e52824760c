"""The simulated car cell's operator: a person at the gamepad who can see the car on its track.

Publishes ``/teleop/twist`` and ``/teleop/joy`` per the teleop contract (docs/ARCHITECTURE.md:
``linear.x`` speed and ``angular.z`` steering deflection in [-1, 1], button 0 the held RB that
intervenes, all zeros while hands are off), wall-stamped at ``rate_hz``, so ``record-lap`` and the
actor read it through the same ``RosTeleopSource`` as a real pad. Once per control period it reads
the ground truth (``/sim/car/state``, never read by the robot) and steers as ``CarLapExpert``.
``mode`` (parameter, settable at run time):
- ``drive`` (``record-lap``): clean slow laps, RB held, speed stick at ``speed`` / ``max_speed``;
- ``demonstrate`` (``record-demos``): expert actions at ``demo_speed``; success (button 3) after
  ``demo_seconds`` of clean driving; a wall contact (``/sim/collision``) restarts the clock;
- ``watch`` (``up robot``, ``eval``): hands off; if ``correct_offset`` > 0, takes over when that far
  off the centreline until back within half of it (bounded by ``takeover_steps``, ``total_share``).
"""

from __future__ import annotations

import contextlib
import math
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import TwistStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from sensor_msgs.msg import Joy
from std_msgs.msg import Bool, Float64MultiArray

from robot_rl.ros import convert
from robot_rl.ros.node_base import declare_config, main_for
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, sensor_qos, state_qos, teleop_qos
from robot_rl.ros.teleop_contract import (
    INTERVENE_BUTTON,
    JOY_BUTTONS,
    JOY_TOPIC,
    SUCCESS_BUTTON,
    TWIST_TOPIC,
)
from robot_rl.sim.cells.configs import CAR_OPERATOR_MODES as MODES
from robot_rl.sim.cells.configs import CarHumanConfig
from robot_rl.sim.cells.teleop_publish import publish_teleop
from robot_rl.sim.cells.topics import CAR_STATE_TOPIC, COLLISION_TOPIC

MOVING = 0.3
"""Above this speed (m/s) the car counts as driving (demonstrate's clock runs)."""


def _pose(qpos: np.ndarray) -> np.ndarray:
    """x, y, yaw of the car's free joint (qpos[0:3] position, qpos[3:7] quaternion w x y z)."""
    w, x, y, z = qpos[3:7]
    return np.array([qpos[0], qpos[1], math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))])


class CarHumanNode(Node):
    config_class = CarHumanConfig

    def __init__(self, **kwargs):
        super().__init__("simulated_human", **kwargs)
        self.config = c = declare_config(self, CarHumanConfig)
        from robot_rl.envs.task import make_task
        from robot_rl.sim.car_track import DEFAULT_TRACK, centreline
        from robot_rl.sim.experts.car_lap import CarLapExpert

        self.task = make_task("car_lap")
        self.expert = CarLapExpert(self.task, demo_speed=c.speed)
        self.demo_expert = CarLapExpert(self.task, demo_speed=c.demo_speed or None)
        self._clean = 0.0  # seconds driven cleanly since the last press or contact
        self._pressed_until = -math.inf
        self.presses = 0
        self.line = centreline(DEFAULT_TRACK)
        self.mode = c.mode
        self._seen: tuple[float, np.ndarray, float] | None = None  # (stamp, pose, arrival)
        self._speed = 0.0
        self._sticks: np.ndarray | None = None  # (speed, steering) deflections; None: hands off
        self._correcting = 0
        self.periods = self.corrected = self.takeovers = 0
        self.create_subscription(Float64MultiArray, CAR_STATE_TOPIC, self._on_state, state_qos())
        self.create_subscription(Bool, COLLISION_TOPIC, self._on_collision, sensor_qos())
        self._twist_pub = self.create_publisher(TwistStamped, TWIST_TOPIC, teleop_qos())
        self._joy_pub = self.create_publisher(Joy, JOY_TOPIC, teleop_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self.create_timer(1.0 / c.control_hz, self._decide)
        self.create_timer(1.0 / c.rate_hz, self._publish)
        self.create_timer(1.0, self._publish_diagnostics)
        self.add_on_set_parameters_callback(self._on_set_parameters)

    def _on_set_parameters(self, parameters) -> SetParametersResult:
        """``mode`` may change while the node runs; the others take effect at start only."""
        for parameter in parameters:
            if parameter.name != "mode" and parameter.name in CarHumanConfig.__dataclass_fields__:
                return SetParametersResult(
                    successful=False, reason=f"{parameter.name} is set at start only"
                )
            if parameter.name == "mode" and parameter.value not in MODES:
                return SetParametersResult(
                    successful=False,
                    reason=f"mode must be one of {', '.join(MODES)}, got {parameter.value!r}",
                )
        for parameter in parameters:
            if parameter.name == "mode" and parameter.value != self.mode:
                self.get_logger().info(f"mode: {parameter.value}")
                self.mode, self._sticks, self._correcting = parameter.value, None, 0
                self._clean = 0.0
        return SetParametersResult(successful=True)

    def _on_state(self, msg: Float64MultiArray) -> None:
        with contextlib.suppress(ValueError, IndexError):  # a malformed message shows nothing
            data = np.asarray(msg.data, np.float64)
            stamp, pose = float(data[0]), _pose(data[1:8])
            if not np.all(np.isfinite(pose)):
                return
            previous = self._seen
            if previous is not None and stamp > previous[0]:
                travelled = pose[:2] - previous[1][:2]
                heading = np.array([math.cos(pose[2]), math.sin(pose[2])])
                speed = float(travelled @ heading) / (stamp - previous[0])
                self._speed = 0.7 * self._speed + 0.3 * speed  # what the eye makes of it
            self._seen = (stamp, pose, time.monotonic())

    def _on_collision(self, msg: Bool) -> None:
        if msg.data:  # a botched attempt: clean driving counts from now on
            self._clean = 0.0

    def _pose_now(self) -> np.ndarray | None:
        seen = self._seen
        if seen is None or time.monotonic() - seen[2] > self.config.max_age:
            return None
        return seen[1]

    def _decide(self) -> None:
        pose = self._pose_now()
        if pose is None:  # nothing to see: hands off
            self._sticks = None
            return
        self.periods += 1
        action = self.expert.act({"pose": pose, "velocity": np.array([self._speed, 0.0, 0.0])})
        if self.mode == "demonstrate":
            reading = {"pose": pose, "velocity": np.array([self._speed, 0.0, 0.0])}
            self._sticks = self.demo_expert.act(reading).astype(np.float64)
            if self._speed > MOVING:  # a car standing still (nobody forwards the sticks) waits
                self._clean += 1.0 / self.config.control_hz
            if self._clean >= self.config.demo_seconds:
                self._pressed_until, self._clean = time.monotonic() + self.config.press_s, 0.0
                self.presses += 1
            return
        if self.mode == "drive":
            task = self.task
            speed = task.min_speed + (action[0] + 1) / 2 * (task.max_speed - task.min_speed)
            self._sticks = np.array([min(speed / self.config.max_speed, 1.0), action[1]])
            return
        self._sticks = action.astype(np.float64) if self._watch_corrects(pose) else None

    def _watch_corrects(self, pose: np.ndarray) -> bool:
        """Watch mode: whether this period is a correction (and count it)."""
        c = self.config
        if c.correct_offset <= 0:
            return False
        offset = float(np.linalg.norm(self.line.points[self.line.nearest(pose[:2])] - pose[:2]))
        if self._correcting > 0:
            self._correcting -= 1
            if offset < c.correct_offset / 2:
                self._correcting = 0
        elif offset > c.correct_offset and self.corrected < c.total_share * self.periods:
            self._correcting = c.takeover_steps
            self.takeovers += 1
        self.corrected += int(self._correcting > 0)
        return self._correcting > 0

    def _publish(self) -> None:
        sticks = self._sticks
        speed = steer = 0.0
        buttons = [0] * JOY_BUTTONS
        if sticks is not None:
            speed, steer = (float(np.clip(v, -1.0, 1.0)) for v in sticks[:2])
            buttons[INTERVENE_BUTTON] = 1  # RB held while its hands are on the sticks
        buttons[SUCCESS_BUTTON] = int(time.monotonic() < self._pressed_until)
        publish_teleop(
            self._twist_pub, self._joy_pub, (speed, 0.0, 0.0), (0.0, 0.0, steer), buttons
        )

    def _publish_diagnostics(self) -> None:
        sees = self._pose_now() is not None
        doing = {"drive": "driving", "demonstrate": "demonstrating", "watch": "correcting"}
        level, message = (
            (DiagnosticStatus.OK, doing[self.mode] if self._sticks is not None else "watching")
            if sees
            else (DiagnosticStatus.WARN, "cannot see the car")
        )
        values = {
            "mode": self.mode,
            "periods": str(self.periods),
            "takeovers": str(self.takeovers),
            "corrected": str(self.corrected),
            "speed_seen": f"{self._speed:.2f}",
            "success_presses": str(self.presses),
        }
        self._diag_pub.publish(
            convert.diagnostic_array(
                self, level, message, "car-sim-cell/operator", values, time.time()
            )
        )


main = main_for(CarHumanNode)  # the console script is car_cell's (part:=...)
