"""The SO-101 driver's bus side, in a thread of its own (a ``SupervisedLoop``): every
``1 / state_hz`` it reads the six servos' feedback in one sync read, turns ticks into the arm
model's joint angles (``so101_calibration``) and the TCP pose (``so101_kinematics``), hands
them to the node, checks the servos' error bits and temperatures, and writes the goals in force.

What reaches the servos is decided here, not in the ROS callbacks. A pose target arrives
validated and clipped to the workspace box (the node); here one within ``hold_deadband`` of the
target in force leaves that one in force (``_aimed``); a target is first limited to one step
from the measured TCP (``max_step_translation``, ``arm_safety.limit_step``), then solved for
joint angles near the measured ones (inverse kinematics within the joint limits), then each
joint's move is bounded (``max_joint_step``) and turned into ticks inside the calibrated range.
The STS3215 is a position servo: with no new goal it holds the last one, so holding is "goal =
where the arm is". The arm holds after the watchdog (no pose command within
``watchdog_timeout``), on e-stop and after a reconnect, until a fresh command comes. An error
bit (overload, overheat, voltage, sensor) or a temperature over ``max_temperature`` is a fault:
torque off on every servo (the servos' own protection already released the one that tripped),
commands refused until ``clear_error``, which turns the torque back on holding where the arm is.
A bus that fails (unplugged adapter, a servo that stops answering) is closed and reopened every
``reconnect_period``; the servos hold their last goal meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np
from scipy.spatial.transform import Rotation

from robot_rl.drivers.arms import so101_calibration as calibration
from robot_rl.drivers.arms import so101_kinematics as kin
from robot_rl.drivers.arms.arm_safety import limit_step, quat_angle
from robot_rl.drivers.arms.feetech_bus import BusError, FeetechBus
from robot_rl.drivers.supervision import SupervisedLoop

HOLDING, FOLLOWING, RESETTING, ESTOP, FAULT, DISCONNECTED = (
    "holding", "following", "resetting", "e-stop", "fault", "disconnected",
)  # fmt: skip
RESET_TOLERANCE = 0.03
"""rad: every joint this near its reset angle ends the reset."""
SAG_RATE = 0.3
"""Per bus cycle, the share of the newest gap between a resting joint's goal and where it rests
by which the sag estimate moves."""
MAX_SAG = 0.04
"""rad: the most a goal is raised for sag (about 1.6 Nm of an STS3215's 2.9 Nm at the cell's
stiffness): pressed against the table, the arm does not push harder than that."""
HOLD_ANGLE = 0.05
"""rad: a target turned less than this from the one in force has its orientation (``_aimed``)."""
STILL = 0.2
"""rad/s: every joint slower than this counts as resting (its gap is sag, not lag)."""


@dataclass(frozen=True)
class LinkSettings:
    port: str
    baudrate: int
    state_hz: float
    watchdog_timeout: float
    reconnect_period: float
    max_step_translation: float
    max_joint_step: float
    hold_deadband: float
    max_temperature: float
    gripper_threshold: float
    gripper_open: float
    """rad: the jaw's goal on an open command (closed: the low limit)."""
    calibration: dict[str, calibration.MotorCalibration]

    @classmethod
    def of(cls, config, motors: dict[str, calibration.MotorCalibration]) -> LinkSettings:
        """The settings in ``config`` (an ``So101Config``: its fields of these names) for the
        arm calibrated as ``motors``."""
        names = [f.name for f in fields(cls) if f.name != "calibration"]
        return cls(**{name: getattr(config, name) for name in names}, calibration=motors)


@dataclass
class _Reset:
    joints: np.ndarray
    speed: float
    deadline: float
    finished: Callable[[bool, str], None]
    ramp: np.ndarray | None = None
    """The joints' goals on their way at ``speed``, from where the arm was when it began: a ramp
    of goals, not a step from each reading (a servo that sags under the arm's weight by more
    than one step would never rise)."""


