"""A bus of Feetech STS3215 servos on a pseudo-terminal: the far end of the SO-101 driver's serial
port, written to the servos' protocol (framing, checksums, the control table) and to nothing in
the driver (which talks through Feetech's own SDK).

Instruction packets: ``FF FF id length instruction params... checksum``, the checksum the
inverted low byte of the sum from id on, ``length`` the parameters' count plus 2. A servo answers
``FF FF id length error params... checksum``. Served: PING, READ, WRITE, SYNC READ (each servo
named answers in turn) and SYNC WRITE (no answer); a broadcast (id 0xFE) gets no answer; a
packet with a wrong checksum is ignored, as a servo ignores it.

Each servo keeps a 256-byte control table. Goal positions and torque go to a ``ServoArm`` (the
default moves each servo towards its goal at a bounded speed; the SO-101 cell puts its MuJoCo
model there); present position, velocity and load come back from it before every read.
Faults as tests and cells want them: ``silence(id)`` (the servo stops answering),
``set_temperature(id, celsius)``,
``set_error(id, bits)`` (error bits in every answer; overload and overheat also drop the torque,
as the servo's protection does), ``corrupt_next(n)`` (wrong checksums), ``truncate_next(n)``
(answers cut short), ``unplug()`` / ``plug()`` (the adapter pulled and put back: ``PtyLink``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from robot_rl.drivers.arms import feetech_protocol as sts
from robot_rl.sim.cells.pty_link import PtyPeer

PING, READ, WRITE, SYNC_READ, SYNC_WRITE = 0x01, 0x02, 0x03, 0x82, 0x83
BROADCAST = 0xFE
PROTECTIVE_ERRORS = 0x04 | 0x20
"""Overheat and overload: the servo's protection releases the torque."""


def checksum(body: Iterable[int]) -> int:
    return ~sum(body) & 0xFF


def status_packet(servo: int, error: int, params: bytes = b"") -> bytes:
    body = bytes([servo, len(params) + 2, error]) + params
    return b"\xff\xff" + body + bytes([checksum(body)])


class ServoArm(Protocol):
    def command(self, servo: int, goal: int, torque: bool) -> None:
        """The servo's goal position (ticks) and whether its torque is on."""

    def state(self, servo: int) -> tuple[int, int, int]:
        """Present position (ticks), velocity (ticks/s) and load (per mille, signed)."""


@dataclass
class BoundedSpeedServos:
    """Each servo moves towards its goal at ``speed`` ticks/s while its torque is on and stays
    where it is when off (a held arm; the SO-101 cell's MuJoCo model does gravity)."""

    speed: float = 2000.0
    positions: dict[int, float] = field(default_factory=dict)
    goals: dict[int, tuple[int, bool]] = field(default_factory=dict)
    _last: dict[int, float] = field(default_factory=dict)

    def _advance(self, servo: int) -> float:
        now = time.monotonic()
        pos = self.positions.setdefault(servo, float(sts.CENTRE_TICK))
        goal, torque = self.goals.get(servo, (round(pos), False))
        dt = now - self._last.get(servo, now)
        self._last[servo] = now
        if torque:
            step = max(-self.speed * dt, min(self.speed * dt, goal - pos))
            pos = self.positions[servo] = pos + step
        return pos

    def command(self, servo: int, goal: int, torque: bool) -> None:
        self._advance(servo)
        self.goals[servo] = (goal, torque)

    def state(self, servo: int) -> tuple[int, int, int]:
        before = self.positions.get(servo, float(sts.CENTRE_TICK))
        pos = self._advance(servo)
        moving = round(pos) != round(before)
        return round(pos), int(self.speed) if moving else 0, 0


def _table(servo: int) -> bytearray:
    table = bytearray(256)
    for (address, length), value in {
        sts.MODEL_NUMBER: sts.STS3215_MODEL,
        sts.ID: servo,
        sts.MIN_POSITION_LIMIT: 0,
        sts.MAX_POSITION_LIMIT: sts.TICKS_PER_TURN - 1,
        sts.MAX_TEMPERATURE_LIMIT: 70,
        sts.GOAL_POSITION: sts.CENTRE_TICK,
        sts.PRESENT_VOLTAGE: 120,  # 12.0 V
        sts.PRESENT_TEMPERATURE: 30,
    }.items():
        table[address : address + length] = bytes(sts.little_endian(value, length))
    return table


