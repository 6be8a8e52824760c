"""Crash and stuck detection and the autonomous recovery of the car (FastRLAP-style).

Readings in, commands out (no MuJoCo or ROS 2), from the car's own sensors only: a crash is an
IMU impact (``imu_accel_peak``, else ``imu_accel``) or a flip (``flipped``); the car is stuck
when told to go forward while its odometry has not moved for about a second. The twin's
``collision`` and true pose are never read. Recovery backs up with a random steering angle for a
random 1-1.5 s, then drives slowly towards the current checkpoint (odometry positions).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from robot_rl.envs.backend import CarBackend, Command, Reading

IMPACT_ACCEL = 45.0
"""Horizontal acceleration (m/s^2, ~4.6 g) above which the IMU saw an impact. On the twin
(benchmarks in tests/test_car_crash_detection.py): driving, even random full-lock swerving,
peaks below ~41 m/s^2; wall hits from 0.5 m/s peak at 50-200 m/s^2."""


def impact(reading: Reading, threshold: float = IMPACT_ACCEL) -> bool:
    """The IMU's horizontal acceleration spiked over ``threshold`` since the last reading."""
    accel = reading.get("imu_accel_peak", reading["imu_accel"])
    return bool(np.hypot(accel[0], accel[1]) > threshold)


def crashed(reading: Reading) -> bool:
    """An impact or a flip, from the car's own sensors (never the twin's contact flag)."""
    return impact(reading) or bool(reading["flipped"][0] > 0.5)


RESUMED_SPEED = 0.1
"""Forward speed (m/s) the car must have at the end of a recovery to count as free."""


def odometry_pose(reading: Reading) -> np.ndarray:
    """Where the car's odometry says it is (x, y, yaw): all that navigation may read."""
    return reading["odom_pose"]


def command(speed: float, steering: float) -> Command:
    return {"speed": np.array([speed]), "steering": np.array([steering])}


def steering_towards(reading: Reading, target_xy: np.ndarray, max_steering: float) -> float:
    """A proportional heading controller: steer at the target (bearing in the car frame)."""
    x, y, yaw = odometry_pose(reading)
    bearing = np.arctan2(target_xy[1] - y, target_xy[0] - x) - yaw
    bearing = np.angle(np.exp(1j * bearing))
    return float(np.clip(1.5 * bearing, -max_steering, max_steering))


@dataclass
class StuckDetector:
    """Fires after ``stuck_seconds`` of commanded forward speed without forward motion."""

    control_hz: float
    stuck_seconds: float = 1.0
    min_speed: float = 0.1
    """Measured forward speed (m/s) below which the car counts as not moving."""
    min_command: float = 0.3
    """Commanded speed (m/s) above which the car is trying to move."""
    _count: int = field(default=0, init=False)

    def reset(self) -> None:
        self._count = 0

    def update(self, reading: Reading, commanded_speed: float) -> bool:
        trying = commanded_speed > self.min_command
        moving = reading["velocity"][0] > self.min_speed
        self._count = self._count + 1 if trying and not moving else 0
        return self._count >= round(self.stuck_seconds * self.control_hz)


@dataclass
class CarRecovery:
    """The recovery manoeuvre as a little state machine: ``command(reading, target)`` gives the
    next command, or None when the car is free and pointed onwards."""

    control_hz: float
    rng: np.random.Generator
    reverse_speed: float = -1.0
    backup_seconds: tuple[float, float] = (1.0, 1.5)
    resume_speed: float = 0.8
    resume_seconds: tuple[float, float] = (0.3, 0.8)
    max_steering: float = 0.5
    _phase: str = field(default="done", init=False)
    _steps_left: int = field(default=0, init=False)
    _backup_steering: float = field(default=0.0, init=False)

    def start(self, back_up: bool) -> None:
        """Begin a recovery: back up first after a crash or when stuck, else only resume."""
        self._backup_steering = float(self.rng.uniform(-self.max_steering, self.max_steering))
        if back_up:
            self._enter("backup", self.backup_seconds)
        else:
            self._enter("resume", self.resume_seconds)

    @property
    def phase(self) -> str:
        return self._phase

    def command(self, reading: Reading, target_xy: np.ndarray) -> Command | None:
        if self._phase == "done":
            return None
        if self._steps_left <= 0:
            if self._phase == "backup":
                self._enter("resume", self.resume_seconds)
            else:
                self._phase = "done"
                return None
        self._steps_left -= 1
        if self._phase == "backup":
            return command(self.reverse_speed, self._backup_steering)
        return command(self.resume_speed, steering_towards(reading, target_xy, self.max_steering))

    def end_backup(self) -> None:
        """Cut the backing up short (the car hit something behind it) and resume."""
        if self._phase == "backup":
            self._enter("resume", self.resume_seconds)

    def _enter(self, phase: str, seconds: tuple[float, float]) -> None:
        self._phase = phase
        self._steps_left = max(1, round(self.rng.uniform(*seconds) * self.control_hz))


def right_if_flipped(backend: CarBackend, reading: Reading) -> Reading:
    """A flipped car cannot drive out of it. The twin puts it back on its wheels where it lies;
    the real car needs a person to right it, so there we wait (the driver holds it stopped).
    The twin's own true pose places it: that is the twin standing in for the person, and the
    car's odometry keeps its drift (``CarTwin.place_car``)."""
    if reading["flipped"][0] < 0.5:
        return reading
    if backend.is_simulated:
        x, y, yaw = reading["pose"]  # twin only: where the twin's person finds the car
        backend.place_car(float(x), float(y), float(yaw))
    else:
        while reading["flipped"][0] > 0.5:
            backend.send(command(0.0, 0.0))
            backend.advance()
            reading = backend.read()
    return backend.read()


def recover(
    backend: CarBackend,
    target: Callable[[Reading], np.ndarray],
    rng: np.random.Generator,
    back_up: bool,
    max_attempts: int = 3,
) -> dict:
    """Run the recovery on a backend until the car is clear of walls and rolling onwards.

    ``target(reading)`` is the point to resume towards (the task's current checkpoint; asked
    every step because the car may pass it while recovering). Backs up again (up to
    ``max_attempts`` times) if the car hit something again while recovering, or is stuck at
    the end of it. Returns what happened.
    """
    recovery = CarRecovery(backend.control_hz, rng)
    reading = right_if_flipped(backend, backend.read())
    attempts, hit, blocked = 0, False, False
    for attempts in range(1, max_attempts + 1):  # noqa: B007  (reported below)
        recovery.start(back_up=back_up or crashed(reading))
        hit = False
        while (cmd := recovery.command(reading, target(reading))) is not None:
            backend.send(cmd)
            backend.advance()
            reading = right_if_flipped(backend, backend.read())
            if crashed(reading):
                if recovery.phase == "backup":  # backed into something: stop, drive on
                    recovery.end_backup()
                else:
                    hit = True
        # the resume phase was told to roll forward: still not rolling means blocked
        blocked = reading["velocity"][0] < RESUMED_SPEED
        if not (hit or blocked):
            break
        back_up = True
    return {"attempts": attempts, "clear": not (hit or blocked)}
