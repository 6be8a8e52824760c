"""What the VESC node computes, without ROS or a serial port: ``cmd_vel`` into a motor set-point
and a servo position within the configured limits, and the VESC's telemetry (ERPM, tachometer)
plus the commanded steering into odometry with the bicycle model.

Units: the motor turns ``gear_ratio`` times per wheel turn; a motor with ``motor_poles`` magnets
runs ``motor_poles / 2`` electrical revolutions per mechanical one (ERPM = RPM * pole pairs),
and its tachometer counts six steps per electrical revolution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_STEERING_SPEED = 0.05
"""Below this speed (m/s) a yaw rate says nothing about the steering angle: keep the last one."""


@dataclass(frozen=True)
class CarGeometry:
    wheel_radius: float
    gear_ratio: float
    motor_poles: int
    wheelbase: float

    @property
    def erpm_per_mps(self) -> float:
        """Electrical RPM per metre per second of wheel speed."""
        wheel_rpm = 60.0 / (2 * math.pi * self.wheel_radius)
        return wheel_rpm * self.gear_ratio * self.motor_poles / 2

    @property
    def metres_per_tach_count(self) -> float:
        counts_per_wheel_turn = 6 * (self.motor_poles / 2) * self.gear_ratio
        return 2 * math.pi * self.wheel_radius / counts_per_wheel_turn


@dataclass(frozen=True)
class MotorLimits:
    mode: str
    """``rpm``: the VESC's speed controller (COMM_SET_RPM); ``duty``: open-loop duty cycle."""
    max_erpm: float
    max_duty: float
    duty_per_mps: float
    """Duty cycle per m/s in ``duty`` mode (1 / the speed at full duty)."""


@dataclass(frozen=True)
class ServoLimits:
    centre: float
    minimum: float
    maximum: float
    per_radian: float
    """Servo position per radian of steering (negative when the servo turns the other way)."""
    max_steering: float


def steering_for(
    speed: float, yaw_rate: float, wheelbase: float, max_steering: float, last: float = 0.0
) -> float:
    """Bicycle-model steering angle that turns at ``yaw_rate`` when driving at ``speed``; at a
    near standstill the yaw rate says nothing, and the last angle stays."""
    if abs(speed) < MIN_STEERING_SPEED:
        return last
    angle = math.atan(wheelbase * yaw_rate / speed)
    return max(-max_steering, min(max_steering, angle))


def motor_setpoint(speed: float, geometry: CarGeometry, limits: MotorLimits) -> float:
    """ERPM (``rpm`` mode) or duty cycle (``duty`` mode) for ``speed`` m/s, clipped."""
    if limits.mode == "rpm":
        erpm = speed * geometry.erpm_per_mps
        return max(-limits.max_erpm, min(limits.max_erpm, erpm))
    duty = speed * limits.duty_per_mps
    return max(-limits.max_duty, min(limits.max_duty, duty))


def servo_position(steering: float, servo: ServoLimits) -> float:
    steering = max(-servo.max_steering, min(servo.max_steering, steering))
    position = servo.centre + servo.per_radian * steering
    return max(servo.minimum, min(servo.maximum, position))


def steering_of_servo(position: float, servo: ServoLimits) -> float:
    """The steering angle a servo position stands for (the inverse of ``servo_position``)."""
    return (position - servo.centre) / servo.per_radian


class Odometry:
    """Pose from the tachometer's distance and the steering (bicycle model, midpoint heading);
    speed from the ERPM. The first telemetry sets the tachometer's origin."""

    def __init__(self, geometry: CarGeometry, x: float = 0.0, y: float = 0.0, yaw: float = 0.0):
        self.geometry = geometry
        self.x, self.y, self.yaw = x, y, yaw
        self.speed = 0.0
        self.yaw_rate = 0.0
        self.distance = 0.0
        self._tach: int | None = None

    def restart_tachometer(self) -> None:
        """The next telemetry sets a new origin (the VESC may have rebooted, counting from 0)."""
        self._tach = None

    def update(
        self,
        erpm: float,
        tachometer: int,
        steering: float,
        yaw_rate: float | None = None,
        dt: float = 0.0,
    ) -> None:
        """One telemetry sample. The heading turns by the IMU's ``yaw_rate`` over ``dt`` when
        given (slip and servo error do not fool it), else by the bicycle model's curvature
        over the distance rolled. A non-finite input raises ``ValueError`` before any state
        changes (the driver refuses such samples earlier; this keeps a NaN out of the pose)."""
        for name, value in (("erpm", erpm), ("steering", steering), ("dt", dt)):
            if not math.isfinite(value):
                raise ValueError(f"odometry: non-finite {name} {value}")
        if yaw_rate is not None and not math.isfinite(yaw_rate):
            raise ValueError(f"odometry: non-finite yaw rate {yaw_rate}")
        g = self.geometry
        curvature = math.tan(steering) / g.wheelbase
        self.speed = erpm / g.erpm_per_mps
        self.yaw_rate = self.speed * curvature if yaw_rate is None else yaw_rate
        if self._tach is None:
            self._tach = tachometer
            return
        ds = (tachometer - self._tach) * g.metres_per_tach_count
        self._tach = tachometer
        dyaw = ds * curvature if yaw_rate is None else yaw_rate * dt
        heading = self.yaw + dyaw / 2
        self.x += ds * math.cos(heading)
        self.y += ds * math.sin(heading)
        self.yaw = math.atan2(math.sin(self.yaw + dyaw), math.cos(self.yaw + dyaw))
        self.distance += abs(ds)


def tilt_from_accel(accel) -> tuple[float, float]:
    """Roll and pitch (rad) of the gravity direction an accelerometer reads (body x forward, z
    up; +g upwards at rest): a car on its roof reads roll near pi."""
    ax, ay, az = accel
    return math.atan2(ay, az), math.atan2(-ax, math.hypot(ay, az))


def quaternion(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    """w, x, y, z of the intrinsic z-y-x (yaw, pitch, roll) rotation."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return (
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    )
