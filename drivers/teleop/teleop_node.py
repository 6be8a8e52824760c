"""What the SpaceMouse and gamepad nodes share: a lifecycle node that drains a byte device into
a parser at ``rate_hz`` and publishes ``/teleop/twist`` and ``/teleop/joy`` (the teleop contract,
``teleop_mapping``), with ``/diagnostics``.

Configure opens the device (a missing one fails in one line), activate publishes, deactivate
publishes one released frame and stops, cleanup closes it. An unplugged device or a fault while
reading (``robot_rl.drivers.supervision``) publishes the released frame at once, is an ERROR on
/diagnostics, and the device is reopened every ``reconnect_interval``. A device is anything with
``read() -> bytes`` (``b""`` when nothing waits; ``OSError`` when gone) and ``close()``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Protocol

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import TwistStamped
from sensor_msgs.msg import Joy
from std_msgs.msg import Header

from robot_rl.drivers.supervision import FAULT_SHOWN_S, FaultLog
from robot_rl.drivers.teleop.configs import TeleopConfig
from robot_rl.drivers.teleop.teleop_mapping import RELEASED, TeleopFrame, TeleopMapper
from robot_rl.ros.convert import diagnostic_array
from robot_rl.ros.node_base import DeviceNode, ParameterError, declare_config
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, teleop_qos
from robot_rl.ros.teleop import JOY_TOPIC, TWIST_TOPIC

MAX_READS_PER_TICK = 256
"""Reports drained per tick at most (a device sends ~60-1000/s; this bounds one callback)."""


def checked(name: str, value, convert: Callable[[Any], Any]):
    """``convert(value)``, its ``ValueError`` naming the parameter (for ``build_mapper``)."""
    try:
        return convert(value)
    except ValueError as error:
        raise ValueError(f"parameter {name!r} = {value!r}: {error}") from None


OPERATOR_BUTTONS = ("success_button", "reject_button")
"""The parameters of the operator's success and reject buttons (``/teleop/joy`` buttons 3 and
4, ``robot_rl.ros.teleop_contract``), which every teleop device config has."""
BUTTON_PARAMS = ("intervene_button", "close_button", "open_button", *OPERATOR_BUTTONS)


def check_own_buttons(buttons: Mapping[str, Hashable | None], config) -> None:
    """Refuse a success or reject button that is also another of the device's mapped buttons
    (``buttons``: parameter name -> the device key, None where unset): a success on the
    gripper's close button would pay reward on every grasp."""
    for name in OPERATOR_BUTTONS:
        key = buttons.get(name)
        for other, other_key in buttons.items():
            if key is not None and other != name and other_key == key:
                raise ValueError(
                    f"parameter {name!r} = {getattr(config, name)!r} is also {other!r}; the "
                    "operator's success and reject each need a button of their own"
                )


def config_mapper(config, axes, button: Callable[[Any], Hashable | None]) -> TeleopMapper:
    """The ``TeleopMapper`` of a device config's scales and deadband, its parsed ``axes`` and
    its ``BUTTON_PARAMS``, each turned into a device key (None: unset) by ``button``."""
    buttons = {name: checked(name, getattr(config, name), button) for name in BUTTON_PARAMS}
    check_own_buttons(buttons, config)
    return TeleopMapper(
        axes,
        config.deadband,
        config.translation_scale,
        config.rotation_scale,
        intervene=buttons["intervene_button"],
        close=buttons["close_button"],
        open_=buttons["open_button"],
        intervene_toggle=config.intervene_toggle,
        success=buttons["success_button"],
        reject=buttons["reject_button"],
    )


class ByteDevice(Protocol):
    description: str
    """What diagnostics name as the hardware (path, model)."""

    def read(self) -> bytes: ...

    def close(self) -> None: ...


class DeviceMissing(RuntimeError):
    """The configured device is not there (or cannot be opened): one line, no traceback."""


