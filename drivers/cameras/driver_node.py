"""What every camera driver node shares: lifecycle, reader thread, publishing and diagnostics;
a driver brings a ``CameraSource`` (how to open the device and read frames from it).

Topics, as the twin's camera node publishes them: ``image_raw`` and ``camera_info``, with depth
``depth/image_raw`` (16UC1, mm) and ``depth/camera_info``, on sensor-data QoS; ``/diagnostics``.
Configure opens the device (a missing one fails in one line), activate publishes, deactivate
stops publishing, cleanup closes it. A stalled source is reported, then closed and reopened; the
reader is a ``SupervisedLoop`` (``robot_rl.drivers.supervision``); a frame that is stale,
repeated, malformed or not finitely stamped never reaches a subscriber.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from sensor_msgs.msg import CameraInfo, Image

from robot_rl.drivers.cameras.configs import CameraConfig
from robot_rl.drivers.cameras.image_pipeline import (
    FrameGeometry,
    FreshnessGate,
    Intrinsics,
)
from robot_rl.drivers.supervision import FAULT_SHOWN_S, SupervisedLoop
from robot_rl.ros.convert import array_to_image, diagnostic_array, header
from robot_rl.ros.node_base import DeviceNode, declare_config
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, sensor_qos

STREAM_TOPICS = {"color": "", "depth": "depth/"}
PIXEL_LAYOUT = {"rgb8": (np.uint8, 3), "bgr8": (np.uint8, 3), "mono8": (np.uint8, 1),
                "16UC1": (np.uint16, 1)}  # fmt: skip
"""Each encoding's pixel dtype and channels (1: a 2-D array)."""


def frame_problem(frame: Frame) -> str | None:
    """Why ``frame`` must not be published (its pixels do not fit its encoding, it is empty,
    its stamp is not finite), or None."""
    layout = PIXEL_LAYOUT.get(frame.encoding)
    if layout is None:
        return f"unknown encoding {frame.encoding!r}"
    pixels = frame.pixels
    if not isinstance(pixels, np.ndarray):
        return f"pixels are a {type(pixels).__name__}, not an array"
    dtype, channels = layout
    shape_ok = pixels.ndim == 2 if channels == 1 else pixels.ndim == 3
    if channels == 1 and pixels.ndim == 3 and pixels.shape[2] == 1:
        shape_ok = True
    if not shape_ok or (channels > 1 and pixels.shape[2] != channels):
        return f"{frame.encoding} frame of shape {pixels.shape}"
    if pixels.dtype != dtype:
        return f"{frame.encoding} frame of dtype {pixels.dtype}"
    if pixels.shape[0] == 0 or pixels.shape[1] == 0:
        return f"empty {frame.encoding} frame {pixels.shape}"
    if not math.isfinite(frame.stamp):
        return f"non-finite stamp {frame.stamp}"
    return None


class SourceMissing(RuntimeError):
    """The device is not there (unplugged, wrong serial, no such file): worth retrying."""


@dataclass
class Frame:
    stream: str
    """``color`` or ``depth``."""
    pixels: np.ndarray
    encoding: str
    """Of ``pixels``: rgb8, bgr8 (published as rgb8), mono8 or 16UC1 (depth, millimetres)."""
    stamp: float
    """Capture time on the host's clock (s since the epoch)."""
    intrinsics: Intrinsics
    keepalive: Any = field(default=None, repr=False)
    """The device library's frame, held while ``pixels`` is a view of its memory."""
    in_color_frame: bool = True
    """Seen from the colour camera (depth aligned to it): published in the node's frame_id;
    otherwise in ``<frame_id>_<stream>``."""


class CameraSource(Protocol):
    description: str
    """The device in words, for diagnostics' hardware_id (e.g. ``realsense/123456``)."""
    ended: str | None
    """Why no frame will ever come again (the end of a file), or None."""
    sizes: dict[str, tuple[int, int]]
    """(width, height) of each stream's frames, known once open."""

    def open(self) -> None:
        """Connect and start streaming; raise ``SourceMissing`` or ``ValueError`` with one
        line that says what is wrong."""

    def read(self, timeout: float) -> list[Frame] | None:
        """The next frames (one per stream), or None if none came within ``timeout``; raises
        ``SourceMissing`` when the device went away."""

    def close(self) -> None: ...


