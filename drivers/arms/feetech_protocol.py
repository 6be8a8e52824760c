"""Feetech STS3215 bus servos (the SO-100/SO-101 arms' joints): the control table entries the
driver uses, the status packet's error bits and the position encoding. Facts from Feetech's
STS3215 memory table; no device library here (the bus itself: ``feetech_bus``).

Positions are 12-bit ticks, 4096 a turn, 2048 the middle; the signed entries (velocity, load)
carry their sign in bit 15. Multi-byte entries are little-endian.
"""

from __future__ import annotations

import math

STS3215_MODEL = 777
"""The model number an STS3215 answers from address 3."""
TICKS_PER_TURN = 4096
CENTRE_TICK = 2048

# address, length in bytes
MODEL_NUMBER = (3, 2)
ID = (5, 1)
MIN_POSITION_LIMIT = (9, 2)
MAX_POSITION_LIMIT = (11, 2)
MAX_TEMPERATURE_LIMIT = (13, 1)
TORQUE_ENABLE = (40, 1)
ACCELERATION = (41, 1)
GOAL_POSITION = (42, 2)
LOCK = (55, 1)
PRESENT_POSITION = (56, 2)
PRESENT_VELOCITY = (58, 2)
PRESENT_LOAD = (60, 2)
PRESENT_VOLTAGE = (62, 1)
PRESENT_TEMPERATURE = (63, 1)
STATUS = (65, 1)
MOVING = (66, 1)
PRESENT_CURRENT = (69, 2)

FEEDBACK = (56, 8)
"""One sync read of position, velocity, load, voltage and temperature (addresses 56-63)."""

ERROR_BITS = {
    0x01: "input voltage",
    0x02: "angle sensor",
    0x04: "overheat",
    0x08: "overcurrent",
    0x20: "overload",
}
"""The status packet's error byte, bit by bit."""


def error_names(bits: int) -> list[str]:
    """The error byte as names: ``0x24`` -> ``['overheat', 'overload']``."""
    names = [name for bit, name in ERROR_BITS.items() if bits & bit]
    unknown = bits & ~sum(ERROR_BITS) & 0x7F
    return names + ([f"unknown bits 0x{unknown:02x}"] if unknown else [])


def signed(value: int, sign_bit: int = 15) -> int:
    """A sign-magnitude entry (bit 15 the sign) as a Python int."""
    magnitude = value & ((1 << sign_bit) - 1)
    return -magnitude if value & (1 << sign_bit) else magnitude


def to_sign_magnitude(value: int, sign_bit: int = 15) -> int:
    return (-value | (1 << sign_bit)) if value < 0 else value


def ticks_to_radians(ticks: float, offset: float = CENTRE_TICK) -> float:
    """Ticks from ``offset`` (the joint's zero) as radians."""
    return (ticks - offset) * 2.0 * math.pi / TICKS_PER_TURN


def radians_to_ticks(radians: float, offset: float = CENTRE_TICK) -> int:
    return round(offset + radians * TICKS_PER_TURN / (2.0 * math.pi))


def little_endian(value: int, length: int) -> list[int]:
    return [(value >> (8 * i)) & 0xFF for i in range(length)]


def from_little_endian(data) -> int:
    return sum(int(b) << (8 * i) for i, b in enumerate(data))
