"""The simulated FR3 cell's operator: a person at a SpaceMouse who can see the cube.

Publishes ``/teleop/twist`` and ``/teleop/joy`` per the teleop contract (docs/ARCHITECTURE.md:
``rate_hz``, base frame, full deflection = the task's largest step, released frame when hands off).
Once per control period it acts on what a person sees: the arm's published state and the cube's
ground truth (``/sim/objects/cube/pose``, never read by the actor). It re-places the cube
(``/sim/reset_objects``) when it was put down or pushed out of reach and the hand is clear,
presses success once when it sees the task done, and answers ``/operator/query`` after a reaction
time (reject, button 4, if not done); the arm never waits on it. ``mode`` (parameter, settable at
run time; the workflow never sets it): ``correct`` (default: step in on trouble, within a budget),
``demonstrate`` (expert episodes, ``fail_share`` botched and rejected), ``label`` (varied
behaviours, success held exactly while done).
"""

from __future__ import annotations

import contextlib
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped, TwistStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from sensor_msgs.msg import JointState, Joy
from std_msgs.msg import String
from std_srvs.srv import Trigger

from robot_rl.ros import convert
from robot_rl.ros.node_base import ParameterError, declare_config, main_for
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, sensor_qos, teleop_qos
from robot_rl.ros.teleop_contract import (
    CLOSE_BUTTON,
    INTERVENE_BUTTON,
    JOY_BUTTONS,
    JOY_TOPIC,
    OPEN_BUTTON,
    REJECT_BUTTON,
    SUCCESS_BUTTON,
    TWIST_TOPIC,
)
from robot_rl.sim.cells.configs import FR3_OPERATOR_MODES as MODES
from robot_rl.sim.cells.configs import CellHumanConfig
from robot_rl.sim.cells.teleop_publish import publish_teleop
from robot_rl.sim.cells.topics import CUBE_TOPIC, RESET_OBJECTS

LIFTED = 0.03
"""The cube's bottom this far above the table counts as picked up (m; at most half the task's
lift)."""
RESTING = 0.005
"""...and back within this of the table as put down again (m)."""
HAND_CLEAR = 0.1
"""The TCP above this height leaves room to put the cube back (m; at most 2 cm below the task's
clearance height)."""
TIDY_PERIOD = 2.0
"""Seconds between two tidy-ups at most (the world places the cube at its next step)."""


def _position(msg: PoseStamped) -> np.ndarray:
    return convert.msg_to_pose(msg)[0]


def _gripper(msg: JointState) -> np.ndarray:
    return np.clip(np.array(msg.position[:1]), 0, 1)


