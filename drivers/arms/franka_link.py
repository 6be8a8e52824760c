"""The Franka driver's link to libfranka (through franky): one thread owns the ``franky.Robot``
and the hand, so libfranka is never called from two threads and a blocking call never stalls ROS 2.

Each cycle (``state_hz``, or at once on a request) it publishes the state, latches reflexes and
motion errors as faults, serves queued requests (e-stop, clear error, reset, newest pose target,
gripper) and runs the command watchdog; a lost connection reconnects every ``reconnect_period``.
Motion: one franky ``CartesianImpedanceTrackingMotion`` whose reference this thread moves, its
error clipped (``translational_error_clip``, ``rotational_error_clip``) so force and speed stay
bounded; never preempted; e-stop and deactivate end it with libfranka's stop. Safety: targets
arrive validated and inside the workspace box and move the reference at most one step from the
measured pose (``arm_safety.limit_step``); non-finite or impossible readings are refused
(``samples``); after a reconnect, watchdog, reset or fault the arm holds until a fresh command; an
unexpected exception stops libfranka, is reported on /diagnostics and reconnects.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from robot_rl.drivers.arms.arm_safety import Workspace, limit_step, normalise, quat_angle
from robot_rl.drivers.arms.franka_hand import Hand, first_line
from robot_rl.drivers.arms.franka_joint_reset import JointResetPolicy
from robot_rl.drivers.arms.franka_state import ArmState, arm_state, has_errors
from robot_rl.drivers.supervision import SensorGate, SupervisedLoop, Watchdog

HOLDING, FOLLOWING, RESETTING, ESTOP, FAULT, DISCONNECTED = (
    "holding",
    "following",
    "resetting",
    "e-stop",
    "fault",
    "disconnected",
)


RESET_TOLERANCE = (0.01, 0.05)
"""The reset pose counts as reached within this (m, rad): an impedance controller settles a few
millimetres off its reference under unmodelled load."""

RECOVERY_ATTEMPTS = 3
"""Automatic error recovery is tried this often before clear_error fails."""

READING_BOUNDS = {
    "joint_pos": 2 * np.pi,
    "joint_vel": 10.0,
    "joint_effort": 500.0,
    "tcp_pos": 3.0,
    "tcp_quat": 1.0 + 1e-6,
    "tcp_vel": 50.0,
    "wrench": 1e4,
}
"""Largest magnitude a reading's field can have (rad, rad/s, Nm, m, -, m/s or rad/s, N or Nm):
far beyond the arm's limits (joints within +-2.9 rad, 2.6 rad/s, 87 Nm; reach 0.855 m); a
larger value is a corrupt reading, not a measurement."""
STALL_PERIODS = 20
"""The link's thread counts as hung when no cycle finished for this many state periods."""


class ConnectError(RuntimeError):
    """The robot did not answer; the message is one line naming the address."""


@dataclass
class _Reset:
    pos: np.ndarray
    quat: np.ndarray
    finished: Callable[[bool, str], None]
    """Called once, from the link's thread, with (success, message)."""
    deadline: float = 0.0
    reference: tuple = ()
    last: float = 0.0
    joints: bool = False
    """In its joint move (to ``home_joints``), before the Cartesian part."""
    joint_motion: object = None
    """franky's JointMotion once started (None while the impedance controller ends)."""
    moved_joints: bool = False
    """It made a joint move (the joints at the reset pose are then the new reference)."""


