"""The VESC serial protocol, framing and the few commands the car uses; pure Python, no device.

Framing (VESC firmware ``comm/packet.c``): a payload of up to 255 bytes goes as ``2, length,
payload, crc_hi, crc_lo, 3``; a longer one as ``3, length_hi, length_lo, payload, crc, 3``. The
CRC is CRC16-XMODEM (polynomial 0x1021, initial 0) over the payload. The payload's first byte is
the command id (``COMM_PACKET_ID`` in ``datatypes.h``); every number is big-endian, scaled to an
integer as the firmware's ``buffer_append_*`` does.

Why our own framing and not ``pyvesc`` (PyPI 1.0.5): its last release is from 2017, it depends
on ``PyCRC`` (unmaintained, not a wheel), its ``GetValues`` layout is the firmware-3.x one (the
temperatures of six MOSFETs first), so a 5.x/6.x VESC's telemetry decodes into wrong fields, and
it has no IMU message. The protocol is small: framing, CRC and four commands fit here, and a
bad CRC, a truncated packet or line noise is ours to count and skip (``PacketReader``).
"""

from __future__ import annotations

import binascii
import math
import struct
from dataclasses import dataclass

COMM_GET_VALUES = 4
COMM_SET_DUTY = 5
COMM_SET_CURRENT = 6
COMM_SET_CURRENT_BRAKE = 7
COMM_SET_RPM = 8
COMM_SET_SERVO_POS = 12
COMM_GET_IMU_DATA = 65

MAX_PAYLOAD = 512
"""Longest payload accepted; a longer length field is line noise (the reader resynchronises)."""

IMU_MASK = 0x01FF
"""COMM_GET_IMU_DATA fields we ask for: bits 0-2 roll, pitch, yaw (rad), 3-5 accelerometer x, y,
z (g), 6-8 gyroscope x, y, z (deg/s)."""

STANDARD_GRAVITY = 9.80665


def crc16(data: bytes) -> int:
    """CRC16-XMODEM: polynomial 0x1021, initial value 0, no reflection, no final xor (the
    standard library's CRC-CCITT with initial value 0)."""
    return binascii.crc_hqx(data, 0)


def frame(payload: bytes) -> bytes:
    """One packet on the wire."""
    n = len(payload)
    if not 0 < n <= MAX_PAYLOAD:
        raise ValueError(f"a VESC payload has 1..{MAX_PAYLOAD} bytes, got {n}")
    head = bytes([2, n]) if n <= 255 else bytes([3, n >> 8, n & 0xFF])
    return head + payload + struct.pack(">H", crc16(payload)) + b"\x03"


class PacketReader:
    """Turns a byte stream into payloads. A packet whose CRC or end byte is wrong is counted in
    ``crc_errors`` and skipped; bytes that start no packet are counted in ``skipped_bytes``.
    After a bad packet the reader resynchronises one byte past the bad start, so a start byte
    inside noise cannot swallow the good packet after it."""

    def __init__(self):
        self._buffer = bytearray()
        self.crc_errors = 0
        self.skipped_bytes = 0

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        payloads = []
        buf = self._buffer
        while buf:
            if buf[0] not in (2, 3):
                buf.pop(0)
                self.skipped_bytes += 1
                continue
            head = 2 if buf[0] == 2 else 3
            if len(buf) < head:
                break
            n = buf[1] if head == 2 else (buf[1] << 8) | buf[2]
            if not 0 < n <= MAX_PAYLOAD:
                buf.pop(0)
                self.skipped_bytes += 1
                continue
            total = head + n + 3
            if len(buf) < total:
                break
            payload = bytes(buf[head : head + n])
            crc = (buf[head + n] << 8) | buf[head + n + 1]
            if crc != crc16(payload) or buf[total - 1] != 3:
                self.crc_errors += 1
                buf.pop(0)
                continue
            del buf[:total]
            payloads.append(payload)
        return payloads