class CellHumanNode(Node):
    config_class = CellHumanConfig
    hardware = "fr3-sim-cell/operator"
    """The diagnostics' hardware id."""

    def __init__(self, **kwargs):
        super().__init__("simulated_human", **kwargs)
        self.config = c = declare_config(self, self.config_class)
        from robot_rl.envs.task import make_task
        from robot_rl.sim.simulated_human import (
            DemonstratorConfig,
            SimulatedHuman,
            SimulatedHumanConfig,
            SuccessPress,
        )

        try:
            self.task = make_task(c.task)
            config = SimulatedHumanConfig(
                stuck_window=c.stuck_window,
                takeover_steps=c.takeover_steps,
                episode_share=c.episode_share,
                total_share=c.total_share,
                decay_steps=c.decay_steps or None,
            )
            self.rng = np.random.default_rng(c.seed)
            self.human = SimulatedHuman(self.task, self._expert(), config, rng=self.rng)
            self.demonstrator_config = DemonstratorConfig(fail_share=c.fail_share)
        except ValueError as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None
        self.lifted = min(LIFTED, self.task.lift_height / 2.0)
        self.hand_clear = min(HAND_CLEAR, self.task.clearance_height - 0.02)
        self.success_press = SuccessPress(c.success_press_s)
        self._held_until = {SUCCESS_BUTTON: -np.inf, REJECT_BUTTON: -np.inf}
        self._success_held = False
        self.presses = {"success": 0, "reject": 0}
        self.mode = ""
        self._set_mode(c.mode)
        self._seen: dict[str, tuple[np.ndarray, float]] = {}
        self._action: np.ndarray | None = None
        self._ticks = 0
        self._lifted = False
        self._last_tidy = -np.inf
        self.tidy_ups = 0
        self._arm_resetting = self._place_pending = False
        self.placements = 0
        arm = c.arm_namespace.rstrip("/")
        for msg_type, topic, key, extract in (
            (PoseStamped, f"{arm}/ee_pose", "tcp_pos", _position),
            (TwistStamped, f"{arm}/ee_twist", "tcp_vel", convert.twist_stamped_to_array),
            (JointState, f"{arm}/gripper/joint_states", "gripper_pos", _gripper),
            (PoseStamped, CUBE_TOPIC, "object/cube_pos", _position),
        ):
            self.create_subscription(msg_type, topic, self._keep(key, extract), sensor_qos())
        if c.place_each_episode:
            self.create_subscription(
                DiagnosticArray, "/diagnostics", self._on_diagnostics, DIAGNOSTICS_DEPTH
            )
        self._twist_pub = self.create_publisher(TwistStamped, TWIST_TOPIC, teleop_qos())
        self._joy_pub = self.create_publisher(Joy, JOY_TOPIC, teleop_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self._reset_client = self.create_client(Trigger, RESET_OBJECTS)
        self.create_timer(1.0 / self.task.control_hz, self._decide)
        self.create_timer(1.0 / c.rate_hz, self._publish)
        self.create_timer(1.0, self._publish_diagnostics)
        self._start_answering()
        self.add_on_set_parameters_callback(self._on_set_parameters)

    def _on_set_parameters(self, parameters) -> SetParametersResult:
        """``mode`` may change while the node runs (a person deciding what to do next); the
        other parameters of the operator take effect at start only."""
        fields = {f for f in self.config_class.__dataclass_fields__ if f != "mode"}
        for parameter in parameters:
            if parameter.name in fields:
                return SetParametersResult(
                    successful=False, reason=f"{parameter.name} is set at start only"
                )
            if parameter.name == "mode" and parameter.value not in MODES:
                return SetParametersResult(
                    successful=False,
                    reason=f"mode must be one of {', '.join(MODES)}, got {parameter.value!r}",
                )
        for parameter in parameters:
            if parameter.name == "mode":
                self._set_mode(parameter.value)
        return SetParametersResult(successful=True)

    def _set_mode(self, mode: str) -> None:
        """Begin ``mode`` afresh (a demonstrator starts its first attempt at once)."""
        from robot_rl.sim.simulated_human import Demonstrator, Labeller

        self.demonstrator = (
            Demonstrator(self.task, self.rng, self.demonstrator_config, expert=self._expert())
            if mode == "demonstrate"
            else None
        )
        self.labeller = (
            Labeller(self.task, self.rng, expert=self._expert()) if mode == "label" else None
        )
        self.human.reset()
        self._action = None
        self._success_held = False
        if mode != self.mode:
            self.get_logger().info(f"mode: {mode}")
        self.mode = mode

    def _expert(self):
        """The task's scripted expert with this operator's hand (``expert_gain``)."""
        from robot_rl.sim.experts import make_expert

        expert = make_expert(self.task)
        expert.gain = self.config.expert_gain
        expert.integral = self.config.expert_integral
        return expert

    def _keep(self, key: str, extract):
        def keep(msg) -> None:
            with contextlib.suppress(ValueError):  # a malformed message shows nothing
                self._seen[key] = (extract(msg), time.monotonic())

        return keep

    def _reading(self) -> dict | None:
        now = time.monotonic()
        reading: dict = {}
        for key in ("tcp_pos", "tcp_vel", "gripper_pos", "object/cube_pos"):
            entry = self._seen.get(key)
            if entry is None or now - entry[1] > self.config.max_age:
                return None
            reading[key] = entry[0]
        if reading["gripper_pos"].shape != (1,):
            return None
        return reading

    def _decide(self) -> None:
        reading = self._reading()
        if reading is None:  # nothing to see: hands off
            self._action = None
            return
        self._ticks += 1
        if self.demonstrator is not None:
            self._demonstrate(reading)
        elif self.labeller is not None:
            self._label(reading)
        else:
            self._correct(reading)
        if self._action is None and self.config.tidy:
            self._tidy(reading)
        if self._place_pending and float(reading["tcp_pos"][2]) > self.hand_clear:
            self._place_pending = not self._place_cube()
            self.placements += not self._place_pending

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        """A reset of the arm begins: the cube goes to a new place once the hand is clear."""
        arm = self.config.arm_namespace.rstrip("/") + "/"
        for status in msg.status:
            if not status.name.lstrip("/").startswith(arm.lstrip("/")):
                continue
            mode = next((kv.value for kv in status.values if kv.key == "mode"), None)
            if mode is None:
                continue
            resetting = mode == "resetting"
            if resetting and not self._arm_resetting:
                self._place_pending = True
            self._arm_resetting = resetting

    def _place_cube(self) -> bool:
        """Ask the world for a new random placement of the cube (a tidy-up or a new episode's);
        False when its service is not there."""
        if not self._reset_client.service_is_ready():
            return False
        self._reset_client.call_async(Trigger.Request())
        self._last_tidy = time.monotonic()
        self._lifted = False
        return True

    def _correct(self, reading: dict) -> None:
        if self.config.say_success:
            self.success_press.update(self.task.success(reading), time.monotonic())
        if self._ticks % self.task.max_episode_steps == 0:
            self.human.reset()  # the budget is per episode's worth of control periods
        command = self.human.poll(reading)
        self._action = None if command is None else np.asarray(command.action, np.float64)

    def _demonstrate(self, reading: dict) -> None:
        action, press = self.demonstrator.decide(reading)
        self._action = None if action is None else np.asarray(action, np.float64)
        if press is not None:
            button = SUCCESS_BUTTON if press == "success" else REJECT_BUTTON
            self._held_until[button] = time.monotonic() + self.config.success_press_s
            self.presses[press] += 1

    def _label(self, reading: dict) -> None:
        episodes = self.labeller.episodes
        action, success = self.labeller.decide(reading)
        self._action = None if action is None else np.asarray(action, np.float64)
        self._success_held = success
        self._lifted = self._lifted or self._cube_height(reading) > self.lifted
        if self.labeller.episodes != episodes and self.config.tidy:
            self._tidy(reading)  # between two episodes: put the cube back if it needs it

    def _cube_height(self, reading: dict) -> float:
        return float(reading["object/cube_pos"][2]) - self.task.cube_half

    def _tidy(self, reading: dict) -> None:
        cube, tcp = reading["object/cube_pos"], reading["tcp_pos"]
        height = self._cube_height(reading)
        self._lifted = self._lifted or height > self.lifted
        task = self.task
        out_of_reach = bool(
            height < -0.01
            or np.any(cube[:2] < np.asarray(task.safety_low[:2]))
            or np.any(cube[:2] > np.asarray(task.safety_high[:2]))
        )
        put_down = self._lifted and abs(height) < RESTING
        hand_clear = float(tcp[2]) > self.hand_clear
        now = time.monotonic()
        if (out_of_reach or put_down) and hand_clear and now - self._last_tidy > TIDY_PERIOD:
            if not self._place_cube():
                return
            self.tidy_ups += 1
            if self.mode == "correct":
                self.human.reset()

    def _publish(self) -> None:
        action = self._action
        linear = (0.0, 0.0, 0.0)
        buttons = [0] * JOY_BUTTONS
        if action is not None:
            linear = tuple(float(v) for v in np.clip(action[:3], -1.0, 1.0))
            grip = float(action[3]) if len(action) > 3 else 0.0
            buttons[INTERVENE_BUTTON] = 1
            buttons[CLOSE_BUTTON], buttons[OPEN_BUTTON] = int(grip > 0.5), int(grip < -0.5)
        now = time.monotonic()
        if self.mode == "label":
            buttons[SUCCESS_BUTTON] = int(self._success_held)
        elif self.mode == "demonstrate":
            for button, until in self._held_until.items():
                buttons[button] = int(now < until)
        else:
            buttons[SUCCESS_BUTTON] = int(self.success_press.down(now))
        self._press_answers(buttons)
        publish_teleop(self._twist_pub, self._joy_pub, linear, (0.0, 0.0, 0.0), buttons)

    def _start_answering(self) -> None:
        """Watch /operator/query and answer its questions (sim/cells/operator_answers.py)."""
        from robot_rl.ros.operator_buttons import QUERY_TOPIC, query_qos
        from robot_rl.sim.cells.operator_answers import QuestionAnswerer

        c = self.config
        self.answers = None
        if not c.answer_questions:
            return
        try:
            self.answers = QuestionAnswerer(
                np.random.default_rng(c.seed + 1),
                (c.answer_delay_min, c.answer_delay_max),
                c.success_press_s,
            )
        except ValueError as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None
        self.create_subscription(String, QUERY_TOPIC, self._on_query, query_qos())

    def _on_query(self, msg: String) -> None:
        reading = self._reading()
        done = None if reading is None else bool(self.task.success(reading))
        self.answers.on_line(msg.data, done, time.monotonic())

    def _press_answers(self, buttons: list[int]) -> None:
        from robot_rl.rewards.operator_input import REJECT, SUCCESS
        from robot_rl.ros.teleop_contract import REJECT_BUTTON

        if self.answers is None:
            return
        now = time.monotonic()
        self.answers.watch_success_button(self.success_press.down(now), now)
        if self.answers.update(now) is not None:
            self.get_logger().info(f"answered the actor's question: {self.answers.answered}")
        for event, button in ((SUCCESS, SUCCESS_BUTTON), (REJECT, REJECT_BUTTON)):
            if self.answers.down(event, now):
                buttons[button] = 1

    def _publish_diagnostics(self) -> None:
        human = self.human
        sees = self._reading() is not None
        doing = {"correct": "correcting", "demonstrate": "demonstrating", "label": "labelling"}
        level, message = (
            (DiagnosticStatus.OK, doing[self.mode] if self._action is not None else "watching")
            if sees
            else (DiagnosticStatus.WARN, "cannot see the arm or the cube")
        )
        values = {
            "mode": self.mode,
            "takeovers": str(human.takeovers),
            "intervened": str(human.total_intervened),
            "periods": str(human.total_steps),
            "tidy_ups": str(self.tidy_ups),
            "placements": str(self.placements),
            "success_presses": str(self.success_press.presses + self.presses["success"]),
            "reject_presses": str(self.presses["reject"]),
        }
        if self.demonstrator is not None:
            values["attempts"] = str(self.demonstrator.attempts)
        if self.labeller is not None:
            values["label_episodes"] = str(self.labeller.episodes)
        self._diag_pub.publish(
            convert.diagnostic_array(self, level, message, self.hardware, values, time.time())
        )


main = main_for(CellHumanNode)  # the console script is fr3_cell's (part:=...)
