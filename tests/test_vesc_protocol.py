"""The VESC protocol without a device: framing, CRC16-XMODEM, the commands' and the telemetry's
payload layouts, the stream reader's handling of noise and bad CRCs, and the node's kinematics
(cmd_vel to set-points within limits, telemetry to odometry)."""

from __future__ import annotations

import math
import struct

import pytest

from robot_rl.drivers.car import vesc_protocol as proto
from robot_rl.drivers.car.vesc_kinematics import (
    CarGeometry,
    MotorLimits,
    Odometry,
    ServoLimits,
    motor_setpoint,
    servo_position,
    steering_for,
    steering_of_servo,
)

GEOMETRY = CarGeometry(wheel_radius=0.05, gear_ratio=10.0, motor_poles=4, wheelbase=0.26)
SERVO = ServoLimits(centre=0.5, minimum=0.15, maximum=0.85, per_radian=-0.7, max_steering=0.5)


def test_crc16_is_xmodem():
    assert proto.crc16(b"123456789") == 0x31C3  # the CRC-16/XMODEM check value


def test_short_and_long_frames():
    short = proto.frame(b"\x04")
    assert short == bytes([2, 1, 4]) + struct.pack(">H", proto.crc16(b"\x04")) + b"\x03"
    payload = bytes(range(256)) + b"\x01"
    long = proto.frame(payload)
    assert long[:3] == bytes([3, 1, 1]) and long[-1] == 3 and len(long) == 3 + 257 + 3
    assert proto.PacketReader().feed(long) == [payload]


def test_reader_skips_noise_and_counts_bad_crcs():
    good = proto.frame(proto.get_values())
    bad = bytearray(proto.frame(proto.set_rpm(1000)))
    bad[-2] ^= 0xFF
    reader = proto.PacketReader()
    stream = b"\x00\xff" + bytes(bad) + good + good[:3]
    assert reader.feed(stream) == [proto.get_values()]
    assert reader.crc_errors == 1 and reader.skipped_bytes >= 2
    assert reader.feed(good[3:]) == [proto.get_values()]  # a packet split across reads


def test_command_payloads():
    assert proto.set_duty(0.25) == struct.pack(">Bi", 5, 25_000)
    assert proto.set_rpm(-3000) == struct.pack(">Bi", 8, -3000)
    assert proto.set_servo_pos(0.5) == struct.pack(">Bh", 12, 500)
    assert proto.set_current_brake(4.0) == struct.pack(">Bi", 7, 4000)
    assert proto.decode_command(proto.set_duty(-0.1)) == (proto.COMM_SET_DUTY, -0.1)
    assert proto.decode_command(proto.set_servo_pos(0.7)) == (proto.COMM_SET_SERVO_POS, 0.7)
    with pytest.raises(ValueError, match="too short"):
        proto.decode_command(b"\x08\x00")


def test_values_round_trip_and_layout():
    values = proto.Values(
        temp_fet=31.5,
        duty=-0.123,
        erpm=-4567,
        input_voltage=11.1,
        tachometer=-123456,
        tachometer_abs=123456,
        fault=2,
    )
    payload = proto.encode_values(values)
    assert payload[0] == proto.COMM_GET_VALUES
    # the ERPM is the int32 after 2 int16 temperatures, 4 int32 currents and the int16 duty
    assert struct.unpack_from(">i", payload, 1 + 2 + 2 + 16 + 2)[0] == -4567
    assert proto.decode_values(payload) == values
    with pytest.raises(ValueError, match="not a COMM_GET_VALUES"):
        proto.decode_values(payload[:20])


def test_imu_round_trip_in_si_units():
    imu = proto.ImuData((0.1, -0.2, 1.5), (0.5, -1.0, 9.81), (0.0, 0.3, -2.0))
    payload = proto.encode_imu(imu)
    assert struct.unpack_from(">H", payload, 1)[0] == proto.IMU_MASK
    # the wire has g and deg/s
    assert struct.unpack_from(">f", payload, 3 + 5 * 4)[0] == pytest.approx(1.0, rel=1e-3)
    assert struct.unpack_from(">f", payload, 3 + 8 * 4)[0] == pytest.approx(-114.59, rel=1e-3)
    back = proto.decode_imu(payload)
    for a, b in ((back.rpy, imu.rpy), (back.accel, imu.accel), (back.gyro, imu.gyro)):
        assert a == pytest.approx(b, rel=1e-5, abs=1e-6)