@dataclass(frozen=True)
class ArmReading:
    stamp: float
    joints: np.ndarray
    """rad, ``so101_kinematics.JOINTS``' order."""
    velocities: np.ndarray
    """rad/s."""
    tcp_pos: np.ndarray
    tcp_quat: np.ndarray
    """w, x, y, z."""
    gripper: float
    """The moving jaw's angle (rad)."""
    temperatures: tuple[int, ...]
    errors: dict[str, tuple[str, ...]]
    """Per motor with error bits set: their names."""


def quat_wxyz(matrix: np.ndarray) -> np.ndarray:
    return Rotation.from_matrix(matrix).as_quat(scalar_first=True)


def pose_matrix(pos, quat_wxyz) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = Rotation.from_quat(quat_wxyz, scalar_first=True).as_matrix()
    pose[:3, 3] = pos
    return pose


class So101Link:
    def __init__(self, settings: LinkSettings, publish: Callable[[ArmReading], None],
                 log: Callable[[str, str], None]):  # fmt: skip
        self.settings = settings
        self._publish, self._log = publish, log
        self.motors = settings.calibration
        self.bus = FeetechBus(settings.port, [m.id for m in self.motors.values()],
                              settings.baudrate)  # fmt: skip
        self._lock = threading.Lock()
        self._target: tuple[np.ndarray, np.ndarray, float] | None = None
        self._gripper: float | None = None
        self._reset: _Reset | None = None
        self.mode = DISCONNECTED
        self.fault = ""
        self.estopped = False
        self.enabled = False
        self.last: ArmReading | None = None
        self.reconnects = self.cycles = 0
        self._clears = 0
        """clear_error calls: a reading begun before one does not raise the fault again."""
        self.unreachable = 0
        """Targets the inverse kinematics ended more than 5 mm from (the arm went as near)."""
        self.sag = np.zeros(5)
        """rad per joint: how far below its goal a position servo rests under the arm's weight
        (its proportional loop needs an error to hold a load). Pose targets come relative to
        the measured TCP (the task's step from where the arm is), so an uncompensated goal
        would be where the arm already sagged to: the arm would creep down a sag per command."""
        self._goals: np.ndarray | None = None
        self._aim: tuple[np.ndarray, np.ndarray] | None = None
        """The pose target in force (see ``_aimed``)."""
        self.loop = SupervisedLoop("so101-link", self._step, stop=self._hold_after_fault,
                                   restart=self._reopen, report=self._report, log=log,
                                   restart_delay=settings.reconnect_period)  # fmt: skip

    @property
    def stalled(self) -> bool:
        """No bus cycle finished for 20 periods (at least a second): the thread hangs."""
        return self.loop.stalled(max(1.0, 20.0 / self.settings.state_hz))

    # the node's side (ROS callbacks)

    def connect(self) -> None:
        self.bus.open()
        self.bus.ping()
        self._hold_here(torque=True)
        self.mode = HOLDING

    def start(self) -> None:
        self.loop.start()

    def close(self) -> None:
        self.loop.close()
        self.bus.close()
        self._end_reset(False, "the driver closed")

    def enable(self, enabled: bool) -> None:
        with self._lock:
            self.enabled, self._target = enabled, None

    def command_pose(self, pos: np.ndarray, quat: np.ndarray) -> None:
        with self._lock:
            self._target = (np.asarray(pos, float), np.asarray(quat, float), time.monotonic())

    def command_gripper(self, closed: float) -> None:
        with self._lock:
            self._gripper = float(closed)

    def reset(self, joints, speed: float, timeout: float,
              finished: Callable[[bool, str], None]) -> None:  # fmt: skip
        """Move to ``joints`` at ``speed`` (rad/s); ``finished(ok, message)`` from the link's
        thread once there, or when it cannot be (timeout, e-stop, fault, deactivate)."""
        request = _Reset(np.asarray(joints, float), speed, time.monotonic() + timeout, finished)
        with self._lock:
            running, self._target = self._reset, None
            if running is None:
                self._reset = request
        if running is not None:
            finished(False, "a reset is already running")

    def set_estop(self, engaged: bool) -> bool:
        """Applied at once (the thread holds from its next cycle): always True."""
        with self._lock:
            self.estopped, self._target = engaged, None
        return True

    def clear_error(self) -> str:
        with self._lock:
            if not self.fault:
                return "no fault"
            was, self.fault, self._target = self.fault, "", None
            self._clears += 1
        return f"cleared: {was}"

    # the thread

    def _step(self) -> None:
        started, clears = time.monotonic(), self._clears
        reading = self._read()
        self.last = reading
        self.cycles += 1
        self._publish(reading)
        if clears == self._clears:
            self._check(reading)
        self._serve(reading)
        time.sleep(max(0.0, 1.0 / self.settings.state_hz - (time.monotonic() - started)))

    def _read(self) -> ArmReading:
        feedback = self.bus.feedback()
        motors = list(self.motors.items())
        angles = [m.to_radians(feedback[m.id].position) for _, m in motors]
        speeds = [m.sign * feedback[m.id].velocity * 2 * np.pi / 4096 for _, m in motors]
        tcp = kin.forward(angles[:5])
        return ArmReading(
            stamp=time.time(),
            joints=np.array(angles[:5]),
            velocities=np.array(speeds[:5]),
            tcp_pos=tcp[:3, 3].copy(),
            tcp_quat=quat_wxyz(tcp[:3, :3]),
            gripper=angles[5],
            temperatures=tuple(feedback[m.id].temperature for _, m in motors),
            errors={name: feedback[m.id].errors for name, m in motors if feedback[m.id].errors},
        )

    def _check(self, reading: ArmReading) -> None:
        if self.fault:
            return
        hot = [f"{name} at {t} C" for (name, _), t in zip(self.motors.items(),
               reading.temperatures, strict=True) if t > self.settings.max_temperature]  # fmt: skip
        problems = [f"{name}: {', '.join(bits)}" for name, bits in reading.errors.items()] + hot
        if problems:
            with self._lock:
                self.fault, self._target = "; ".join(problems), None
            self.bus.set_torque(False)
            self._log("error", f"servo fault, torque off: {self.fault}")

    def _serve(self, reading: ArmReading) -> None:
        with self._lock:
            target, gripper = self._target, self._gripper
            fresh = target is not None and time.monotonic() - target[2] <= (
                self.settings.watchdog_timeout
            )
            blocked = self.estopped or bool(self.fault) or not self.enabled
        if self.fault:
            self._end_reset(False, f"fault: {self.fault}")
            self.mode = FAULT
            return
        if self.mode == FAULT:  # cleared: torque back on, holding here
            self._hold_here(torque=True)
        if self._reset is not None:
            self._serve_reset(reading, blocked)
            return
        if blocked or not fresh:
            if self.mode == FOLLOWING:
                self._hold_here()
            self.mode = ESTOP if self.estopped else HOLDING
            return
        self.mode = FOLLOWING
        goals = self._joint_goals(reading, target[0], target[1])
        if gripper is not None:
            jaw = self.motors[kin.GRIPPER]
            angle = kin.jaw_goal(
                gripper, self.settings.gripper_open, self.settings.gripper_threshold
            )
            goals[jaw.id] = jaw.to_ticks(angle)
        self.bus.write_goals(goals)

    def _serve_reset(self, reading: ArmReading, blocked: bool) -> None:
        request = self._reset
        away = float(np.max(np.abs(request.joints - reading.joints)))
        if blocked:
            self._end_reset(False, "e-stop engaged" if self.estopped else "not active")
        elif away < RESET_TOLERANCE:
            self._end_reset(True, "reset joints reached")
        elif time.monotonic() > request.deadline:
            self._end_reset(False, f"reset joints not reached: {away:.3f} rad away")
        else:
            self.mode = RESETTING
            step = request.speed / self.settings.state_hz
            ramp = reading.joints if request.ramp is None else request.ramp
            request.ramp = q = ramp + np.clip(request.joints - ramp, -step, step)
            motors = list(self.motors.values())[:5]
            self.bus.write_goals({m.id: m.to_ticks(a) for m, a in zip(motors, q, strict=True)})
            return
        self._hold_here()
        self.mode = ESTOP if self.estopped else HOLDING

    def _end_reset(self, ok: bool, message: str) -> None:
        with self._lock:
            request, self._reset = self._reset, None
        if request is not None:
            request.finished(ok, message)

    def _aimed(self, pos: np.ndarray, quat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The target to steer to: the one in force while ``pos`` lies within ``hold_deadband``
        of it with the same orientation (a task's zero action re-sends the measured TCP, a
        reading a little off the goal, and re-aiming at it every period walks the arm off),
        else ``pos``, ``quat``, which then comes into force."""
        aim = self._aim
        if (
            aim is not None
            and np.linalg.norm(pos - aim[0]) < self.settings.hold_deadband
            and quat_angle(quat, aim[1]) < HOLD_ANGLE
        ):
            return aim
        self._aim = (pos, quat)
        return self._aim

    def _joint_goals(self, reading: ArmReading, pos, quat) -> dict[int, int]:
        pos, quat = self._aimed(pos, quat)
        pos, quat = limit_step(reading.tcp_pos, reading.tcp_quat, pos, quat,
                               self.settings.max_step_translation, np.pi)  # fmt: skip
        solution = kin.inverse(pose_matrix(pos, quat), reading.joints)
        if solution.position_error > 0.005:
            self.unreachable += 1
        step = np.clip(solution.q - reading.joints, -self.settings.max_joint_step,
                       self.settings.max_joint_step)  # fmt: skip
        self._estimate_sag(reading)
        q = reading.joints + step + self.sag
        self._goals = q
        return {m.id: m.to_ticks(a) for m, a in zip(list(self.motors.values())[:5], q, strict=True)}

    def _estimate_sag(self, reading: ArmReading) -> None:
        """Move the sag estimate towards the gap between the last goals and the joints, while
        every joint rests (moving, the gap is the servos' lag)."""
        if self._goals is None or np.max(np.abs(reading.velocities)) > STILL:
            return
        gap = self._goals - reading.joints
        self.sag = np.clip(self.sag + SAG_RATE * (gap - self.sag), -MAX_SAG, MAX_SAG)

    def _hold_here(self, torque: bool = False) -> None:
        """Goal = where each servo is (a position servo then stays); torque on if asked."""
        self._aim = None
        feedback = self.bus.feedback()
        self.bus.write_goals({servo: f.position for servo, f in feedback.items()})
        joints = list(self.motors.values())[:5]
        if all(m.id in feedback for m in joints):  # the goals the sag estimate compares with
            self._goals = np.array([m.to_radians(feedback[m.id].position) for m in joints])
        if torque:
            self.bus.set_torque(True)

    # faults of the thread (the bus failed, or a bug)

    def _hold_after_fault(self) -> None:
        with self._lock:
            self._target = None
        self.mode = DISCONNECTED
        self._end_reset(False, "the servo bus failed")

    def _reopen(self) -> None:
        self.bus.close()
        self.bus.open()
        self.bus.ping()
        faulted = bool(self.fault)
        self._hold_here(torque=not faulted)  # the torque as it was: off only after a fault
        self.reconnects += 1
        self.mode = FAULT if faulted else HOLDING

    def _report(self, message: str) -> None:
        self._log("error", message)


__all__ = ["ArmReading", "BusError", "LinkSettings", "So101Link"]