class TeleopNode(DeviceNode):
    """Subclasses set ``node_name`` and ``config_class`` and implement ``build_mapper``,
    ``open_default`` and ``new_parser``/``feed``/``current``/``parser_counters``."""

    node_name = "teleop"
    config_class: type = TeleopConfig
    device_label = "teleop device"
    parser = None
    """What ``new_parser`` made of the device's state; None until the device is first open."""

    def __init__(self, opener: Callable[[Any], ByteDevice] | None = None, **kwargs):
        super().__init__(self.node_name, **kwargs)
        self.config = declare_config(self, self.config_class)
        try:
            self.mapper = self.build_mapper(self.config)
        except ValueError as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None
        self._opener = opener or self.open_default
        self.device: ByteDevice | None = None
        self.problem = "not configured"
        self.reconnects = 0
        self._ever_opened = False
        self._next_attempt = 0.0
        self._last_frame = RELEASED
        self.fault_log = FaultLog(f"{self.device_label} reader")
        # lifecycle transitions may come from another thread than the executor's (a test, a
        # multi-threaded executor): a tick must not publish motion after the safe stop's release
        self._lock = threading.RLock()
        self._twist_pub = self.create_publisher(TwistStamped, TWIST_TOPIC, teleop_qos())
        self._joy_pub = self.create_publisher(Joy, JOY_TOPIC, teleop_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self.create_timer(1.0 / self.config.rate_hz, self._tick)
        self.create_timer(1.0 / self.config.diagnostics_hz, self.publish_diagnostics)

    def build_mapper(self, config) -> TeleopMapper:
        raise NotImplementedError

    def open_default(self, config) -> ByteDevice:
        """Open the real device named by ``config``; raise ``DeviceMissing`` if it is not there."""
        raise NotImplementedError

    def new_parser(self, device: ByteDevice) -> None:
        """Start a fresh parser for a just-opened device."""
        raise NotImplementedError

    def feed(self, data: bytes) -> None:
        raise NotImplementedError

    def current(self) -> TeleopFrame:
        """The mapped frame of the parser's current state."""
        raise NotImplementedError

    def parser_counters(self) -> dict[str, str]:
        """The parser's counters for /diagnostics (called once there is a parser)."""
        return {}

    def open_device(self) -> None:
        with self._lock:
            try:
                self._connect()
            except DeviceMissing as error:
                self.problem = str(error)  # diagnostics say why the node is not configured
                raise

    def enable_motion(self) -> None:
        with self._lock:
            self.mapper.reset()
            if self.device is not None:
                try:
                    self._drain()  # reports queued while inactive describe the past
                except (OSError, ValueError) as error:
                    self._lost(error)  # unplugged while inactive: the ticks reopen it
                except Exception as error:
                    self._fault(error)

    def safe_stop(self) -> None:
        with self._lock:
            self.mapper.reset()
            self._publish(RELEASED)

    def close_device(self) -> None:
        with self._lock:
            self._close("closed")

    def _connect(self) -> None:
        try:
            device = self._opener(self.config)
        except DeviceMissing:
            raise
        except Exception as error:  # a library's own error: say which device, in one line
            raise DeviceMissing(f"cannot open the {self.device_label}: {error}") from None
        try:
            self.new_parser(device)
        except Exception as error:
            device.close()
            raise DeviceMissing(f"cannot read the {self.device_label}'s state: {error}") from None
        self.device = device
        self.mapper.reset()
        if self._ever_opened:
            self.reconnects += 1
            self.get_logger().info(f"{self.device_label} back: {device.description}")
        self._ever_opened = True
        self.problem = ""
        self.publish_diagnostics()

    def _close(self, why: str) -> None:
        device, self.device = self.device, None
        if device is not None:
            # closing a device that is already gone may fail; it is gone either way
            with contextlib.suppress(Exception):
                device.close()
        self.problem = why

    def _lost(self, error: Exception) -> None:
        self._close(
            f"{self.device_label} lost ({error}); retrying every "
            f"{self.config.reconnect_interval:g} s"
        )
        self.get_logger().warning(self.problem)
        self.mapper.reset()
        self._publish(RELEASED)
        self._next_attempt = time.monotonic() + self.config.reconnect_interval
        self.publish_diagnostics()

    def _fault(self, error: Exception) -> None:
        """Anything but a lost device: released at once, reported, the device reopened."""
        message = self.fault_log.record(error, "released (no motion, intervention off)")
        self.get_logger().error(message)
        self._close(message)
        self.mapper.reset()
        self._publish(RELEASED)
        self._next_attempt = time.monotonic() + min(self.config.reconnect_interval, 0.2)
        self.publish_diagnostics()

    def _drain(self) -> TeleopFrame:
        """Feed what the device has queued; the frame of the newest state, with every button
        that was down at any report since the last tick (a tap shorter than one tick is still
        published once, and a toggle sees each edge)."""
        held = RELEASED.buttons
        for _ in range(MAX_READS_PER_TICK):
            data = self.device.read()
            if not data:
                break
            self.feed(data)
            held = tuple(max(a, b) for a, b in zip(held, self.current().buttons, strict=True))
        frame = self.current()
        buttons = tuple(max(a, b) for a, b in zip(held, frame.buttons, strict=True))
        return TeleopFrame(frame.twist, buttons)

    def _tick(self) -> None:
        with self._lock:
            if self.motion_enabled:
                self._step()

    def _step(self) -> None:
        if self.device is None and time.monotonic() >= self._next_attempt:
            try:
                self._connect()
            except DeviceMissing as error:
                self.problem = f"{error}; retrying every {self.config.reconnect_interval:g} s"
                self._next_attempt = time.monotonic() + self.config.reconnect_interval
        frame = RELEASED
        if self.device is not None:
            try:
                frame = self._drain()
            except (OSError, ValueError) as error:  # hidapi: OSError / ValueError once closed
                self._lost(error)
                frame = RELEASED
            except Exception as error:  # the parser's or the mapping's fault, not the device's
                self._fault(error)
                frame = RELEASED
        self._publish(frame)

    def _publish(self, frame: TeleopFrame) -> None:
        header = Header(stamp=self.get_clock().now().to_msg(), frame_id=self.config.frame_id)
        twist = TwistStamped(header=header)
        t = twist.twist
        (t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z) = frame.twist
        joy = Joy(header=header, axes=[float(v) for v in frame.twist], buttons=list(frame.buttons))
        self._twist_pub.publish(twist)
        self._joy_pub.publish(joy)
        self._last_frame = frame

    def publish_diagnostics(self) -> None:
        fault = self.fault_log.recent(max(FAULT_SHOWN_S, 3.0 / self.config.diagnostics_hz))
        if fault is not None:
            level, message = DiagnosticStatus.ERROR, fault
        elif self.device is None:
            level, message = DiagnosticStatus.ERROR, self.problem or "no device"
        elif not self.motion_enabled:
            level, message = DiagnosticStatus.WARN, "device open, not publishing (inactive)"
        else:
            level, message = DiagnosticStatus.OK, "publishing"
        values = {
            "connected": str(self.device is not None),
            "active": str(self.motion_enabled),
            "reconnects": str(self.reconnects),
            "intervene": str(bool(self._last_frame.buttons[0])),
            **self.fault_log.fields(),
            **(self.parser_counters() if self.parser is not None else {}),
        }
        hardware = self.device.description if self.device is not None else ""
        array = diagnostic_array(self, level, message, hardware, values, 0.0)
        array.header.stamp = self.get_clock().now().to_msg()  # on the node's clock
        self._diag_pub.publish(array)
