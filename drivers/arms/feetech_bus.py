"""A bus of Feetech STS3215 servos through Feetech's own SDK (``scservo_sdk``, PyPI
``feetech-servo-sdk``): ping, sync read of the feedback, sync write of goal positions, torque on
and off (each servo's write acknowledged).

Every exchange that fails (no answer, a bad checksum, a truncated packet) is retried
``retries`` times with the input buffer cleared between tries, as a noisy half-duplex bus asks;
then it raises ``BusError``, one line naming the port, the servos and what went wrong. Error bits
in a servo's answer (overload, overheat, ...) are not a failed exchange: they are returned with
the feedback (``Feedback.errors``) for the node to act on. ``close`` and ``open`` again follow an
unplugged and replugged adapter (the port is reopened by name: a udev link such as
/dev/serial/by-id/... follows the adapter).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from robot_rl.drivers.arms import feetech_protocol as sts

DEFAULT_BAUDRATE = 1_000_000
PORT_ERRORS: tuple[type[BaseException], ...] = (OSError,)
"""What a serial port that went away raises: pyserial's errors are OSErrors; termios's are not."""
try:
    import termios

    PORT_ERRORS += (termios.error,)
except ImportError:  # not POSIX
    pass


BUS_ADAPTERS = {
    (0x1A86, 0x55D3): "CH343 (Waveshare bus servo adapter)",
    (0x1A86, 0x7523): "CH340",
    (0x1A86, 0x55D4): "CH9102",
    (0x0403, 0x6001): "FTDI FT232",
    (0x10C4, 0xEA60): "CP210x",
}
"""USB serial chips the servo bus boards of SO-100/SO-101 arms carry (vendor, product)."""


def discover_adapters(ports=None) -> list[dict]:
    """The USB serial ports whose chip a servo bus board carries, for ``robot-rl doctor``: one
    dict per port (kind, path, the /dev/serial/by-id link that survives a replug, chip, serial
    number). Which port is which arm: unplug one and run doctor again. ``ports``: pyserial's
    ``comports()`` (the default) or a recorded list of the same objects."""
    if ports is None:
        from serial.tools import list_ports

        ports = list_ports.comports()
    by_id = _by_id_links()
    found = []
    for port in ports:
        chip = BUS_ADAPTERS.get((port.vid, port.pid))
        if chip is None:
            continue
        found.append({
            "kind": "servo bus",
            "path": by_id.get(port.device, port.device),
            "device": port.device,
            "name": chip,
            "serial": port.serial_number or "",
        })  # fmt: skip
    return found


def _by_id_links() -> dict[str, str]:
    """/dev/ttyACM0 -> /dev/serial/by-id/usb-... (udev's stable names), where udev made them."""
    import glob
    import os

    return {os.path.realpath(link): link for link in glob.glob("/dev/serial/by-id/*")}


class BusError(RuntimeError):
    """An exchange on the bus failed after its retries, or the port cannot be opened."""


@dataclass(frozen=True)
class Feedback:
    """One servo's feedback: raw ticks and units as the servo reports them."""

    position: int
    velocity: int
    """Ticks per second, signed."""
    load: int
    """Per mille of the maximum torque, signed."""
    voltage: float
    """Volts."""
    temperature: int
    """Degrees Celsius."""
    errors: tuple[str, ...] = ()
    """The error bits of the servo's answer, by name (``feetech_protocol.ERROR_BITS``)."""


def _sdk():
    try:
        import scservo_sdk
    except ImportError as err:
        raise BusError(
            "the Feetech SDK is missing: pip install feetech-servo-sdk (or robot-rl[hardware])"
        ) from err
    return scservo_sdk


class FeetechBus:
    def __init__(self, port: str, ids: Iterable[int], baudrate: int = DEFAULT_BAUDRATE,
                 retries: int = 3):  # fmt: skip
        self.port_name = port
        self.ids = tuple(int(i) for i in ids)
        if not self.ids or any(not 0 <= i <= 252 for i in self.ids):
            raise ValueError(f"servo ids must be 0-252, got {list(self.ids)}")
        self.baudrate = baudrate
        self.retries = retries
        self._sdk = _sdk()
        self._port = None
        self._packets = None

    # the port

    @property
    def is_open(self) -> bool:
        return self._port is not None

    def open(self) -> FeetechBus:
        sdk = self._sdk
        port = sdk.PortHandler(self.port_name)
        try:
            opened = port.openPort() and port.setBaudRate(self.baudrate)
        except (*PORT_ERRORS, ValueError) as err:  # no such device, busy, a bad setting
            raise BusError(f"{self.port_name}: cannot open the servo bus: {err}") from None
        if not opened:
            raise BusError(f"{self.port_name}: cannot open at {self.baudrate} baud")
        self._port, self._packets = port, sdk.PacketHandler(0)  # 0: little-endian words
        return self

    def close(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            with contextlib.suppress(Exception):  # an unplugged adapter: nothing to close
                port.closePort()

    # exchanges

    def _exchange(self, what: str, attempt):
        """Run ``attempt() -> (result, value)`` until the SDK says success; BusError after the
        retries. A port gone under us (OSError) is one line too."""
        if self._port is None:
            raise BusError(f"{self.port_name}: the servo bus is not open")
        failure = ""
        for _ in range(self.retries + 1):
            try:
                result, value = attempt()
                if result == self._sdk.COMM_SUCCESS:
                    return value
                self._port.is_using = False
                self._port.ser.reset_input_buffer()  # a late or half answer is not read next
            except PORT_ERRORS as err:  # the adapter went away
                raise BusError(f"{self.port_name}: {what}: {_reason(err)}") from None
            failure = self._packets.getTxRxResult(result).split("] ")[-1].rstrip("!")
        raise BusError(f"{self.port_name}: {what}: {failure.lower()} ({self.retries + 1} tries)")

    def _whole(self, result: int, data, length: int) -> int:
        """An answer of the wrong length (a late answer to an earlier request, taken for this
        one: the SDK matches answers by servo id alone) counts as a corrupt packet."""
        if result == self._sdk.COMM_SUCCESS and len(data or ()) != length:
            return self._sdk.COMM_RX_CORRUPT
        return result

    def ping(self) -> dict[int, int]:
        """Every servo's model number; BusError naming the first that does not answer."""
        models = {}
        for servo in self.ids:

            def attempt(servo=servo):
                model, result, _ = self._packets.ping(self._port, servo)
                return result, model

            models[servo] = self._exchange(f"servo {servo} does not answer a ping", attempt)
        return models

    def read(self, servo: int, entry: tuple[int, int]) -> int:
        address, length = entry

        def attempt():
            data, result, _ = self._packets.readTxRx(self._port, servo, address, length)
            return self._whole(result, data, length), sts.from_little_endian(data or [])

        return self._exchange(f"servo {servo}: read of address {address}", attempt)

    def write(self, servo: int, entry: tuple[int, int], value: int) -> tuple[str, ...]:
        """Write one entry; returns the error bits the servo answered with."""
        address, length = entry

        def attempt():
            result, error = self._packets.writeTxRx(
                self._port, servo, address, length, sts.little_endian(value, length)
            )
            return result, tuple(sts.error_names(error))

        return self._exchange(f"servo {servo}: write of address {address}", attempt)

    def feedback(self) -> dict[int, Feedback]:
        """Position, velocity, load, voltage and temperature of every servo, in one sync read;
        BusError naming the first servo that did not answer."""
        address, length = sts.FEEDBACK
        missing: list[int] = []

        def attempt():
            missing.clear()
            ids = list(self.ids)
            result = self._packets.syncReadTx(self._port, address, length, ids, len(ids))
            answers = {}
            for servo in ids if result == self._sdk.COMM_SUCCESS else ():
                data, result, error = self._packets.readRx(self._port, servo, length)
                result = self._whole(result, data, length)
                if result != self._sdk.COMM_SUCCESS:
                    missing.append(servo)
                    break
                answers[servo] = _feedback(data, error)
            return result, answers

        try:
            return self._exchange("sync read of the feedback", attempt)
        except BusError as err:
            if missing:
                raise BusError(f"{err} (servo {missing[0]} did not answer)") from None
            raise

    def write_goals(self, goals: Mapping[int, int]) -> None:
        """Goal positions (ticks) of several servos in one sync write (no answer comes back)."""
        self._sync_write(sts.GOAL_POSITION, goals)

    def set_torque(self, enabled: bool) -> dict[int, tuple[str, ...]]:
        """Torque on or off, servo by servo, each write acknowledged (a sync write has no
        answer, and torque off must be known to have landed); returns each servo's error bits.
        Off goes to every servo before any failure is raised."""
        answers, failures = {}, []
        for servo in self.ids:
            try:
                answers[servo] = self.write(servo, sts.TORQUE_ENABLE, int(enabled))
            except BusError as err:
                if enabled:
                    raise
                failures.append(err)
        if failures:
            raise failures[0]
        return answers

    def _sync_write(self, entry: tuple[int, int], values: Mapping[int, int]) -> None:
        address, length = entry
        group = self._sdk.GroupSyncWrite(self._port, self._packets, address, length)
        for servo, value in values.items():
            group.addParam(int(servo), sts.little_endian(int(value), length))

        def attempt():
            return group.txPacket(), None

        self._exchange(f"sync write of address {address}", attempt)


def _reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    args = getattr(err, "args", ())
    return str(args[-1]) if len(args) == 2 else str(err)  # termios.error: (errno, text)


def _feedback(data, error: int) -> Feedback:
    """Addresses 56-63 of one servo's answer (``feetech_protocol.FEEDBACK``)."""
    word = lambda at: sts.from_little_endian(data[at - 56 : at - 54])
    return Feedback(
        position=word(56),
        velocity=sts.signed(word(58)),
        load=sts.signed(word(60), 10),  # the load's direction is bit 10
        voltage=data[62 - 56] / 10.0,
        temperature=data[63 - 56],
        errors=tuple(sts.error_names(error)),
    )
