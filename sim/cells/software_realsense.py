"""A RealSense made of software: an ``rs.software_device`` with a colour (and optionally a depth)
sensor whose frames the caller injects. Frames go through the real librealsense pipeline (sensor
streaming, syncer, frame queues), so the RealSense node's own code path runs unchanged; only the
USB camera is replaced. A peer for the driver's tests and benchmark, like the other cells here.
"""

from __future__ import annotations

import numpy as np

from robot_rl.drivers.cameras.image_pipeline import Intrinsics


class SoftwareRealSense:
    def __init__(
        self,
        serial: str,
        width: int = 640,
        height: int = 480,
        fps: int = 30,
        intrinsics: Intrinsics | None = None,
        depth: bool = False,
        depth_units: float = 0.001,
        depth_intrinsics: Intrinsics | None = None,
    ):
        import pyrealsense2 as rs

        self._rs = rs
        self.serial, self.width, self.height = serial, width, height
        self.intrinsics = intrinsics or Intrinsics(
            width, height, 600.0, 600.0, (width - 1) / 2, (height - 1) / 2
        )
        self.device = rs.software_device()
        self.device.register_info(rs.camera_info.serial_number, serial)
        self.device.register_info(rs.camera_info.name, "Software RealSense")
        self._color_sensor = self.device.add_sensor("RGB Camera")
        self._color = self._add_stream(
            self._color_sensor, rs.stream.color, rs.format.rgb8, 3, 0, fps, self.intrinsics
        )
        self._depth_sensor = self._depth = None
        if depth:
            self._depth_sensor = self.device.add_sensor("Stereo Module")
            self._depth_sensor.add_read_only_option(rs.option.depth_units, depth_units)
            self._depth = self._add_stream(
                self._depth_sensor,
                rs.stream.depth,
                rs.format.z16,
                2,
                1,
                fps,
                depth_intrinsics or self.intrinsics,
            )
            # both sensors at one viewpoint (a real camera's calibration has a baseline)
            identity = rs.extrinsics()
            identity.rotation = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
            identity.translation = [0.0, 0.0, 0.0]
            self._depth.register_extrinsics_to(self._color, identity)
        self.depth_units = depth_units
        self.device.create_matcher(rs.matchers.default)

    def _add_stream(self, sensor, kind, fmt, bpp: int, uid: int, fps: int, i: Intrinsics):
        rs = self._rs
        intr = rs.intrinsics()
        intr.width, intr.height = i.width, i.height
        intr.fx, intr.fy, intr.ppx, intr.ppy = i.fx, i.fy, i.cx, i.cy
        intr.model = rs.distortion.brown_conrady
        intr.coeffs = list(i.coefficients) + [0.0] * (5 - len(i.coefficients))
        stream = rs.video_stream()
        stream.type, stream.index, stream.uid = kind, 0, uid
        stream.width, stream.height, stream.fps = self.width, self.height, fps
        stream.bpp, stream.fmt, stream.intrinsics = bpp, fmt, intr
        return sensor.add_video_stream(stream, True).as_video_stream_profile()

    def feed(
        self,
        color: np.ndarray,
        timestamp_ms: float,
        frame_number: int,
        domain: str = "global_time",
        depth: np.ndarray | None = None,
    ) -> None:
        """Inject one frame (and a depth frame with the same stamp): ``color`` is (H, W, 3)
        uint8 RGB, ``depth`` (H, W) uint16 in depth units; ``domain`` names the
        ``rs.timestamp_domain`` of ``timestamp_ms``."""
        rs = self._rs
        pairs = [(self._color_sensor, self._color, np.ascontiguousarray(color, np.uint8), 3)]
        if depth is not None:
            if self._depth is None:
                raise ValueError("this software RealSense has no depth sensor")
            pairs.append(
                (self._depth_sensor, self._depth, np.ascontiguousarray(depth, np.uint16), 2)
            )
        for sensor, profile, pixels, bpp in pairs:
            frame = rs.software_video_frame()
            frame.pixels = pixels
            frame.bpp, frame.stride = bpp, self.width * bpp
            frame.timestamp = float(timestamp_ms)
            frame.domain = getattr(rs.timestamp_domain, domain)
            frame.frame_number = int(frame_number)
            frame.profile = profile
            if sensor is self._depth_sensor:
                frame.depth_units = self.depth_units
            sensor.on_video_frame(frame)