def camera_info_msg(intrinsics: Intrinsics, stamp: float, frame_id: str) -> CameraInfo:
    i = intrinsics
    msg = CameraInfo(header=header(stamp, frame_id), width=i.width, height=i.height)
    msg.distortion_model = i.distortion_model
    msg.d = [float(c) for c in i.coefficients]
    msg.k = [i.fx, 0.0, i.cx, 0.0, i.fy, i.cy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [i.fx, 0.0, i.cx, 0.0, 0.0, i.fy, i.cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


class CameraDriverNode(DeviceNode):
    """Subclasses set ``config_class`` and implement ``make_source`` and ``streams``."""

    config_class: type = CameraConfig

    def __init__(self, name: str, **kwargs):
        super().__init__(name, **kwargs)
        self.config = declare_config(self, self.config_class)
        self.frame_id = self.config.frame_id or f"{self.get_name()}_optical_frame"
        self._stream_pubs = {
            stream: (
                self.create_publisher(Image, f"{STREAM_TOPICS[stream]}image_raw", sensor_qos()),
                self.create_publisher(
                    CameraInfo, f"{STREAM_TOPICS[stream]}camera_info", sensor_qos()
                ),
            )
            for stream in self.streams()
        }
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self.create_timer(1.0 / self.config.diagnostics_hz, self.publish_diagnostics)
        self._source: CameraSource | None = None
        self._reader: SupervisedLoop | None = None
        self._stop = threading.Event()
        self._gates = {s: FreshnessGate(self.config.max_frame_age) for s in self.streams()}
        self._geometry: dict[tuple[str, int, int], FrameGeometry] = {}
        self.published = dict.fromkeys(self.streams(), 0)
        self.last_drop: str | None = None
        self.refused_frames = 0
        self._last_frame_at: float | None = None  # monotonic time of the last frame read
        self._disconnected: str | None = None
        self._reconnects = 0
        self._next_attempt = 0.0
        self._configure_error: str | None = None
        self._last_published_at = time.monotonic()

    def streams(self) -> tuple[str, ...]:
        return ("color",)

    def make_source(self) -> CameraSource:
        raise NotImplementedError

    def open_device(self) -> None:
        self._configure_error = None
        source = self.make_source()
        try:
            source.open()
        except Exception as error:
            self._configure_error = str(error)
            raise
        try:
            for stream, (width, height) in source.sizes.items():
                self.geometry(width, height, stream)  # a crop that does not fit fails here
        except ValueError as error:
            self._configure_error = str(error)
            source.close()
            raise
        self._source, self._disconnected = source, None
        self._last_frame_at = time.monotonic()
        self._stop.clear()
        self._reader = SupervisedLoop(
            "camera-reader",
            self._read_step,
            stop=lambda: None,  # a camera moves nothing: its frames just stop
            restart=lambda: self._lose("restarting the reader after a fault"),
            report=lambda message: self.publish_diagnostics(),
            log=self.log,
            restart_delay=min(self.config.reconnect_period, 0.2),
        ).start()

    def enable_motion(self) -> None:
        self._last_published_at = time.monotonic()

    def close_device(self) -> None:
        self._stop.set()
        if self._reader is not None:
            self._reader.close(timeout=30.0)
            self._reader = None
        self._close_source()

    def _close_source(self) -> None:
        source, self._source = self._source, None
        if source is not None:
            try:
                source.close()
            except Exception as error:  # a vanished device may not close cleanly
                self.get_logger().warning(f"closing {source.description}: {error}")

    def _read_step(self) -> None:
        if self._stop.is_set() or not self.context.ok():
            self._stop.wait(0.05)  # closing: a publish after shutdown is an ordinary end
            return
        if self._source is None:
            self._try_reconnect()
        else:
            self._read_once(self._source)

    def _read_once(self, source: CameraSource) -> None:
        try:
            frames = source.read(self.config.read_timeout)
        except Exception as error:  # whatever the library raises, the device is gone for now
            self._lose(f"device lost: {error}")
            return
        if not frames:
            silent = time.monotonic() - self._last_frame_at
            if source.ended is None and silent > self.config.reconnect_after:
                self._lose(f"no frame for {silent:.1f} s")
            return
        self._last_frame_at = time.monotonic()
        for frame in frames:
            problem = frame_problem(frame)
            if problem is not None:
                self.refused_frames += 1
                self.last_drop = f"{frame.stream}: {problem}"
                self.get_logger().warning(
                    f"refused a frame: {self.last_drop}", throttle_duration_sec=5.0
                )
                continue
            try:
                self._publish(frame)
            except ValueError as error:  # e.g. a reconnected device at another frame size
                self.last_drop = f"{frame.stream}: {error}"
                self.get_logger().error(
                    f"cannot publish a frame: {self.last_drop}", throttle_duration_sec=5.0
                )

    def _lose(self, reason: str) -> None:
        self.get_logger().warning(f"{reason}; reconnecting", throttle_duration_sec=5.0)
        self._close_source()
        self._disconnected = reason
        self._next_attempt = time.monotonic()

    def _try_reconnect(self) -> None:
        wait = self._next_attempt - time.monotonic()
        if wait > 0:
            self._stop.wait(min(wait, self.config.read_timeout))
            return
        self._next_attempt = time.monotonic() + self.config.reconnect_period
        source = self.make_source()
        try:
            source.open()
        except Exception as error:
            self._disconnected = f"{error}"
            return
        for gate in self._gates.values():
            gate.reset()  # a new stream: its stamps start afresh
        self._last_frame_at = time.monotonic()
        self._source, self._disconnected = source, None
        self._reconnects += 1
        self.get_logger().info(f"reconnected to {source.description}")

    def geometry(self, width: int, height: int, stream: str = "color") -> FrameGeometry:
        """Crop and resize for a ``width`` x ``height`` frame (ValueError: crop does not fit)."""
        key = (stream, width, height)
        if key not in self._geometry:
            self._geometry[key] = FrameGeometry.build(
                (width, height), self.config.crop, self.config.resize
            )
        return self._geometry[key]

    def _publish(self, frame: Frame) -> None:
        reason = self._gates[frame.stream].refuse(frame.stamp, time.time())
        if reason is not None:
            self.last_drop = f"{frame.stream}: {reason}"
            self.get_logger().warning(
                f"dropped a stale frame: {self.last_drop}", throttle_duration_sec=5.0
            )
            return
        if not self.motion_enabled:
            return
        height, width = frame.pixels.shape[:2]
        geometry = self.geometry(width, height, frame.stream)
        pixels = geometry.apply(frame.pixels, nearest=frame.stream == "depth")
        encoding = frame.encoding
        if encoding == "bgr8":
            pixels, encoding = np.ascontiguousarray(pixels[:, :, ::-1]), "rgb8"
        frame_id = self.frame_id if frame.in_color_frame else f"{self.frame_id}_{frame.stream}"
        image_pub, info_pub = self._stream_pubs[frame.stream]
        image_pub.publish(array_to_image(pixels, encoding, frame.stamp, frame_id))
        info_pub.publish(camera_info_msg(geometry.adjust(frame.intrinsics), frame.stamp, frame_id))
        self.published[frame.stream] += 1
        self._last_published_at = time.monotonic()

    def status(self) -> tuple[int, str]:
        """Diagnostic level and message."""
        fault = (
            self._reader.recent_fault(max(FAULT_SHOWN_S, 3.0 / self.config.diagnostics_hz))
            if self._reader is not None
            else None
        )
        if fault is not None:
            return DiagnosticStatus.ERROR, fault
        if self._reader is None:
            if self._configure_error is not None:
                return DiagnosticStatus.ERROR, f"not configured: {self._configure_error}"
            return DiagnosticStatus.WARN, "not configured (device closed)"
        if self._disconnected is not None:
            return (
                DiagnosticStatus.ERROR,
                f"device not connected ({self._disconnected}); retrying every "
                f"{self.config.reconnect_period:g} s",
            )
        silent = time.monotonic() - (self._last_frame_at or time.monotonic())
        source = self._source
        if source is not None and source.ended is not None:
            return DiagnosticStatus.ERROR, f"stalled: {source.ended}"
        if silent > self.config.stall_timeout:
            return DiagnosticStatus.ERROR, f"stalled: no frame for {silent:.1f} s"
        if not self.motion_enabled:
            return DiagnosticStatus.WARN, "streaming, not publishing (inactive)"
        unpublished = time.monotonic() - self._last_published_at
        if unpublished > self.config.stall_timeout:
            return (
                DiagnosticStatus.ERROR,
                f"frames arrive but none was published for "
                f"{unpublished:.1f} s (last refusal: {self.last_drop})",
            )
        return DiagnosticStatus.OK, "streaming"

    def publish_diagnostics(self) -> None:
        level, message = self.status()
        values = {f"published_{s}": str(n) for s, n in self.published.items()}
        values["dropped_stale"] = str(sum(g.dropped for g in self._gates.values()))
        values["last_drop"] = self.last_drop or ""
        values["refused_frames"] = str(self.refused_frames)
        reader = self._reader
        values["thread_faults"] = str(reader.faults if reader else 0)
        values["last_fault"] = reader.last_fault if reader else ""
        values["reconnects"] = str(self._reconnects)
        source = self._source
        hardware = source.description if source is not None else ""
        self._diag_pub.publish(
            diagnostic_array(self, level, message, hardware, values, time.time())
        )
