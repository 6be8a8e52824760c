"""UVC camera, video file, network stream or GStreamer pipeline through ``cv2.VideoCapture``,
with the RealSense node's crop, resize and ``camera_info``.

    robot-rl-camera --ros-args -r __ns:=/wrist_cam -p source:=/dev/video0 -p resize:=[128,128]

``source``: a device index or path, a video file, an address with a scheme (``rtsp://...``) or a
GStreamer pipeline (with a ``!``, ending in ``appsink``). Intrinsics come from ``intrinsics`` and
``distortion``, else an ideal pinhole of ``fovy``. Stamps: a device's buffer time on the wall
clock; a file's frames as delivered at its frame rate (or ``rate``); others when read.
"""

from __future__ import annotations

import glob
import os
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path

from robot_rl.drivers.cameras.configs import OpenCVCameraConfig
from robot_rl.drivers.cameras.driver_node import (
    CameraDriverNode,
    Frame,
    SourceMissing,
)
from robot_rl.drivers.cameras.image_pipeline import Intrinsics, monotonic_to_host
from robot_rl.ros.node_base import main_for


def _video_devices() -> list[str]:
    return sorted(glob.glob("/dev/video*"), key=lambda path: int(re.sub(r"\D", "", path) or -1))


@dataclass(frozen=True)
class SourceSpec:
    kind: str
    """device, file, stream or gstreamer."""
    target: object
    """What ``cv2.VideoCapture`` opens: an index or a string."""

    @staticmethod
    def parse(text: str) -> SourceSpec:
        text = text.strip()
        if text.isdigit():
            return SourceSpec("device", int(text))
        if "!" in text:
            return SourceSpec("gstreamer", text)
        if text.startswith("/dev/"):
            return SourceSpec("device", text)
        if "://" in text:
            return SourceSpec("stream", text)
        return SourceSpec("file", text)

    def describe(self) -> str:
        if self.kind == "device" and isinstance(self.target, int):
            return f"video device {self.target} (/dev/video{self.target})"
        return f"{'GStreamer pipeline' if self.kind == 'gstreamer' else self.kind} {self.target}"


