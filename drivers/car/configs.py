"""The car drivers' configs: each a dataclass whose fields are its node's ROS 2 parameters
(``robot_rl.drivers.config``), each registered by device type with ``register_device``. No ROS 2
and no device library here."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robot_rl.drivers.config import length, one_of, param, positive, register_device

unit_interval = (lambda v: 0.0 <= v <= 1.0, "must lie in [0, 1]")
duty_range = (lambda v: 0.0 < v <= 0.95, "must lie in (0, 0.95]")
non_zero = (lambda v: v != 0.0, "must not be 0")


@register_device(
    "vesc",
    kind="car",
    executable="robot-rl-vesc",
    node="robot_rl.drivers.car.vesc:VescDriver",
    summary="VESC motor controller over serial: motor, steering servo, odometry, IMU",
)
@dataclass(frozen=True)
class VescConfig:
    port: str = param(
        "/dev/ttyACM0",
        "serial device of the VESC (USB CDC); a udev symlink such as /dev/vesc keeps it stable",
    )
    baud: int = param(115200, "serial baud rate (ignored by USB CDC, used by a UART)", positive)
    mode: str = param(
        "rpm",
        "motor set-point: rpm (the VESC's speed controller) or duty (open-loop duty cycle)",
        one_of("rpm", "duty"),
    )
    max_erpm: float = param(20000.0, "ERPM limit in rpm mode (both directions)", positive)
    max_duty: float = param(0.3, "duty-cycle limit in duty mode", duty_range)
    duty_per_mps: float = param(0.05, "duty cycle per m/s in duty mode", positive)
    wheel_radius: float = param(0.05, "wheel radius (m)", positive)
    gear_ratio: float = param(10.0, "motor turns per wheel turn (the whole drivetrain)", positive)
    motor_poles: int = param(
        4,
        "magnet poles of the motor (ERPM = RPM * poles / 2)",
        (lambda v: v >= 2 and v % 2 == 0, "must be an even number >= 2"),
    )
    wheelbase: float = param(0.26, "front to rear axle (m): the bicycle model's length", positive)
    max_steering: float = param(0.5, "steering angle limit (rad)", positive)
    brake_current: float = param(
        0.0,
        "stop (watchdog, e-stop, zero speed) with COMM_SET_CURRENT_BRAKE at this current (A) "
        "instead of a zero set-point, which lets the car coast in duty mode; 0: zero set-point",
        (lambda v: v >= 0, "must be >= 0"),
    )
    servo_centre: float = param(0.5, "servo position that drives straight", unit_interval)
    servo_min: float = param(0.15, "lowest servo position allowed", unit_interval)
    servo_max: float = param(0.85, "highest servo position allowed", unit_interval)
    servo_per_radian: float = param(
        -0.7,
        "servo position per radian of steering (negative: "
        "the servo turns right for a rising position)",
        non_zero,
    )
    telemetry_hz: float = param(50.0, "command, telemetry and odom rate (Hz)", positive)
    watchdog_timeout: float = param(
        0.3,
        "zero the motor and centre the servo when no cmd_vel arrived within this many seconds",
        positive,
    )
    silent_timeout: float = param(
        0.5,
        "a VESC that has not answered for this many seconds is an error (and gets zero)",
        positive,
    )
    reconnect_period: float = param(1.0, "seconds between attempts to reopen a lost port", positive)
    imu: bool = param(True, "poll the VESC's IMU (COMM_GET_IMU_DATA) and publish imu")
    yaw_from_imu: bool = param(
        True,
        "turn the odometry's heading by the IMU's yaw rate (the "
        "VESC's, or with imu false whatever publishes imu here, e.g. "
        "robot-rl-realsense-imu) instead of the steering angle",
    )
    initial_pose: tuple = param(
        [0.0, 0.0, 0.0], "where odometry starts: x, y (m), yaw (rad) in the odom frame", length(3)
    )
    odom_frame: str = param("odom", "frame of the odometry's pose")
    base_frame: str = param("base", "the car's body frame (odometry's child frame)")
    imu_frame: str = param("imu", "frame of the IMU messages")
    low_voltage: float = param(
        0.0,
        "warn on /diagnostics when the VESC's input voltage is "
        "below this (V; e.g. 6.8 for a 2S LiPo, 0: never)",
        (lambda v: v >= 0, "must be >= 0"),
    )
    diagnostics_hz: float = param(1.0, "/diagnostics rate (Hz)", positive)


FORWARD_CAMERA = [0.0, 0.0, 1.0, -1.0, 0.0, 0.0, 0.0, -1.0, 0.0]
"""Body (x forward, y left, z up) from the RealSense IMU (x right, y down, z forward)."""


def _is_rotation(values) -> bool:
    m = np.asarray(values, float).reshape(3, 3)
    return bool(np.allclose(m @ m.T, np.eye(3), atol=1e-6) and np.linalg.det(m) > 0)


@register_device(
    "realsense_imu",
    kind="car",
    executable="robot-rl-realsense-imu",
    node="robot_rl.drivers.car.realsense_imu:RealSenseImuNode",
    summary="RealSense D435i/D455 IMU (gyro + accelerometer) as sensor_msgs/Imu",
)
@dataclass(frozen=True)
class RealSenseImuConfig:
    serial: str = param("", "serial number of the camera (empty: the only one connected)")
    gyro_rate: float = param(200.0, "gyroscope rate (Hz) as the device offers it", positive)
    accel_rate: float = param(250.0, "accelerometer rate (Hz) as the device offers it", positive)
    rotation: tuple = param(
        FORWARD_CAMERA,
        "body from IMU rotation, row-major 3x3",
        (lambda v: len(v) == 9 and _is_rotation(v), "must be a 3x3 rotation, row-major"),
    )
    frame_id: str = param("imu", "frame of the messages")
    stale_after: float = param(0.5, "no sample for this long is an error (s)", positive)
    diagnostics_hz: float = param(1.0, "/diagnostics rate (Hz)", positive)
