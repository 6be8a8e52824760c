"""A VESC on a pseudo-terminal: the far end of the VESC node's serial port, written to the VESC
protocol (``robot_rl.drivers.car.vesc_protocol``) and to nothing in the node.

It answers COMM_GET_VALUES and COMM_GET_IMU_DATA from a drivetrain model and hands it the
COMM_SET_* commands. The node opens ``link`` (a symlink to the pty, as udev gives /dev/vesc), so
the peer can ``unplug`` and ``plug`` again on a new pty; tests can make it ``silent``, garble an
answer (``corrupt_next``) or send their own payload (``answer_next``). Models:
``SimpleDrivetrain`` (set-point reached at once) and the car cell's twin (``car_cell``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from robot_rl.drivers.car import vesc_protocol as proto
from robot_rl.sim.cells.pty_link import PtyPeer


class Drivetrain(Protocol):
    def apply(self, kind: str, value: float) -> None:
        """``kind``: duty, rpm, current, brake or servo."""

    def values(self) -> proto.Values: ...

    def imu(self) -> proto.ImuData: ...


@dataclass
class SimpleDrivetrain:
    """Reaches its set-point at once; the tachometer counts six steps per electrical turn."""

    erpm_per_duty: float = 40000.0
    erpm: float = 0.0
    duty: float = 0.0
    tachometer: float = 0.0
    imu_data: proto.ImuData = field(
        default_factory=lambda: proto.ImuData(
            (0.0, 0.0, 0.0), (0.0, 0.0, proto.STANDARD_GRAVITY), (0.0, 0.0, 0.0)
        )
    )
    _last: float = field(default_factory=time.monotonic)

    def _integrate(self) -> None:
        now = time.monotonic()
        self.tachometer += self.erpm / 60.0 * 6.0 * (now - self._last)
        self._last = now

    def apply(self, kind: str, value: float) -> None:
        self._integrate()
        if kind == "rpm":
            self.erpm, self.duty = value, value / self.erpm_per_duty
        elif kind == "duty":
            self.duty, self.erpm = value, value * self.erpm_per_duty
        elif kind == "brake" or (kind == "current" and value == 0.0):
            self.duty = self.erpm = 0.0

    def values(self) -> proto.Values:
        self._integrate()
        return proto.Values(
            erpm=self.erpm,
            duty=self.duty,
            tachometer=round(self.tachometer),
            tachometer_abs=abs(round(self.tachometer)),
        )

    def imu(self) -> proto.ImuData:
        return self.imu_data


_KINDS = {
    proto.COMM_SET_DUTY: "duty",
    proto.COMM_SET_RPM: "rpm",
    proto.COMM_SET_CURRENT: "current",
    proto.COMM_SET_CURRENT_BRAKE: "brake",
    proto.COMM_SET_SERVO_POS: "servo",
}


class VescPeer(PtyPeer):
    """See the module docstring. ``start`` opens the pty and serves it from a thread."""

    thread_name = "vesc-peer"

    def __init__(self, link: str | Path, model: Drivetrain | None = None, controller_id: int = 0):
        super().__init__(link)
        self.model = model or SimpleDrivetrain()
        self.controller_id = controller_id
        self.silent = False
        self.commands: list[tuple[str, float]] = []
        """Every set-point received, in order: (duty|rpm|current|servo, value)."""
        self.requests = 0
        self.reader = proto.PacketReader()
        self.bad_commands = 0
        self._corrupt = 0
        self._replacements: dict[int, list[bytes]] = {}

    def _plugged(self) -> None:
        self.reader = proto.PacketReader()

    def corrupt_next(self, answers: int) -> None:
        """Send the next ``answers`` answers with a wrong CRC."""
        self._corrupt = answers

    def answer_next(self, command_id: int, payload: bytes, times: int = 1) -> None:
        """Answer the next ``times`` requests ``command_id`` with ``payload`` (validly framed)."""
        with self._lock:
            self._replacements.setdefault(command_id, []).extend([bytes(payload)] * times)

    def last(self, kind: str) -> float | None:
        with self._lock:
            return next((v for k, v in reversed(self.commands) if k == kind), None)

    def _received(self, data: bytes) -> None:
        for payload in self.reader.feed(data):
            self._handle(payload)

    def _handle(self, payload: bytes) -> None:
        try:
            cid, value = proto.decode_command(payload)
        except ValueError:
            self.bad_commands += 1
            return
        if cid in _KINDS and value is not None:
            with self._lock:
                self.commands.append((_KINDS[cid], value))
            self.model.apply(_KINDS[cid], value)
            return
        if cid == proto.COMM_GET_VALUES:
            answer = proto.encode_values(self.model.values(), self.controller_id)
        elif cid == proto.COMM_GET_IMU_DATA:
            answer = proto.encode_imu(self.model.imu(), self.controller_id)
        else:
            return  # COMM_ALIVE and the rest: nothing to say
        with self._lock:
            queued = self._replacements.get(cid)
            if queued:
                answer = queued.pop(0)
        self.requests += 1
        if self.silent:
            return
        packet = bytearray(proto.frame(answer))
        if self._corrupt > 0:
            self._corrupt -= 1
            packet[-2] ^= 0xFF
        self._port.write(bytes(packet))
