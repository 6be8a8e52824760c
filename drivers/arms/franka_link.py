"""The part of the Franka driver that talks to libfranka (through franky): one thread owns the
``franky.Robot`` and ``franky.Gripper``, so no two threads ever call into libfranka at once and
a blocking call (a lost connection times out after about a second) never stalls ROS 2.

Each cycle (``state_hz``, or at once when a request arrives) the thread reads the robot state,
publishes it through the node's callback, latches a reflex or a motion error as a fault, serves
the requests the node queued (e-stop, clear error, reset, the newest pose target, the gripper)
and runs the command watchdog. A lost connection drops both objects and reconnects every
``reconnect_period``; after a reconnect the arm holds until a fresh command arrives.

Motion is franky's ``CartesianMotion`` (a Ruckig trajectory in Cartesian space, under the
robot's own Cartesian impedance controller, so the arm is compliant) towards the newest target;
a newer target takes over the running motion seamlessly. Targets reach this module already
validated and inside the workspace box; here each one is limited to one step from the measured
pose (``franka_safety.limit_step``) just before it is sent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from robot_rl.drivers.arms.franka_safety import Workspace, limit_step, normalise, quat_angle

HOLDING, FOLLOWING, RESETTING, ESTOP, FAULT, DISCONNECTED = (
    "holding", "following", "resetting", "e-stop", "fault", "disconnected")


GRIPPER_READ_HZ = 25.0
RESEND_TRANSLATION = 0.001
RESEND_ROTATION = 0.005
"""A target this close (m, rad) to the running motion's is not sent again: franky replans a
preempted Cartesian motion from the running one, and a stream of near-identical targets piles
up overshoot (2 cm past a 10 cm move against franky-sim) instead of letting it settle."""


class ConnectError(RuntimeError):
    """The robot did not answer; the message is one line naming the address."""


@dataclass
class ArmState:
    """One reading, in the units and frames of the topic contract (quaternions w-x-y-z)."""

    stamp: float
    joint_pos: np.ndarray
    joint_vel: np.ndarray
    joint_effort: np.ndarray
    tcp_pos: np.ndarray
    tcp_quat: np.ndarray
    tcp_vel: np.ndarray
    """Base frame: linear (m/s), then angular (rad/s)."""
    wrench: np.ndarray
    """External force (N) and torque (Nm) on the end effector, in the flange frame."""
    gripper: float | None
    """0 open .. 1 closed; None without a hand."""


@dataclass
class _Reset:
    pos: np.ndarray
    quat: np.ndarray
    done: threading.Event = field(default_factory=threading.Event)
    result: str = ""
    ok: bool = False
    deadline: float = 0.0


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def _has_errors(errors) -> bool:
    return any(errors.__getstate__())


def _to_wxyz(quat_xyzw) -> np.ndarray:
    x, y, z, w = np.asarray(quat_xyzw, np.float64)
    return np.array([w, x, y, z])


class FrankaLink:
    """See the module docstring. ``config`` is the node's ``FrankaConfig``."""

    def __init__(self, config, publish: Callable[[ArmState], None],
                 log: Callable[[str, str], None]):
        import franky  # only here: the driver module imports without the device library

        self._franky = franky
        self.config = config
        self.workspace = Workspace(tuple(config.workspace_min), tuple(config.workspace_max))
        self._publish = publish
        self._log = log  # (level, message)
        self._robot = None
        self._gripper = None
        self._model = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closing = False
        # requests from the node (under _lock)
        self._target: tuple[np.ndarray, np.ndarray] | None = None
        self._gripper_request: float | None = None
        self._estop_request: bool | None = None
        self._clear_request: threading.Event | None = None
        self._clear_result = ""
        self._reset_request: _Reset | None = None
        # the thread's own state
        self.mode = DISCONNECTED
        self.fault = ""
        self.estopped = False
        self.enabled = False
        self.last_command = -np.inf  # monotonic time of the last target sent
        self.last_state: ArmState | None = None
        self.cycles = 0
        self.reconnects = 0
        self._gripper_closed: bool | None = None
        self._gripper_every = max(1, round(config.state_hz / GRIPPER_READ_HZ))
        self._width: float | None = None
        self._sent: tuple[np.ndarray, np.ndarray] | None = None
        self._reset: _Reset | None = None
        self._next_reconnect = 0.0

    # -- connection ---------------------------------------------------------------------------
    def connect(self) -> None:
        """Connect (bounded by ``connect_timeout``) and set the controller up; raises
        ``ConnectError`` with one line when the robot does not answer."""
        cfg, franky = self.config, self._franky
        result: dict = {}

        def attempt() -> None:
            try:
                robot = franky.Robot(
                    cfg.robot_ip, realtime_config=franky.RealtimeConfig.Ignore,
                    controller_mode=franky.ControllerMode.CartesianImpedance)
                robot.relative_dynamics_factor = cfg.relative_dynamics_factor
                robot.set_collision_behavior(cfg.torque_threshold, cfg.force_threshold)
                robot.set_cartesian_impedance(list(cfg.cartesian_impedance))
                result["robot"] = robot
                if cfg.gripper:
                    result["gripper"] = franky.Gripper(cfg.robot_ip)
            except Exception as error:  # any libfranka failure: report it in one line
                result["error"] = error

        worker = threading.Thread(target=attempt, name="franka-connect", daemon=True)
        worker.start()
        worker.join(cfg.connect_timeout)
        if worker.is_alive():
            raise ConnectError(f"Franka at {cfg.robot_ip} did not answer within "
                               f"{cfg.connect_timeout} s")
        if "error" in result:
            raise ConnectError(f"Franka at {cfg.robot_ip} does not answer: "
                               f"{_first_line(result['error'])}")
        self._robot, self._gripper = result["robot"], result.get("gripper")
        self._model = self._robot.model
        self._gripper_closed = None
        self.mode = HOLDING
        if _has_errors(self._robot.state.current_errors):
            self.fault = f"robot reports errors: {self._robot.state.current_errors!r}"

    def start(self) -> None:
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="franka-link", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closing = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        self._drop()

    def _drop(self) -> None:
        robot, gripper, self._robot, self._gripper = self._robot, self._gripper, None, None
        if robot is not None:
            try:
                if robot.is_in_control:
                    robot.stop()
                robot.join_motion(1.0)
            except Exception:  # the connection is already gone: nothing left to stop
                pass
        del robot, gripper
        self._sent = None
        self.mode = DISCONNECTED

    # -- requests (any thread) ------------------------------------------------------------------
    def command_pose(self, pos: np.ndarray, quat: np.ndarray) -> None:
        with self._lock:
            self._target = (np.asarray(pos, np.float64), normalise(quat))
        self._wake.set()

    def command_gripper(self, closed: float) -> None:
        with self._lock:
            self._gripper_request = float(closed)
        self._wake.set()

    def set_estop(self, engaged: bool, timeout: float = 2.0) -> bool:
        """Engage or release the e-stop; True once the thread has acted on it."""
        with self._lock:
            self._estop_request = bool(engaged)
            if engaged:
                self._target = None
        self._wake.set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.estopped == bool(engaged) and self._estop_request is None:
                return True
            time.sleep(0.002)
        return False

    def clear_error(self, timeout: float = 5.0) -> str:
        done = threading.Event()
        with self._lock:
            self._clear_request = done
        self._wake.set()
        if not done.wait(timeout):
            return "error recovery did not finish in time"
        return self._clear_result

    def reset(self, pos, quat, timeout: float) -> tuple[bool, str]:
        request = _Reset(np.asarray(pos, np.float64), normalise(quat))
        request.deadline = time.monotonic() + timeout
        with self._lock:
            self._reset_request = request
            self._target = None
        self._wake.set()
        if not request.done.wait(timeout + 1.0):
            return False, "reset did not finish in time"
        return request.ok, request.result

    def enable(self, enabled: bool) -> None:
        """Accept pose targets (activate) or stop and refuse them (deactivate)."""
        with self._lock:
            self.enabled = enabled
            if not enabled:
                self._target = None
        self._wake.set()

    # -- the thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        period = 1.0 / self.config.state_hz
        next_cycle = time.monotonic()
        while not self._closing:
            if self._robot is None:
                self._reconnect()
            else:
                try:
                    self._cycle()
                except Exception as error:  # the connection is gone (or libfranka failed)
                    self._log("error", f"connection lost: {_first_line(error)}; reconnecting "
                              f"every {self.config.reconnect_period} s")
                    self._drop()
                    self._next_reconnect = time.monotonic() + self.config.reconnect_period
                    self._fail_reset("connection lost")
            next_cycle += period
            now = time.monotonic()
            if next_cycle < now:
                next_cycle = now  # late: restart the schedule rather than burst
            self._wake.wait(next_cycle - now)
            self._wake.clear()

    def _reconnect(self) -> None:
        if time.monotonic() < self._next_reconnect:
            return
        self._next_reconnect = time.monotonic() + self.config.reconnect_period
        try:
            self.connect()
        except ConnectError:
            return
        self.reconnects += 1
        self.last_command = -np.inf
        self._log("info", f"reconnected to {self.config.robot_ip}; holding until a fresh "
                  "command")

    def _cycle(self) -> None:
        robot = self._robot
        state = robot.state
        # the hand's state arrives on its own stream; a blocking read every cycle would halve
        # the state rate, and the fingers move slowly: read it at about GRIPPER_READ_HZ
        if self._gripper is not None and self.cycles % self._gripper_every == 0:
            self._width = self._gripper.width
        width = self._width if self._gripper is not None else None
        self.cycles += 1
        self._check_errors(robot, state)
        reading = self._reading(state, width)
        self.last_state = reading
        self._serve(robot, reading)
        self._publish(reading)

    def _reading(self, state, width: float | None) -> ArmState:
        pose = state.O_T_EE
        rotation = np.asarray(pose.matrix)[:3, :3]
        flange_in_ee = np.asarray(state.F_T_EE.matrix)[:3, :3]
        flange_rotation = rotation @ flange_in_ee.T  # base <- flange
        wrench = np.asarray(state.O_F_ext_hat_K, np.float64)
        # libfranka sends no measured Cartesian velocity: J(q) dq from the robot's own model
        jacobian = self._model.zero_jacobian(self._franky.Frame.EndEffector, state)
        twist = np.asarray(jacobian) @ np.asarray(state.dq, np.float64)
        gripper = None
        if width is not None:
            max_width = self._gripper.max_width or 0.08
            gripper = float(np.clip(1.0 - width / max_width, 0.0, 1.0))
        return ArmState(
            stamp=time.time(),
            joint_pos=np.asarray(state.q, np.float64),
            joint_vel=np.asarray(state.dq, np.float64),
            joint_effort=np.asarray(state.tau_J, np.float64),
            tcp_pos=np.asarray(pose.translation, np.float64),
            tcp_quat=_to_wxyz(pose.quaternion),
            tcp_vel=twist,
            wrench=np.concatenate([flange_rotation.T @ wrench[:3],
                                   flange_rotation.T @ wrench[3:]]),
            gripper=gripper,
        )

    def _check_errors(self, robot, state) -> None:
        try:
            robot.poll_motion()
        except Exception as error:  # the motion ended with an error
            if "preempted" not in str(error):
                self._set_fault(f"motion aborted: {_first_line(error)}")
        mode = state.robot_mode
        if mode == self._franky.RobotMode.Reflex or _has_errors(state.current_errors):
            self._set_fault(f"reflex: {state.current_errors!r}")
        elif mode == self._franky.RobotMode.UserStopped:
            self._set_fault("the robot's user stop is pressed")

    def _set_fault(self, reason: str) -> None:
        if not self.fault:
            self.fault = reason
            self._log("error", f"fault, holding until clear_error: {reason}")
        self._fail_reset(reason)

    def _fail_reset(self, reason: str) -> None:
        if self._reset is not None:
            self._reset.ok, self._reset.result = False, f"reset failed: {reason}"
            self._reset.done.set()
            self._reset = None

    def _serve(self, robot, reading: ArmState) -> None:
        with self._lock:
            target, self._target = self._target, None
            gripper, self._gripper_request = self._gripper_request, None
            estop, self._estop_request = self._estop_request, None
            clear, self._clear_request = self._clear_request, None
            reset, self._reset_request = self._reset_request, None
            enabled = self.enabled
        if estop is not None:
            self.estopped = estop
            if estop:
                self._fail_reset("e-stop engaged")
                self._stop(robot, immediate=True)
            self._log("warning", f"e-stop {'engaged' if estop else 'released'}")
        if clear is not None:
            self._clear_result = self._recover(robot)
            clear.set()
        blocked = self.estopped or bool(self.fault)
        if reset is not None:
            self._start_reset(robot, reset, blocked)
        if self._reset is not None:
            self._follow_reset(robot, reading)
        elif target is not None and enabled and not blocked:
            self._follow(robot, reading, *target)
        if gripper is not None and not blocked and enabled:
            self._command_gripper(gripper)
        if not enabled and self.mode in (FOLLOWING, RESETTING):
            self._stop(robot, immediate=False)
        self._watchdog(robot)
        self.mode = (ESTOP if self.estopped else FAULT if self.fault else
                     RESETTING if self._reset is not None else
                     FOLLOWING if self.mode == FOLLOWING else HOLDING)

    def _follow(self, robot, reading: ArmState, pos: np.ndarray, quat: np.ndarray) -> None:
        cfg = self.config
        pos, quat = limit_step(reading.tcp_pos, reading.tcp_quat, pos, quat,
                               cfg.max_step_translation, cfg.max_step_rotation)
        self.last_command = time.monotonic()  # a valid command feeds the watchdog, sent or not
        self.mode = FOLLOWING
        sent = self._sent
        if (sent is not None and robot.is_in_control
                and np.linalg.norm(pos - sent[0]) < RESEND_TRANSLATION
                and quat_angle(quat, sent[1]) < RESEND_ROTATION):
            return
        self._move(robot, pos, quat)

    def _move(self, robot, pos: np.ndarray, quat_wxyz: np.ndarray) -> None:
        franky = self._franky
        w, x, y, z = quat_wxyz
        robot.move(franky.CartesianMotion(franky.Affine(pos, [x, y, z, w])), asynchronous=True)
        self._sent = (np.asarray(pos, np.float64), np.asarray(quat_wxyz, np.float64))

    def _stop(self, robot, immediate: bool) -> None:
        """Immediate: libfranka's stop (the e-stop); otherwise a decelerating stop motion."""
        franky = self._franky
        if robot.is_in_control:
            if immediate:
                robot.stop()
            else:
                robot.move(franky.CartesianStopMotion(), asynchronous=True)
        self._sent = None
        if self.mode in (FOLLOWING, RESETTING):
            self.mode = HOLDING
        self._fail_reset("stopped")

    def _watchdog(self, robot) -> None:
        if self.mode != FOLLOWING:
            return
        if time.monotonic() - self.last_command > self.config.watchdog_timeout:
            self._log("info", "no fresh command: the watchdog stops the arm")
            self._stop(robot, immediate=False)

    def _recover(self, robot) -> str:
        had = self.fault
        try:
            if robot.is_in_control:
                robot.stop()
            ok = robot.recover_from_errors()
        except Exception as error:  # recovery itself refused
            return f"recovery failed: {_first_line(error)}"
        if not ok or _has_errors(robot.state.current_errors):
            return f"recovery failed: {robot.state.current_errors!r}"
        self.fault = ""
        self.mode = HOLDING
        return f"cleared: {had}" if had else "no fault"

    def _start_reset(self, robot, request: _Reset, blocked: bool) -> None:
        self._fail_reset("superseded by a new reset")
        if blocked:
            request.result = ("e-stop engaged" if self.estopped else f"fault: {self.fault}")
            request.done.set()
            return
        pos = self.workspace.clip(request.pos)
        self._move(robot, pos, request.quat)
        request.pos = pos
        self._reset = request
        self.mode = RESETTING

    def _follow_reset(self, robot, reading: ArmState) -> None:
        request = self._reset
        error = float(np.linalg.norm(reading.tcp_pos - request.pos))
        angle = quat_angle(reading.tcp_quat, request.quat)
        if error < 0.005 and angle < 0.02 and not robot.is_in_control:
            request.ok, request.result = True, f"at reset pose ({error * 1000:.1f} mm)"
        elif time.monotonic() > request.deadline:
            request.result = f"reset pose not reached ({error * 1000:.1f} mm away)"
        else:
            return
        self._reset = None
        request.done.set()
        if robot.is_in_control:
            self._stop(robot, immediate=False)
        self.mode = HOLDING

    def _command_gripper(self, closed: float) -> None:
        if self._gripper is None:
            return
        close = closed >= self.config.gripper_threshold
        if close == self._gripper_closed:
            return
        cfg = self.config
        if close:  # grasp whatever is between the fingers, with a bounded force
            self._gripper.grasp_async(0.0, cfg.gripper_speed, cfg.gripper_force,
                                      epsilon_inner=0.0, epsilon_outer=1.0)
        else:
            self._gripper.move_async(self._gripper.max_width or 0.08, cfg.gripper_speed)
        self._gripper_closed = close