class OpenCVSource:
    def __init__(self, config: OpenCVCameraConfig):
        self.config = config
        self.spec = SourceSpec.parse(config.source)
        self.description = f"opencv/{self.spec.describe()}"
        self.ended: str | None = None
        self.sizes: dict[str, tuple[int, int]] = {}
        self._capture = None
        self._pending: Frame | None = None
        self._intrinsics: Intrinsics | None = None
        self._period = 0.0
        self._next_due = 0.0

    def _check_present(self, cv2) -> int:
        spec = self.spec
        if spec.kind == "device":
            path = f"/dev/video{spec.target}" if isinstance(spec.target, int) else str(spec.target)
            if os.name == "posix" and not os.path.exists(path):
                raise SourceMissing(
                    f"no video device {path} (video devices here: "
                    f"{', '.join(_video_devices()) or 'none'})"
                )
            return cv2.CAP_V4L2 if os.name == "posix" else cv2.CAP_ANY
        if spec.kind == "file":
            if not Path(str(spec.target)).is_file():
                raise SourceMissing(f"no video file {spec.target}")
            return cv2.CAP_ANY
        if spec.kind == "gstreamer":
            if not cv2.videoio_registry.hasBackend(cv2.CAP_GSTREAMER):
                raise ValueError(
                    "this OpenCV is built without GStreamer (the PyPI wheels are): "
                    "install one built with it to open a pipeline"
                )
            return cv2.CAP_GSTREAMER
        return cv2.CAP_FFMPEG

    def open(self) -> None:
        import cv2

        api = self._check_present(cv2)
        capture = cv2.VideoCapture(self.spec.target, api)
        if not capture.isOpened():
            capture.release()
            raise SourceMissing(f"cannot open {self.spec.describe()}")
        c = self.config
        if self.spec.kind == "device":
            if c.fourcc:
                capture.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter_fourcc(*c.fourcc))
            if c.width:
                capture.set(cv2.CAP_PROP_FRAME_WIDTH, c.width)
            if c.height:
                capture.set(cv2.CAP_PROP_FRAME_HEIGHT, c.height)
            if c.rate:
                capture.set(cv2.CAP_PROP_FPS, c.rate)
        self._capture = capture
        if self.spec.kind == "file":
            fps = c.rate or capture.get(cv2.CAP_PROP_FPS)
            self._period = 1.0 / fps if fps and fps > 0 else 1.0 / 30.0
        first = self._grab()
        if first is None:
            self.close()
            raise SourceMissing(f"{self.spec.describe()} opened but gave no frame")
        height, width = first.pixels.shape[:2]
        self._intrinsics = self._make_intrinsics(width, height)
        first.intrinsics = self._intrinsics
        self.sizes = {"color": (width, height)}
        self._pending = first
        self._next_due = time.monotonic() + self._period

    def _make_intrinsics(self, width: int, height: int) -> Intrinsics:
        c = self.config
        fx, fy, cx, cy = (float(v) for v in c.intrinsics)
        if (fx, fy, cx, cy) == (0.0, 0.0, 0.0, 0.0):
            base = Intrinsics.from_fov(width, height, c.fovy)
        elif fx <= 0 or fy <= 0 or not 0 <= cx < width or not 0 <= cy < height:
            raise ValueError(
                f"intrinsics {list(c.intrinsics)} do not describe the source's "
                f"{width}x{height} frames"
            )
        else:
            base = Intrinsics(width, height, fx, fy, cx, cy)
        return replace(
            base, distortion_model="plumb_bob", coefficients=tuple(float(v) for v in c.distortion)
        )

    def _grab(self) -> Frame | None:
        import cv2

        ok, image = self._capture.read()
        if not ok or image is None:
            return None
        wall, mono = time.time(), time.monotonic()
        stamp = wall
        if self.spec.kind == "device":
            stamp = (
                monotonic_to_host(self._capture.get(cv2.CAP_PROP_POS_MSEC) / 1000.0, mono, wall)
                or wall
            )
        if image.ndim == 3 and image.shape[2] == 4:
            image = cv2.cvtColor(image, cv2.COLOR_BGRA2BGR)
        encoding = "mono8" if image.ndim == 2 else "bgr8"
        return Frame("color", image, encoding, stamp, self._intrinsics)

    def read(self, timeout: float) -> list[Frame] | None:
        if self._pending is not None:
            frame, self._pending = self._pending, None
            return [frame]
        if self.ended is not None:
            time.sleep(timeout)
            return None
        if self.spec.kind == "file":
            wait = self._next_due - time.monotonic()
            if wait > timeout:
                time.sleep(timeout)
                return None
            time.sleep(max(0.0, wait))
            # a slow machine plays the file slower rather than in bursts of late frames
            self._next_due = max(self._next_due + self._period, time.monotonic())
        frame = self._grab()
        if frame is None and self.spec.kind == "file" and self.config.loop:
            import cv2

            self._capture.set(cv2.CAP_PROP_POS_FRAMES, 0)
            frame = self._grab()
        if frame is None:
            if self.spec.kind == "file":
                self.ended = f"end of the video file {self.spec.target}"
                return None
            raise SourceMissing(f"{self.spec.describe()} gave no frame")
        return [frame]

    def close(self) -> None:
        capture, self._capture = self._capture, None
        if capture is not None:
            capture.release()


class OpenCVCameraNode(CameraDriverNode):
    config_class = OpenCVCameraConfig

    def __init__(self, **kwargs):
        super().__init__("camera", **kwargs)

    def make_source(self) -> OpenCVSource:
        return OpenCVSource(self.config)


def discover() -> list[dict]:
    """The video devices this machine has, for ``robot-rl doctor``: one dict per
    ``/dev/video*`` (kind, device, name from sysfs). Nothing is opened."""
    found = []
    for device in _video_devices():
        name_file = Path("/sys/class/video4linux") / Path(device).name / "name"
        try:
            name = name_file.read_text().strip()
        except OSError:
            name = ""
        found.append({"kind": "video", "device": device, "name": name})
    return found


main = main_for(OpenCVCameraNode)

if __name__ == "__main__":
    main()