def test_speed_and_steering_become_limited_setpoints():
    rpm = MotorLimits("rpm", max_erpm=5000.0, max_duty=0.3, duty_per_mps=0.05)
    per_mps = GEOMETRY.erpm_per_mps  # 60 / (2 pi 0.05) * 10 * 2
    assert per_mps == pytest.approx(3819.7, rel=1e-4)
    assert motor_setpoint(1.0, GEOMETRY, rpm) == pytest.approx(per_mps)
    assert motor_setpoint(3.0, GEOMETRY, rpm) == 5000.0
    assert motor_setpoint(-3.0, GEOMETRY, rpm) == -5000.0
    duty = MotorLimits("duty", max_erpm=5000.0, max_duty=0.2, duty_per_mps=0.05)
    assert motor_setpoint(2.0, GEOMETRY, duty) == pytest.approx(0.1)
    assert motor_setpoint(10.0, GEOMETRY, duty) == 0.2
    assert servo_position(0.0, SERVO) == 0.5
    assert servo_position(0.2, SERVO) == pytest.approx(0.36)
    assert servo_position(2.0, SERVO) == pytest.approx(0.15)  # steering and servo clipped
    assert steering_of_servo(0.36, SERVO) == pytest.approx(0.2)
    # yaw rate -> bicycle steering; at a standstill the last angle stays
    angle = steering_for(2.0, 2.0 * math.tan(0.3) / 0.26, 0.26, 0.5, 0.0)
    assert angle == pytest.approx(0.3)
    assert steering_for(0.0, 1.0, 0.26, 0.5, last=0.1) == 0.1
    assert steering_for(1.0, 100.0, 0.26, 0.5, 0.0) == 0.5


def test_odometry_integrates_the_tachometer_along_the_bicycle_arc():
    odo = Odometry(GEOMETRY, x=1.0, y=2.0, yaw=0.0)
    per_metre = 1.0 / GEOMETRY.metres_per_tach_count  # 6 * pole pairs * gear ratio / (2 pi r)
    assert per_metre == pytest.approx(6 * 2 * 10 / (2 * math.pi * 0.05))
    odo.update(erpm=0.0, tachometer=1000, steering=0.0)  # the first sets the origin
    odo.update(erpm=GEOMETRY.erpm_per_mps, tachometer=1000 + round(per_metre), steering=0.0)
    assert (odo.x, odo.y, odo.yaw) == pytest.approx((2.0, 2.0, 0.0), abs=2e-3)
    assert odo.speed == pytest.approx(1.0)
    # a quarter circle of radius R = wheelbase / tan(steering)
    steering = 0.4
    radius = GEOMETRY.wheelbase / math.tan(steering)
    arc = math.pi / 2 * radius
    start = 1000 + round(per_metre)
    for k in range(1, 101):
        odo.update(GEOMETRY.erpm_per_mps, start + round(k * arc / 100 * per_metre), steering)
    assert odo.yaw == pytest.approx(math.pi / 2, abs=0.01)
    assert (odo.x, odo.y) == pytest.approx((2.0 + radius, 2.0 + radius), abs=0.01)
    assert odo.yaw_rate == pytest.approx(math.tan(steering) / GEOMETRY.wheelbase)


def test_tilt_from_the_gravity_direction():
    from robot_rl.drivers.car.vesc_kinematics import quaternion, tilt_from_accel

    assert tilt_from_accel((0.0, 0.0, 9.81)) == pytest.approx((0.0, 0.0))
    roll, pitch = tilt_from_accel((0.0, 0.0, -9.81))  # on its roof
    _, x, y, _ = quaternion(roll, pitch, 1.0)
    assert 1 - 2 * (x * x + y * y) == pytest.approx(-1.0)
    assert tilt_from_accel((-9.81, 0.0, 0.0))[1] == pytest.approx(math.pi / 2)  # nose up