class FrankaLink:
    """See the module docstring. ``config`` is the node's ``FrankaConfig``."""

    def __init__(
        self, config, publish: Callable[[ArmState], None], log: Callable[[str, str], None]
    ):
        import franky  # only here: the driver module imports without the device library

        self._franky = franky
        self.config = config
        self.workspace = Workspace(tuple(config.workspace_min), tuple(config.workspace_max))
        self._publish = publish
        self._log = log  # (level, message)
        self._robot = None
        self._hand: Hand | None = None
        self._motion = None  # the running impedance controller
        self._lock = threading.Lock()
        self._wake = threading.Event()
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
        self._reset: _Reset | None = None
        self.joint_resets = JointResetPolicy(config.joint_reset_drift)
        self.joint_moves = 0
        self._next_reconnect = 0.0
        self._next_cycle = 0.0
        self.samples = SensorGate()
        """Readings refused before they reached any state."""
        period = 1.0 / config.state_hz
        self.loop = SupervisedLoop(
            "franka-link",
            self._iteration,
            stop=self._stop_after_fault,
            restart=self._restart_after_fault,
            log=log,
            restart_delay=min(config.reconnect_period, 0.2),
        )
        self._stall_bound = max(STALL_PERIODS * period, 1.0)
        self.watchdog = Watchdog("franka-watchdog", max(period, 0.05), self._guard, log)
        self._stall_reported = False

    def connect(self) -> None:
        """Connect (bounded by ``connect_timeout``) and set the controller up; raises
        ``ConnectError`` with one line when the robot does not answer."""
        cfg, franky = self.config, self._franky
        result: dict = {}

        def attempt() -> None:
            try:
                robot = franky.Robot(cfg.robot_ip, realtime_config=franky.RealtimeConfig.Ignore)
                robot.set_collision_behavior(cfg.torque_threshold, cfg.force_threshold)
                result["robot"] = robot
                if cfg.gripper:
                    result["hand"] = Hand(franky.Gripper(cfg.robot_ip), cfg, self._log)
            except Exception as error:  # any libfranka failure: report it in one line
                result["error"] = error

        worker = threading.Thread(target=attempt, name="franka-connect", daemon=True)
        worker.start()
        worker.join(cfg.connect_timeout)
        if worker.is_alive():
            raise ConnectError(
                f"Franka at {cfg.robot_ip} did not answer within {cfg.connect_timeout} s"
            )
        if "error" in result:
            error = result["error"]
            if "refused" in str(error).lower():  # libfranka blames FCI for any refusal
                raise ConnectError(
                    f"Franka at {cfg.robot_ip} does not answer: connection "
                    "refused (wrong address, robot off, or FCI not enabled in "
                    "Desk)"
                )
            raise ConnectError(f"Franka at {cfg.robot_ip} does not answer: {first_line(error)}")
        self._robot, self._hand = result["robot"], result.get("hand")
        self._motion = None
        self.mode = HOLDING
        errors = self._robot.state.current_errors
        if has_errors(errors):
            self.fault = f"robot reports errors: {errors!r}"
        elif self.fault:  # a new session on a robot without errors: what was latched is past
            self._log("info", f"connected to a robot without errors; cleared: {self.fault}")
            self.fault = ""

    def start(self) -> None:
        self._closing = False
        self._next_cycle = time.monotonic()
        self.loop.start()
        self.watchdog.start()

    def close(self) -> None:
        self._closing = True
        self._wake.set()
        self.loop.close(timeout=5.0)
        self.watchdog.close(timeout=2.0)
        self._fail_reset("the driver is closing")
        self._refuse_pending("the driver is closing")
        self._drop()

    def _drop(self) -> None:
        robot, hand, self._robot, self._hand = self._robot, self._hand, None, None
        if hand is not None:
            hand.close()
        if robot is not None:
            try:
                if robot.is_in_control:
                    robot.stop()
                robot.join_motion(1.0)
            except Exception:  # the connection is already gone: nothing left to stop
                pass
        del robot, hand
        self.last_state = None  # a new session starts a new twist estimate
        self._motion = None
        self.mode = DISCONNECTED

    # requests, from any thread
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

    def reset(self, pos, quat, timeout: float, finished: Callable[[bool, str], None]) -> None:
        """Move to the reset pose; ``finished(success, message)`` is called from the link's
        thread once there, on failure, or after ``timeout``."""
        request = _Reset(np.asarray(pos, np.float64), normalise(quat), finished)
        request.deadline = time.monotonic() + timeout
        with self._lock:
            previous, self._reset_request = self._reset_request, request
            self._target = None
        if previous is not None:
            previous.finished(False, "superseded by a new reset")
        self._wake.set()

    def enable(self, enabled: bool, timeout: float = 2.0) -> None:
        """Accept pose targets (activate), or stop and refuse them (deactivate: returns once
        the controller is stopped, or after ``timeout`` if the thread is busy reconnecting)."""
        with self._lock:
            self.enabled = enabled
            if not enabled:
                self._target = None
        self._wake.set()
        deadline = time.monotonic() + timeout
        while not enabled and self._motion is not None and time.monotonic() < deadline:
            time.sleep(0.002)

    @property
    def stalled(self) -> bool:
        """The link's thread has not finished a cycle for a while (hung or gone)."""
        return self.loop.stalled(self._stall_bound)

    def _guard(self) -> None:
        """The watchdog, in its own thread: say so when the link's thread hangs."""
        stalled = self.stalled
        if stalled and not self._stall_reported:
            self._log(
                "error",
                f"the franka-link thread has not finished a cycle for {self._stall_bound:g} s: "
                "the controller holds its last reference",
            )
        self._stall_reported = stalled

    def _iteration(self) -> None:
        """One cycle (``_step``), then wait for the next one or a request."""
        period = 1.0 / self.config.state_hz
        try:
            self._step()
        finally:
            self._next_cycle += period
            now = time.monotonic()
            if self._next_cycle < now:
                self._next_cycle = now  # late: restart the schedule rather than burst
            self._wake.wait(self._next_cycle - now)
            self._wake.clear()

    def _stop_after_fault(self) -> None:
        """A cycle failed: stop the controller (the robot halts and holds by itself)."""
        with self._lock:
            self._target = None
        robot = self._robot
        self._fail_reset("the link's thread failed")
        if robot is not None:
            try:
                self._stop(robot)
            finally:
                self._motion = None

    def _restart_after_fault(self) -> None:
        """Start over on a new connection: the arm holds until a fresh command."""
        self._drop()
        self._next_reconnect = 0.0

    def _step(self) -> None:
        if self._robot is None:
            self._refuse_pending("no connection to the robot")
            self._reconnect()
            return
        try:
            self._cycle()
        except self._franky.NetworkException as error:
            self._lost(error)
        except RuntimeError as error:  # franky's "Net Exception" once the link is broken
            if "Net" not in str(error):
                raise
            self._lost(error)

    def _lost(self, error: BaseException) -> None:
        self._drop()
        self._next_reconnect = time.monotonic() + self.config.reconnect_period
        self._fail_reset("connection lost")
        self._log(
            "error",
            f"connection lost: {first_line(error)}; reconnecting every "
            f"{self.config.reconnect_period} s",
        )

    def _refuse_pending(self, reason: str) -> None:
        with self._lock:
            reset, self._reset_request = self._reset_request, None
            clear, self._clear_request = self._clear_request, None
        if reset is not None:
            reset.finished(False, f"reset failed: {reason}")
        if clear is not None:
            self._clear_result = f"recovery failed: {reason}"
            clear.set()

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
        self.joint_resets.failed()  # who knows what the arm did meanwhile: joints first
        self._log("info", f"reconnected to {self.config.robot_ip}; holding until a fresh command")

    def _cycle(self) -> None:
        robot = self._robot
        state = robot.state
        gripper = self._hand.closed_fraction() if self._hand is not None else None
        self.cycles += 1
        self._check_errors(robot, state)
        reading = arm_state(state, time.time(), gripper, self.last_state)
        if not self._admit(reading):
            return  # no state, no twist estimate, no target served from a corrupt reading
        self.last_state = reading
        self._serve(robot, reading)
        self._publish(reading)

    def _admit(self, reading: ArmState) -> bool:
        """Whether every field of ``reading`` is finite and within ``READING_BOUNDS``."""
        for name, bound in READING_BOUNDS.items():
            if not self.samples.admit(name, np.ravel(getattr(reading, name)), bound):
                self._log("warning", f"reading refused: {self.samples.last_refusal}")
                return False
        gripper = reading.gripper
        return gripper is None or self.samples.admit("gripper", (gripper,), 1.5)

    def _check_errors(self, robot, state) -> None:
        try:
            robot.poll_motion()
        except self._franky.NetworkException:
            raise  # the connection is gone: _run drops it and reconnects
        except Exception as error:  # the motion ended with an error
            if "preempted" not in str(error):
                self._set_fault(f"motion aborted: {first_line(error)}")
        mode = state.robot_mode
        if mode == self._franky.RobotMode.Reflex or has_errors(state.current_errors):
            self._set_fault(f"reflex: {state.current_errors!r}")
        elif mode == self._franky.RobotMode.UserStopped:
            self._set_fault("the robot's user stop is pressed")

    def _set_fault(self, reason: str) -> None:
        if not self.fault:
            self.fault = reason
            self._log("error", f"fault, holding until clear_error: {reason}")
        self._fail_reset(reason)

    def _fail_reset(self, reason: str, joints_next: bool = True) -> None:
        """End the running reset, if any, as failed; the next reset starts with a joint move
        unless ``joints_next`` is False (a new reset superseding this one decides itself)."""
        request, self._reset = self._reset, None
        if request is not None:
            if joints_next:
                self.joint_resets.failed()
            request.finished(False, f"reset failed: {reason}")

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
                self._stop(robot)
            self._log("warning", f"e-stop {'engaged' if estop else 'released'}")
        if clear is not None:
            self._clear_result = self._recover(robot)
            clear.set()
        if not enabled and self._motion is not None:
            self._fail_reset("deactivated")
            self._stop(robot)
        blocked = self.estopped or bool(self.fault) or not enabled
        if reset is not None:
            self._start_reset(robot, reading, reset, blocked)
        if self._reset is not None:
            self._follow_reset(robot, reading)
        elif target is not None and not blocked:
            self._follow(robot, reading, *target)
        if self._hand is not None:
            if gripper is not None and not blocked:
                self._hand.command(gripper)
            self._hand.drive()
        self._watchdog(reading)
        self.mode = (
            ESTOP
            if self.estopped
            else FAULT
            if self.fault
            else RESETTING
            if self._reset is not None
            else FOLLOWING
            if self.mode == FOLLOWING
            else HOLDING
        )

    def _controller(self, robot, reading: ArmState):
        """The running impedance controller; a fresh one, holding the measured pose, when none
        runs (first command, after an e-stop, a deactivate, a reflex or a reconnect); None when
        franky did not start it this cycle (``_start_motion``)."""
        if self._motion is not None and robot.is_in_control:
            return self._motion
        franky, cfg = self._franky, self.config
        stiffness = np.asarray(cfg.cartesian_impedance, np.float64)
        posture = None
        if cfg.nullspace_stiffness > 0:  # the elbow held near home in the null space
            home = np.asarray(cfg.home_joints, np.float64)
            posture = franky.PostureTask(home, float(cfg.nullspace_stiffness))
        motion = franky.CartesianImpedanceTrackingMotion(
            translational_stiffness=float(stiffness[:3].mean()),
            rotational_stiffness=float(stiffness[3:].mean()),
            posture_task=posture,
            translational_error_clip=np.full(3, cfg.translational_error_clip),
            rotational_error_clip=np.full(3, cfg.rotational_error_clip),
        )
        motion.set_gains(franky.CartesianImpedanceGains.diagonal(stiffness))
        motion.set_reference(self._reference(reading.tcp_pos, reading.tcp_quat))
        if not self._start_motion(robot, motion):
            return None
        self._motion = motion
        return motion

    def _start_motion(self, robot, motion) -> bool:
        """Start ``motion``; False when franky refuses it with the stopped controller's
        "preempted", which can surface on this call when the controller was stopped a moment
        ago (clear_error, e-stop, a joint move's end): the caller tries again next cycle."""
        try:
            robot.move(motion, asynchronous=True)
        except self._franky.ControlException as error:
            if "preempted" not in str(error):
                raise
            return False
        return True

    def _reference(self, pos, quat_wxyz):
        franky = self._franky
        w, x, y, z = quat_wxyz
        return franky.CartesianReference(target=franky.Affine(np.asarray(pos), [x, y, z, w]))

    def _follow(self, robot, reading: ArmState, pos: np.ndarray, quat: np.ndarray) -> None:
        cfg = self.config
        pos, quat = limit_step(
            reading.tcp_pos,
            reading.tcp_quat,
            pos,
            quat,
            cfg.max_step_translation,
            cfg.max_step_rotation,
        )
        controller = self._controller(robot, reading)
        if controller is None:
            return  # not started this cycle; the next command tries again
        controller.set_reference(self._reference(pos, quat))
        self.last_command = time.monotonic()
        self.mode = FOLLOWING

    def _hold(self, reading: ArmState) -> None:
        """Keep the controller, its reference on where the arm is now."""
        if self._motion is not None:
            self._motion.set_reference(self._reference(reading.tcp_pos, reading.tcp_quat))
        if self.mode in (FOLLOWING, RESETTING):
            self.mode = HOLDING

    def _stop(self, robot) -> None:
        """End the controller with libfranka's stop: the robot halts and holds by itself."""
        if robot.is_in_control:
            robot.stop()
        self._motion = None
        if self.mode in (FOLLOWING, RESETTING):
            self.mode = HOLDING

    def _watchdog(self, reading: ArmState) -> None:
        if self.mode != FOLLOWING:
            return
        if time.monotonic() - self.last_command > self.config.watchdog_timeout:
            self._log("info", "no fresh command: the watchdog holds the arm")
            self._hold(reading)

    def _recover(self, robot) -> str:
        had = self.fault
        # libfranka's automatic recovery can answer "not done" while the robot is still
        # leaving the reflex (seen against a slow peer): try again a few times before refusing.
        for attempt in range(RECOVERY_ATTEMPTS):
            try:
                if robot.is_in_control:
                    robot.stop()
                self._motion = None
                ok = robot.recover_from_errors()
            except Exception as error:  # recovery itself refused
                return f"recovery failed: {first_line(error)}"
            errors = robot.state.current_errors
            if ok and not has_errors(errors):
                break
            if attempt + 1 == RECOVERY_ATTEMPTS:
                return f"recovery failed after {RECOVERY_ATTEMPTS} attempts: {errors!r}"
            time.sleep(0.2)
        self.fault = ""
        self.mode = HOLDING
        return f"cleared: {had}" if had else "no fault"

    def _start_reset(self, robot, reading: ArmState, request: _Reset, blocked: bool) -> None:
        self._fail_reset("superseded by a new reset", joints_next=False)
        if blocked:
            request.finished(
                False,
                "e-stop engaged"
                if self.estopped
                else f"fault: {self.fault}"
                if self.fault
                else "not active",
            )
            return
        request.pos = self.workspace.clip(request.pos)
        self._reset = request
        self.mode = RESETTING
        if self.joint_resets.take():
            self._start_joint_move(robot, request, "the first reset, or one after a failed reset")
            return
        self._start_cartesian(robot, reading, request)

    def _start_cartesian(self, robot, reading: ArmState, request: _Reset) -> None:
        request.joints = False
        request.reference = (reading.tcp_pos.copy(), reading.tcp_quat.copy())
        request.last = time.monotonic()
        self._controller(robot, reading)

    def _start_joint_move(self, robot, request: _Reset, why: str) -> None:
        """End the impedance controller; once it has ended (franky refuses another type of
        motion before), ``_follow_reset`` moves the joints to ``home_joints``
        (franka_joint_reset says why) and then goes on in Cartesian space."""
        self._stop(robot)
        request.joints = request.moved_joints = True
        request.joint_motion = None
        self.joint_moves += 1
        self.mode = RESETTING
        self._log("info", f"joint reset to home_joints ({why})")

    def _follow_joint_move(self, robot, reading: ArmState, request: _Reset, now: float) -> None:
        if request.joint_motion is None:  # the impedance controller is ending
            if not self._controller_ended(robot):
                if now > request.deadline:
                    self._finish_reset(robot, False, "the controller did not end in time")
                return
            franky, cfg = self._franky, self.config
            motion = franky.JointMotion(
                franky.JointState(list(map(float, cfg.home_joints))),
                relative_dynamics_factor=cfg.joint_reset_speed,
            )
            if not self._start_motion(robot, motion):
                return  # the ended controller's "preempted", surfacing late: next cycle
            request.joint_motion = motion
            return
        try:
            done = robot.join_motion(0.0)
        except Exception as error:  # the joint motion failed: a fault, as any motion error
            self._set_fault(f"joint reset aborted: {first_line(error)}")
            return
        if not done:
            if now > request.deadline:
                self._finish_reset(robot, False, "home_joints not reached in time")
            return
        self._motion = None
        self._start_cartesian(robot, reading, request)

    def _follow_reset(self, robot, reading: ArmState) -> None:
        """Move the joints home first when due; then the reference along the straight line to
        the reset pose at ``reset_speed``, and wait for the arm to get there."""
        request, cfg = self._reset, self.config
        now = time.monotonic()
        if request.joints:
            self._follow_joint_move(robot, reading, request, now)
            return
        dt, request.last = now - request.last, now
        pos, quat = limit_step(
            *request.reference,
            request.pos,
            request.quat,
            cfg.reset_speed * dt,
            5.0 * cfg.reset_speed * dt,
        )
        request.reference = (pos, quat)
        controller = self._controller(robot, reading)
        if controller is not None:
            controller.set_reference(self._reference(pos, quat))
        error = float(np.linalg.norm(reading.tcp_pos - request.pos))
        angle = quat_angle(reading.tcp_quat, request.quat)
        if error < RESET_TOLERANCE[0] and angle < RESET_TOLERANCE[1]:
            drift = self.joint_resets.at_reset_pose(reading.joint_pos, request.moved_joints)
            if drift is not None:  # within the same reset_timeout: a caller waits on it
                self._start_joint_move(robot, request, f"null-space drift {drift:.2f} rad")
                return
            self._finish_reset(robot, True, f"at the reset pose ({error * 1000:.1f} mm)")
        elif now > request.deadline:
            self._finish_reset(robot, False, f"reset pose not reached ({error * 1000:.1f} mm away)")

    def _controller_ended(self, robot) -> bool:
        """Whether the stopped impedance controller has ended (franky refuses a motion of
        another type until then); its end reads as a "preempted" error, which is consumed."""
        try:
            robot.join_motion(0.0)
        except self._franky.ControlException as error:
            if "preempted" not in str(error):
                raise
            return False
        return not robot.is_in_control

    def _finish_reset(self, robot, ok: bool, message: str) -> None:
        request, self._reset = self._reset, None
        self.mode = HOLDING
        if not ok:
            self.joint_resets.failed()
            if request.joints:  # a joint move cut short: the impedance controller takes over
                self._stop(robot)
        request.finished(ok, message)
