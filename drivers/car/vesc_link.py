"""The VESC node's serial side, in a thread of its own: every ``1 / telemetry_hz`` it writes the
command in force (motor set-point and servo position), asks for the telemetry (COMM_GET_VALUES
and, if asked, COMM_GET_IMU_DATA) and hands the answers to callbacks.

What reaches the motor is decided here, not in the ROS callbacks, so that a stalled executor
cannot leave a motor running: the command in force is zero (motor) and centre (servo) when
motion is disabled, the e-stop is engaged, no command arrived within ``watchdog_timeout``, or
the VESC has been silent for ``silent_timeout``. A port that goes away (USB unplugged: an I/O
error, or the device path gone) is closed and reopened every ``reconnect_period``.

The thread is a ``SupervisedLoop`` (``robot_rl.drivers.supervision``): any exception in it (an
answer whose CRC is right but whose content does not decode, a callback's bug) zeroes the
motor, is reported through ``on_fault`` and restarts the connection (the port is reopened, the
packet reader starts afresh); commands stay zero until the restart is done. The command
watchdog runs in a thread of its own (``vesc-watchdog``): it zeroes the motor when commands ran
out, and when the link's thread has stopped finishing its cycles (a hang).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from robot_rl.drivers.car import vesc_protocol as proto
from robot_rl.drivers.supervision import SupervisedLoop, Watchdog

STALL_PERIODS = 10
"""The link's thread counts as hung when no cycle finished for this many telemetry periods (and
at least ``silent_timeout``): the watchdog then zeroes the motor from its own thread."""


class ConnectError(RuntimeError):
    """The serial port cannot be opened."""


@dataclass(frozen=True)
class LinkSettings:
    port: str
    baud: int
    mode: str
    """``rpm`` or ``duty``: which COMM_SET_* the motor set-point goes out as."""
    servo_centre: float
    telemetry_hz: float
    watchdog_timeout: float
    silent_timeout: float
    reconnect_period: float
    imu: bool
    brake_current: float = 0.0
    """A stop (zero set-point) goes out as COMM_SET_CURRENT_BRAKE with this current (A) when
    > 0: in duty mode, or below the speed controller's minimum ERPM, zero lets the car coast."""


def _serial_port(settings: LinkSettings):
    import serial

    try:
        return serial.Serial(settings.port, settings.baud, timeout=0.01, write_timeout=0.5)
    except serial.SerialException as error:
        raise OSError(str(error)) from None


