"""The VESC node's serial side, in a thread of its own: every ``1 / telemetry_hz`` it writes the
command in force (motor set-point and servo position), asks for the telemetry (COMM_GET_VALUES
and, if asked, COMM_GET_IMU_DATA) and hands the answers to callbacks.

What reaches the motor is decided here, not in the ROS callbacks, so that a stalled executor
cannot leave a motor running: the command in force is zero (motor) and centre (servo) when
motion is disabled, the e-stop is engaged, no command arrived within ``watchdog_timeout``, or
the VESC has been silent for ``silent_timeout``. A port that goes away (USB unplugged: an I/O
error, or the device path gone) is closed and reopened every ``reconnect_period``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from robot_rl.drivers.car import vesc_protocol as proto


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


class VescLink:
    def __init__(
        self,
        settings: LinkSettings,
        on_values: Callable[[proto.Values, float, float], None],
        on_imu: Callable[[proto.ImuData, float], None] | None = None,
        log: Callable[[str, str], None] = lambda level, message: None,
    ):
        self.settings = settings
        self._on_values = on_values
        self._on_imu = on_imu
        self._log = log
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._port = None
        self._reader = proto.PacketReader()
        self._target = (0.0, settings.servo_centre)
        self._target_time = -float("inf")
        self._thread: threading.Thread | None = None
        self._running = False
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
        self._crc_errors_before = 0
        self._holding = True

    def connect(self) -> None:
        """Open the port once (configure); raises ConnectError in one line."""
        try:
            self._open()
        except OSError as error:
            raise ConnectError(
                f"cannot open the VESC's port {self.settings.port}: {error.strerror or error}"
            ) from None

    def _open(self) -> None:
        import serial

        try:
            port = serial.Serial(
                self.settings.port, self.settings.baud, timeout=0.01, write_timeout=0.5
            )
        except serial.SerialException as error:
            raise OSError(str(error)) from None
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
        if not self.enabled or self.estopped or self.silent:
            return self._zero()
        if age > self.settings.watchdog_timeout:
            if not self._holding and age != float("inf"):
                self.watchdog_stops += 1
                self._log("info", "no fresh cmd_vel: the watchdog stops the car")
            self._holding = True
            return self._zero()
        self._holding = False
        return target

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
        self._running = True
        self._thread = threading.Thread(target=self._run, name="vesc-link", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._running = False
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._port is not None:
            self._write_command(self._zero())
            with self._lock:
                port, self._port = self._port, None
            port.close()

    def _run(self) -> None:
        period = 1.0 / self.settings.telemetry_hz
        next_retry = 0.0
        due = time.monotonic()
        while self._running:
            now = time.monotonic()
            if self._port is None and now >= next_retry:
                next_retry = now + self.settings.reconnect_period
                try:
                    self._open()
                    self.reconnects += 1
                    self._log("info", f"reconnected to the VESC on {self.settings.port}")
                except OSError as error:
                    self.last_error = str(error)
            if self._port is not None:
                self._cycle()
            due = max(due + period, time.monotonic())
            self._read_until(due)

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
                self._handle(self._reader.feed(data))

    def _handle(self, payloads: list[bytes]) -> None:
        stamp = time.time()
        for payload in payloads:
            try:
                if payload[0] == proto.COMM_GET_VALUES:
                    values = proto.decode_values(payload)
                    self.last_answer = time.monotonic()
                    self._on_values(values, self.applied[1], stamp)
                elif payload[0] == proto.COMM_GET_IMU_DATA and self._on_imu is not None:
                    imu = proto.decode_imu(payload)
                    self.last_answer = time.monotonic()
                    self._on_imu(imu, stamp)
            except ValueError as error:
                self.last_error = f"malformed answer: {error}"