# commands, host -> VESC
def set_duty(duty: float) -> bytes:
    return struct.pack(">Bi", COMM_SET_DUTY, round(duty * 100_000))


def set_rpm(erpm: float) -> bytes:
    return struct.pack(">Bi", COMM_SET_RPM, round(erpm))


def set_current_brake(amps: float) -> bytes:
    return struct.pack(">Bi", COMM_SET_CURRENT_BRAKE, round(amps * 1000))


def set_servo_pos(position: float) -> bytes:
    """``position`` in 0..1 (the firmware's servo output range)."""
    return struct.pack(">Bh", COMM_SET_SERVO_POS, round(position * 1000))


def get_values() -> bytes:
    return bytes([COMM_GET_VALUES])


def get_imu_data(mask: int = IMU_MASK) -> bytes:
    return struct.pack(">BH", COMM_GET_IMU_DATA, mask)


def decode_command(payload: bytes) -> tuple[int, float | None]:
    """(command id, value) of a host command: duty (-1..1), ERPM, amps (current or brake
    current) or servo position (0..1); None for a request without a value. ValueError: too short."""
    cid = payload[0]
    try:
        if cid == COMM_SET_DUTY:
            return cid, struct.unpack_from(">i", payload, 1)[0] / 100_000
        if cid == COMM_SET_RPM:
            return cid, float(struct.unpack_from(">i", payload, 1)[0])
        if cid in (COMM_SET_CURRENT, COMM_SET_CURRENT_BRAKE):
            return cid, struct.unpack_from(">i", payload, 1)[0] / 1000
        if cid == COMM_SET_SERVO_POS:
            return cid, struct.unpack_from(">h", payload, 1)[0] / 1000
    except struct.error:
        raise ValueError(f"command {cid}: payload of {len(payload)} bytes is too short") from None
    return cid, None


# telemetry, VESC -> host
@dataclass(frozen=True)
class Values:
    """The head of COMM_GET_VALUES's answer (firmware 3.x to 6.x share it up to the fault)."""

    temp_fet: float = 25.0
    temp_motor: float = 25.0
    motor_current: float = 0.0
    input_current: float = 0.0
    current_d: float = 0.0
    current_q: float = 0.0
    duty: float = 0.0
    erpm: float = 0.0
    input_voltage: float = 12.0
    amp_hours: float = 0.0
    amp_hours_charged: float = 0.0
    watt_hours: float = 0.0
    watt_hours_charged: float = 0.0
    tachometer: int = 0
    """Six counts per electrical revolution, signed."""
    tachometer_abs: int = 0
    fault: int = 0


FAULT_NAMES = (
    "NONE",
    "OVER_VOLTAGE",
    "UNDER_VOLTAGE",
    "DRV",
    "ABS_OVER_CURRENT",
    "OVER_TEMP_FET",
    "OVER_TEMP_MOTOR",
    "GATE_DRIVER_OVER_VOLTAGE",
    "GATE_DRIVER_UNDER_VOLTAGE",
    "MCU_UNDER_VOLTAGE",
    "BOOTING_FROM_WATCHDOG_RESET",
)
"""The first of the firmware's ``mc_fault_code`` names (later ones are reported by number)."""


def fault_name(code: int) -> str:
    return FAULT_NAMES[code] if 0 <= code < len(FAULT_NAMES) else f"FAULT_{code}"


# (field, struct code, scale) in wire order
_VALUES_LAYOUT = (
    ("temp_fet", "h", 1e1),
    ("temp_motor", "h", 1e1),
    ("motor_current", "i", 1e2),
    ("input_current", "i", 1e2),
    ("current_d", "i", 1e2),
    ("current_q", "i", 1e2),
    ("duty", "h", 1e3),
    ("erpm", "i", 1e0),
    ("input_voltage", "h", 1e1),
    ("amp_hours", "i", 1e4),
    ("amp_hours_charged", "i", 1e4),
    ("watt_hours", "i", 1e4),
    ("watt_hours_charged", "i", 1e4),
    ("tachometer", "i", None),
    ("tachometer_abs", "i", None),
    ("fault", "B", None),
)
_VALUES_STRUCT = struct.Struct(">" + "".join(code for _, code, _ in _VALUES_LAYOUT))


