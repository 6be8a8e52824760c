"""Intel RealSense camera node (pyrealsense2): colour, and depth if asked, through the
librealsense pipeline, cropped and resized, with ``camera_info`` from the device's intrinsics.

    robot-rl-realsense --ros-args -r __ns:=/front_cam -p serial:="'128422270679'" \
        -p crop:=[80,0,480,480] -p resize:=[128,128]

The device is chosen by ``serial`` and handed to the pipeline, so a USB camera and an
``rs.software_device`` (the tests') take the same path. Depth is in millimetres, aligned to the
colour camera unless ``align_depth`` is false. Stamps are on the host's clock (``hardware_clock``
stamps are mapped by ``DeviceClock``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from robot_rl.drivers.cameras.configs import RealSenseConfig
from robot_rl.drivers.cameras.driver_node import (
    CameraDriverNode,
    Frame,
    SourceMissing,
)
from robot_rl.drivers.cameras.image_pipeline import DeviceClock, Intrinsics
from robot_rl.ros.node_base import main_for


def _intrinsics(profile) -> Intrinsics:
    i = profile.as_video_stream_profile().get_intrinsics()
    # librealsense's kannala_brandt4 is ROS's equidistant (4 coefficients); its other models
    # (none and the Brown-Conrady variants) are plumb_bob (5)
    fisheye = str(i.model).rsplit(".", 1)[-1] == "kannala_brandt4"
    ros_model, count = ("equidistant", 4) if fisheye else ("plumb_bob", 5)
    return Intrinsics(
        i.width,
        i.height,
        i.fx,
        i.fy,
        i.ppx,
        i.ppy,
        ros_model,
        tuple(float(c) for c in list(i.coeffs)[:count]),
    )


def _serial(device) -> str:
    import pyrealsense2 as rs

    return device.get_info(rs.camera_info.serial_number)


def connected_devices() -> list:
    """The RealSense devices on this machine (a fresh context's snapshot)."""
    import pyrealsense2 as rs

    return list(rs.context().query_devices())


def find_device(devices: list, wanted: str, missing=SourceMissing, ambiguous=ValueError):
    """The device with serial ``wanted`` (empty: the only one) among ``devices``; raises
    ``missing`` when it is not connected and ``ambiguous`` when several are and none is named."""
    serials = [_serial(d) for d in devices]
    if wanted and wanted not in serials:
        raise missing(
            f"no RealSense with serial {wanted} is connected "
            f"(connected: {', '.join(serials) or 'none'})"
        )
    if not devices:
        raise missing("no RealSense camera is connected")
    if not wanted and len(devices) > 1:
        raise ambiguous(
            f"{len(devices)} RealSense cameras are connected "
            f"({', '.join(serials)}); set the serial parameter"
        )
    return devices[serials.index(wanted)] if wanted else devices[0]


def host_stamp(frame, clock: DeviceClock, arrival: float) -> float:
    """A librealsense frame's stamp on the host's clock (s; the module docstring says how)."""
    import pyrealsense2 as rs

    stamp_s = frame.get_timestamp() / 1000.0
    if frame.get_frame_timestamp_domain() == rs.timestamp_domain.hardware_clock:
        return clock.to_host(stamp_s, arrival)
    return stamp_s  # global_time and system_time are on the host's clock already


class RealSenseSource:
    def __init__(self, config: RealSenseConfig, devices: Callable[[], Sequence]):
        self.config = config
        self._devices = devices
        self.description = f"realsense/{config.serial or 'any'}"
        self.ended: str | None = None
        self.sizes: dict[str, tuple[int, int]] = {}
        self._pipeline = None
        self._align = None
        self._intrinsics: dict[str, Intrinsics] = {}
        self._clocks: dict[str, DeviceClock] = {}

    def open(self) -> None:
        import pyrealsense2 as rs

        device = find_device(list(self._devices()), self.config.serial)
        serial = _serial(device)
        self.description = f"realsense/{serial}"
        c = self.config
        streams = {"color": (rs.stream.color, rs.format.rgb8)}
        if c.depth:
            streams["depth"] = (rs.stream.depth, rs.format.z16)
        config = rs.config()
        config.enable_device(serial)
        for kind, fmt in streams.values():
            config.enable_stream(kind, c.width, c.height, fmt, int(c.rate))
        pipeline = rs.pipeline()
        if hasattr(pipeline, "set_device"):  # librealsense >= 2.56; older: by serial only
            pipeline.set_device(device)
        try:
            profile = pipeline.start(config)
        except RuntimeError as error:
            wanted = " and ".join(streams)
            raise ValueError(
                f"RealSense {serial} cannot stream {wanted} at {c.width}x{c.height}"
                f", {c.rate:g} Hz: {error}"
            ) from None
        self._pipeline = pipeline
        self._intrinsics = {
            name: _intrinsics(profile.get_stream(kind)) for name, (kind, _) in streams.items()
        }
        self._align = None
        if c.depth and c.align_depth:
            self._align = rs.align(rs.stream.color)
            self._intrinsics["depth"] = self._intrinsics["color"]
        self.sizes = {name: (i.width, i.height) for name, i in self._intrinsics.items()}
        self._clocks = {name: DeviceClock() for name in streams}

    def read(self, timeout: float) -> list[Frame] | None:
        ok, frames = self._pipeline.try_wait_for_frames(max(1, int(timeout * 1000)))
        if not ok:
            return None
        arrival = time.time()
        if self._align is not None:
            frames = self._align.process(frames)
        out = []
        color = frames.get_color_frame()
        if color:
            out.append(self._frame("color", color, "rgb8", arrival))
        if "depth" in self._intrinsics:
            depth = frames.get_depth_frame()
            if depth:
                out.append(self._frame("depth", depth, "16UC1", arrival))
        return out

    def _frame(self, stream: str, frame, encoding: str, arrival: float) -> Frame:
        import numpy as np

        stamp = host_stamp(frame, self._clocks[stream], arrival)
        pixels = np.asanyarray(frame.get_data())
        if stream == "depth":
            units_mm = frame.as_depth_frame().get_units() * 1000.0
            if abs(units_mm - 1.0) > 1e-6:
                pixels = np.clip(np.rint(pixels * units_mm), 0, 65535).astype(np.uint16)
        return Frame(
            stream,
            pixels,
            encoding,
            stamp,
            self._intrinsics[stream],
            keepalive=frame,
            in_color_frame=stream == "color" or self._align is not None,
        )

    def close(self) -> None:
        pipeline, self._pipeline = self._pipeline, None
        if pipeline is not None:
            pipeline.stop()


class RealSenseNode(CameraDriverNode):
    config_class = RealSenseConfig

    def __init__(self, devices: Callable[[], Sequence] | None = None, **kwargs):
        """``devices``: returns the devices to choose from (default: those connected)."""
        self._device_list = devices or connected_devices
        super().__init__("realsense", **kwargs)

    def streams(self) -> tuple[str, ...]:
        return ("color", "depth") if self.config.depth else ("color",)

    def make_source(self) -> RealSenseSource:
        return RealSenseSource(self.config, self._device_list)


def discover() -> list[dict]:
    """The RealSense cameras this machine sees, for ``robot-rl doctor``: one dict per camera
    (kind, serial, name, firmware, usb); an entry with ``error`` if the library cannot look."""
    try:
        import pyrealsense2 as rs
    except ImportError:
        return []
    try:
        found = []
        for device in connected_devices():

            def info(key, device=device):
                return device.get_info(key) if device.supports(key) else ""

            found.append(
                {
                    "kind": "realsense",
                    "serial": info(rs.camera_info.serial_number),
                    "name": info(rs.camera_info.name),
                    "firmware": info(rs.camera_info.firmware_version),
                    "usb": info(rs.camera_info.usb_type_descriptor),
                }
            )
        return found
    except RuntimeError as error:
        return [{"kind": "realsense", "error": f"cannot list RealSense devices: {error}"}]


main = main_for(RealSenseNode)

if __name__ == "__main__":
    main()