class FeetechPeer(PtyPeer):
    """See the module docstring. ``start`` plugs the pty and serves it from a thread."""

    thread_name = "feetech-peer"

    def __init__(self, link: str | Path, ids: Iterable[int] = range(1, 7),
                 arm: ServoArm | None = None):  # fmt: skip
        super().__init__(link)
        self.arm = arm or BoundedSpeedServos()
        self.tables = {int(i): _table(int(i)) for i in ids}
        self.errors: dict[int, int] = {}
        self.silent: set[int] = set()
        self.bad_packets = 0
        self.goal_writes: list[dict[int, int]] = []
        """Every write of goal positions, in order, as {servo: ticks}."""
        self._corrupt = self._truncate = 0
        self._buffer = bytearray()
        for servo in self.tables:  # powered up: the goal is where the servo is, torque off
            self._write_entry(servo, sts.GOAL_POSITION, self.arm.state(servo)[0])

    # the cell's and the tests' handles

    def silence(self, servo: int, silent: bool = True) -> None:
        (self.silent.add if silent else self.silent.discard)(servo)

    def set_error(self, servo: int, bits: int) -> None:
        with self._lock:
            self.errors[servo] = bits
            if bits & PROTECTIVE_ERRORS:
                self._write_entry(servo, sts.TORQUE_ENABLE, 0)

    def set_temperature(self, servo: int, celsius: int) -> None:
        with self._lock:
            self._write_entry(servo, sts.PRESENT_TEMPERATURE, celsius)

    def corrupt_next(self, answers: int) -> None:
        self._corrupt = answers

    def truncate_next(self, answers: int) -> None:
        self._truncate = answers

    def entry(self, servo: int, entry: tuple[int, int]) -> int:
        address, length = entry
        with self._lock:
            self._refresh(servo)
            return sts.from_little_endian(self.tables[servo][address : address + length])

    def torque(self, servo: int) -> bool:
        return bool(self.entry(servo, sts.TORQUE_ENABLE))

    # the bus

    def _plugged(self) -> None:
        self._buffer.clear()

    def _received(self, data: bytes) -> None:
        with self._lock:
            self._buffer.extend(data)
            answers = list(self._packets())
        for answer in answers:
            self._send(answer)

    def _packets(self):
        """Answers to every whole instruction packet in the buffer."""
        buf = self._buffer
        while True:
            start = buf.find(b"\xff\xff")
            if start < 0:
                del buf[:-1]  # keep a trailing 0xFF: it may start a header
                return
            del buf[:start]
            if len(buf) < 4:
                return
            total = buf[3] + 4
            if buf[3] < 2:  # no room for an instruction: not a packet
                del buf[:1]
                continue
            if len(buf) < total:
                return
            packet, buf[:total] = bytes(buf[:total]), b""
            if packet[-1] != checksum(packet[2:-1]):
                self.bad_packets += 1
                continue
            yield from self._execute(packet[2], packet[4], packet[5:-1])

    def _execute(self, servo: int, instruction: int, params: bytes):
        if instruction == SYNC_WRITE and servo == BROADCAST and len(params) >= 2:
            address, length = params[0], params[1]
            goals = {}
            for at in range(2, len(params) - length, length + 1):
                target, data = params[at], params[at + 1 : at + 1 + length]
                if target in self.tables:
                    self._write(target, address, data)
                    if (address, length) == sts.GOAL_POSITION:
                        goals[target] = sts.from_little_endian(data)
            if goals:
                self.goal_writes.append(goals)
        elif instruction == SYNC_READ and servo == BROADCAST and len(params) >= 2:
            address, length = params[0], params[1]
            for target in params[2:]:
                if target in self.tables:
                    yield target, self._read(target, address, length)
        elif servo in self.tables and instruction == PING:
            yield servo, b""
        elif servo in self.tables and instruction == READ and len(params) == 2:
            yield servo, self._read(servo, params[0], params[1])
        elif servo in self.tables and instruction == WRITE and params:
            self._write(servo, params[0], params[1:])
            if params[0] == sts.GOAL_POSITION[0] and len(params) == 3:
                self.goal_writes.append({servo: sts.from_little_endian(params[1:])})
            yield servo, b""

    def _read(self, servo: int, address: int, length: int) -> bytes:
        self._refresh(servo)
        return bytes(self.tables[servo][address : address + length])

    def _write(self, servo: int, address: int, data: bytes) -> None:
        table = self.tables[servo]
        table[address : address + len(data)] = data
        if self.errors.get(servo, 0) & PROTECTIVE_ERRORS:  # protection holds the torque off
            table[sts.TORQUE_ENABLE[0]] = 0
        self._command(servo)

    def _write_entry(self, servo: int, entry: tuple[int, int], value: int) -> None:
        address, length = entry
        self._write(servo, address, bytes(sts.little_endian(value, length)))

    def _command(self, servo: int) -> None:
        table = self.tables[servo]
        goal = sts.from_little_endian(table[sts.GOAL_POSITION[0] : sts.GOAL_POSITION[0] + 2])
        self.arm.command(servo, goal, bool(table[sts.TORQUE_ENABLE[0]]))

    def _refresh(self, servo: int) -> None:
        position, velocity, load = self.arm.state(servo)
        table = self.tables[servo]
        for entry, value in (
            (sts.PRESENT_POSITION, max(0, min(sts.TICKS_PER_TURN - 1, position))),
            (sts.PRESENT_VELOCITY, sts.to_sign_magnitude(velocity)),
            (sts.PRESENT_LOAD, sts.to_sign_magnitude(load, 10)),
            (sts.MOVING, int(velocity != 0)),
        ):
            address, length = entry
            table[address : address + length] = bytes(sts.little_endian(value, length))

    def _send(self, answer: tuple[int, bytes]) -> None:
        servo, params = answer
        if servo in self.silent:
            return
        packet = bytearray(status_packet(servo, self.errors.get(servo, 0), params))
        if self._corrupt > 0:
            self._corrupt -= 1
            packet[-1] ^= 0xFF
        elif self._truncate > 0:
            self._truncate -= 1
            packet = packet[: len(packet) // 2]
        self._port.write(bytes(packet))