class VescLink:
    def __init__(
        self,
        settings: LinkSettings,
        on_values: Callable[[proto.Values, float, float], None],
        on_imu: Callable[[proto.ImuData, float], None] | None = None,
        log: Callable[[str, str], None] = lambda level, message: None,
        on_fault: Callable[[str], None] | None = None,
        open_port: Callable[[LinkSettings], Any] | None = None,
    ):
        """``open_port(settings)``: the serial port (pyserial's by default; raises ``OSError``);
        the parser-layer tests give one that replays recorded bytes."""
        self.settings = settings
        self._open_port = open_port or _serial_port
        self._on_values = on_values
        self._on_imu = on_imu
        self._log = log
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._port = None
        self._reader = proto.PacketReader()
        self._target = (0.0, settings.servo_centre)
        self._target_time = -float("inf")
        period = 1.0 / settings.telemetry_hz
        self.loop = SupervisedLoop(
            "vesc-link",
            self._iteration,
            stop=self._stop_after_fault,
            restart=self._restart_connection,
            report=on_fault,
            log=log,
            restart_delay=min(settings.reconnect_period, 0.2),
        )
        self.watchdog = Watchdog(
            "vesc-watchdog", min(period, settings.watchdog_timeout / 3), self._guard, log
        )
        self._stall_bound = max(settings.silent_timeout, STALL_PERIODS * period)
        self._next_retry = 0.0
        self._due = time.monotonic()
        self._expired_seen = -float("inf")
        self.enabled = False
        self.estopped = False
        self.applied = (0.0, settings.servo_centre)
        """The (motor, servo) last written to the VESC."""
        self.last_answer: float | None = None
        self.connected_since: float | None = None
        self.reconnects = 0
        self.watchdog_stops = 0
        self.cycles = 0
        self.last_error = ""
        self.malformed = 0
        """Answers whose CRC was right and whose content did not decode (each one a fault)."""
        self._crc_errors_before = 0

    def connect(self) -> None:
        """Open the port once (configure); raises ConnectError in one line."""
        try:
            self._open()
        except OSError as error:
            raise ConnectError(
                f"cannot open the VESC's port {self.settings.port}: {error.strerror or error}"
            ) from None

    def _open(self) -> None:
        port = self._open_port(self.settings)
        with self._lock:
            self._port = port
            self._crc_errors_before += self._reader.crc_errors
            self._reader = proto.PacketReader()
        self.connected_since = time.monotonic()
        self.last_answer = None

    def _drop(self, why: str) -> None:
        with self._lock:
            port, self._port = self._port, None
        if port is not None:
            with contextlib.suppress(OSError):
                port.close()
            self.last_error = why
            self._log(
                "warning",
                f"lost the VESC on {self.settings.port}: {why}; retrying "
                f"every {self.settings.reconnect_period:g} s",
            )

    @property
    def connected(self) -> bool:
        return self._port is not None

    @property
    def crc_errors(self) -> int:
        return self._crc_errors_before + self._reader.crc_errors

    @property
    def silent(self) -> bool:
        """Connected, but no answer for ``silent_timeout`` (counting from the connection)."""
        if not self.connected:
            return False
        since = self.last_answer if self.last_answer is not None else self.connected_since
        return time.monotonic() - since > self.settings.silent_timeout

    def command(self, motor: float, servo: float) -> None:
        """A new set-point, in force until the watchdog runs out; written at once (not only on
        the next cycle), so a command waits for no telemetry period."""
        with self._lock:
            self._target = (float(motor), float(servo))
            self._target_time = time.monotonic()
        self._write_command(self.command_in_force())

    def stop_now(self) -> None:
        """Write zero at once (e-stop, deactivate), without waiting for the next cycle."""
        with self._lock:
            self._target_time = -float("inf")
        self._write_command(self._zero())

    def _zero(self) -> tuple[float, float]:
        return 0.0, self.settings.servo_centre

    def command_in_force(self) -> tuple[float, float]:
        with self._lock:
            target, age = self._target, time.monotonic() - self._target_time
        if (
            not self.enabled
            or self.estopped
            or self.silent
            or self.loop.restarting
            or self.stalled
            or age > self.settings.watchdog_timeout
        ):
            return self._zero()
        return target

    @property
    def stalled(self) -> bool:
        """The link's thread has not finished a cycle for a while (hung or gone)."""
        return self.loop.stalled(self._stall_bound)

    def _guard(self) -> None:
        """The watchdog, in its own thread: zero when commands ran out or the link hangs."""
        with self._lock:
            target_time = self._target_time
        expired = time.monotonic() - target_time > self.settings.watchdog_timeout
        if expired and target_time != -float("inf") and target_time != self._expired_seen:
            self._expired_seen = target_time
            self.watchdog_stops += 1
            self._log("info", "no fresh cmd_vel: the watchdog stops the car")
        stalled = self.stalled
        if stalled and self.applied != self._zero():
            self._log("error", "the vesc-link thread hangs: the watchdog zeroes the motor")
        if (expired or stalled or self.loop.restarting) and self.applied != self._zero():
            self._write_command(self._zero())

    def _stop_after_fault(self) -> None:
        with self._lock:
            self._target_time = -float("inf")  # the next command after the restart moves
        self._write_command(self._zero())

    def _restart_connection(self) -> None:
        """After a fault: reopen the port (the reader starts afresh) on the next iteration."""
        self._drop("restarting the link after a fault")
        self._next_retry = 0.0

    def _write_command(self, command: tuple[float, float]) -> None:
        motor, servo = command
        if motor == 0.0 and self.settings.brake_current > 0:
            motor_packet = proto.set_current_brake(self.settings.brake_current)
        elif self.settings.mode == "rpm":
            motor_packet = proto.set_rpm(motor)
        else:
            motor_packet = proto.set_duty(motor)
        self._write(proto.frame(motor_packet) + proto.frame(proto.set_servo_pos(servo)))
        self.applied = command

    def _write(self, data: bytes) -> None:
        with self._lock:
            port = self._port
        if port is None:
            return
        try:
            with self._write_lock:  # two threads write: packets must not interleave
                port.write(data)
        except Exception as error:  # serial.SerialException, OSError, write timeout
            self._drop(f"write failed: {error}")

    def start(self) -> None:
        self._due = time.monotonic()
        self.loop.start()
        self.watchdog.start()

    def close(self) -> None:
        self.loop.close(timeout=2.0)
        self.watchdog.close(timeout=2.0)
        if self._port is not None:
            self._write_command(self._zero())
            with self._lock:
                port, self._port = self._port, None
            port.close()

    @property
    def _running(self) -> bool:
        return self.loop.running

    def _iteration(self) -> None:
        """One telemetry period: reopen a lost port when due, write and ask, read answers."""
        period = 1.0 / self.settings.telemetry_hz
        now = time.monotonic()
        if self._port is None and now >= self._next_retry:
            self._next_retry = now + self.settings.reconnect_period
            try:
                self._open()
                self.reconnects += 1
                self._log("info", f"reconnected to the VESC on {self.settings.port}")
            except OSError as error:
                self.last_error = str(error)
        if self._port is not None:
            self._cycle()
        self._due = max(self._due + period, time.monotonic())
        self._read_until(self._due)

    def _cycle(self) -> None:
        was_silent = self.silent
        self._write_command(self.command_in_force())
        request = proto.frame(proto.get_values())
        if self.settings.imu:
            request += proto.frame(proto.get_imu_data())
        self._write(request)
        self.cycles += 1
        if self.silent and not was_silent:
            self._log(
                "error",
                f"the VESC on {self.settings.port} has not answered for "
                f"{self.settings.silent_timeout:g} s: motor zeroed",
            )

    def _read_until(self, deadline: float) -> None:
        while self._running:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with self._lock:
                port = self._port
            if port is None:
                time.sleep(min(left, 0.01))
                continue
            try:
                data = port.read(4096)
            except Exception as error:  # the device went away
                self._drop(f"read failed: {error}")
                continue
            if data:
                self.receive(data)

    def _handle(self, payloads: list[bytes]) -> None:
        """Hand decoded answers to the callbacks. An answer that passed the CRC but does not
        decode raises (``ValueError``): the VESC and this node disagree on the protocol, or the
        device misbehaves; that is no line noise to skip but a fault of the link."""
        stamp = time.time()
        for payload in payloads:
            try:
                if payload[0] == proto.COMM_GET_VALUES:
                    values = proto.decode_values(payload)
                elif payload[0] == proto.COMM_GET_IMU_DATA and self._on_imu is not None:
                    imu = proto.decode_imu(payload)
                else:
                    continue
            except ValueError as error:
                self.malformed += 1
                self.last_error = f"malformed answer: {error}"
                raise
            self.last_answer = time.monotonic()
            if payload[0] == proto.COMM_GET_VALUES:
                self._on_values(values, self.applied[1], stamp)
            else:
                self._on_imu(imu, stamp)

    def receive(self, data: bytes) -> None:
        """Bytes from the VESC, as the thread reads them (tests feed recorded bytes here)."""
        self._handle(self._reader.feed(data))