def encode_values(values: Values, controller_id: int = 0) -> bytes:
    """The answer a VESC gives to COMM_GET_VALUES (the head, then a PID position and the
    controller id; newer firmware appends more, which ``decode_values`` ignores)."""
    numbers = [
        getattr(values, name) if scale is None else round(getattr(values, name) * scale)
        for name, _, scale in _VALUES_LAYOUT
    ]
    return (
        bytes([COMM_GET_VALUES])
        + _VALUES_STRUCT.pack(*numbers)
        + struct.pack(">iB", 0, controller_id)
    )


def decode_values(payload: bytes) -> Values:
    if payload[:1] != bytes([COMM_GET_VALUES]) or len(payload) < 1 + _VALUES_STRUCT.size:
        raise ValueError(f"not a COMM_GET_VALUES answer ({len(payload)} bytes)")
    numbers = _VALUES_STRUCT.unpack_from(payload, 1)
    fields = {
        name: (int(n) if scale is None else n / scale)
        for (name, _, scale), n in zip(_VALUES_LAYOUT, numbers, strict=True)
    }
    return Values(**fields)


@dataclass(frozen=True)
class ImuData:
    """The VESC's IMU in SI units: roll, pitch, yaw (rad), acceleration (m/s^2, with gravity:
    +9.81 upwards at rest), angular velocity (rad/s); body frame x forward, z up."""

    rpy: tuple[float, float, float]
    accel: tuple[float, float, float]
    gyro: tuple[float, float, float]


def _float32_auto(value: float) -> bytes:
    # the firmware's float32_auto is IEEE 754 single precision with subnormals flushed to 0
    return struct.pack(">f", 0.0 if abs(value) < 1.5e-38 else value)


def encode_imu(imu: ImuData, controller_id: int = 0) -> bytes:
    """COMM_GET_IMU_DATA's answer for ``IMU_MASK``: the mask, nine floats, the controller id."""
    accel_g = [a / STANDARD_GRAVITY for a in imu.accel]
    gyro_deg = [math.degrees(g) for g in imu.gyro]
    floats = b"".join(_float32_auto(v) for v in (*imu.rpy, *accel_g, *gyro_deg))
    return struct.pack(">BH", COMM_GET_IMU_DATA, IMU_MASK) + floats + bytes([controller_id])


def decode_imu(payload: bytes) -> ImuData:
    if payload[:1] != bytes([COMM_GET_IMU_DATA]) or len(payload) < 3:
        raise ValueError(f"not a COMM_GET_IMU_DATA answer ({len(payload)} bytes)")
    mask = struct.unpack_from(">H", payload, 1)[0]
    if mask & IMU_MASK != IMU_MASK:
        raise ValueError(f"IMU answer lacks fields: mask {mask:#06x}")
    # the length is checked before any float is read: a framed answer with a valid CRC and
    # too few bytes is a ValueError like any malformed answer, never a struct.error
    needed = 3 + 4 * bin(mask).count("1")
    if len(payload) < needed:
        raise ValueError(
            f"IMU answer of {len(payload)} bytes is short for mask {mask:#06x} ({needed} needed)"
        )
    values, offset = [], 3
    for bit in range(16):
        if mask & (1 << bit):
            if bit < 9:
                values.append(struct.unpack_from(">f", payload, offset)[0])
            offset += 4
    rpy, accel_g, gyro_deg = values[0:3], values[3:6], values[6:9]
    return ImuData(
        tuple(rpy),
        tuple(a * STANDARD_GRAVITY for a in accel_g),
        tuple(math.radians(g) for g in gyro_deg),
    )
