"""What every camera driver does to a frame between device and topic, with no ROS or device library.

- ``FrameGeometry``: a crop box (x, y, width, height in source pixels) and an output size; the
  intrinsics follow the pixels (``cv2.resize``'s pixel-centre convention), so a 3-D point projects
  onto the same content; distortion coefficients are unchanged.
- ``DeviceClock``: host stamp = device time + an offset tracked as a slowly leaking minimum of
  (arrival - device time); a stamp is never later than the frame's arrival.
- ``monotonic_to_host``: V4L2's monotonic buffer stamps -> wall time, as ROS stamps are.
- ``FreshnessGate``: a frame is published at most once, in stamp order, and only while fresh;
  repeated or older stamps and frames older than the bound are dropped, with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from robot_rl.data.camera_model import Intrinsics  # the one pinhole type (re-exported)


@dataclass(frozen=True)
class FrameGeometry:
    """Crop box (x, y, width, height) in source pixels, then resize to (width, height)."""

    crop: tuple[int, int, int, int]
    size: tuple[int, int]

    @staticmethod
    def build(
        source_size: tuple[int, int],
        crop: Sequence[int] = (0, 0, 0, 0),
        resize: Sequence[int] = (0, 0),
    ) -> FrameGeometry:
        """From a driver's ``crop`` and ``resize`` parameters: a crop of all zeros is the whole
        frame; a resize of zeros keeps the crop's size, and a single zero keeps the crop's
        aspect ratio. Raises ValueError, saying which, when the box leaves the frame."""
        width, height = (int(v) for v in source_size)
        if len(crop) != 4 or len(resize) != 2:
            raise ValueError(
                f"crop needs [x, y, width, height] and resize [width, height]; "
                f"got crop {list(crop)}, resize {list(resize)}"
            )
        x, y, w, h = (int(v) for v in crop)
        if (x, y, w, h) == (0, 0, 0, 0):
            w, h = width, height
        if x < 0 or y < 0 or w <= 0 or h <= 0 or x + w > width or y + h > height:
            raise ValueError(
                f"crop [{x}, {y}, {w}, {h}] (x, y, width, height) does not fit in "
                f"the {width}x{height} frame"
            )
        out_w, out_h = (int(v) for v in resize)
        if out_w < 0 or out_h < 0:
            raise ValueError(f"resize [{out_w}, {out_h}] must not be negative")
        if out_w == 0 and out_h == 0:
            out_w, out_h = w, h
        elif out_w == 0:
            out_w = max(1, round(w * out_h / h))
        elif out_h == 0:
            out_h = max(1, round(h * out_w / w))
        return FrameGeometry((x, y, w, h), (out_w, out_h))

    @property
    def is_identity(self) -> bool:
        x, y, w, h = self.crop
        return self.size == (w, h) and (x, y) == (0, 0)

    def apply(self, image: np.ndarray, nearest: bool = False) -> np.ndarray:
        """Crop then resize. Colour is area-averaged when shrinking (no aliasing) and linearly
        interpolated when growing; ``nearest`` keeps values as they are (depth: averaging
        across an edge would invent a surface between the two)."""
        x, y, w, h = self.crop
        out = image[y : y + h, x : x + w]
        if self.size == (w, h):
            return np.ascontiguousarray(out)
        import cv2

        if nearest:
            interpolation = cv2.INTER_NEAREST
        elif self.size[0] <= w and self.size[1] <= h:
            interpolation = cv2.INTER_AREA
        else:
            interpolation = cv2.INTER_LINEAR
        return cv2.resize(out, self.size, interpolation=interpolation)

    def adjust(self, intrinsics: Intrinsics) -> Intrinsics:
        """The intrinsics of the output image."""
        x, y, w, h = self.crop
        sx, sy = self.size[0] / w, self.size[1] / h
        return replace(
            intrinsics,
            width=self.size[0],
            height=self.size[1],
            fx=intrinsics.fx * sx,
            fy=intrinsics.fy * sy,
            cx=(intrinsics.cx - x + 0.5) * sx - 0.5,
            cy=(intrinsics.cy - y + 0.5) * sy - 0.5,
        )


class DeviceClock:
    """Maps a device's clock (seconds from an arbitrary origin) onto host time."""

    def __init__(self, drift: float = 1e-4):
        self.drift = drift
        """How fast (s per s) the offset may rise: a clock skew of 100 ppm is generous."""
        self.offset: float | None = None
        self._last_device: float | None = None

    def to_host(self, device_s: float, arrival_s: float) -> float:
        seen = arrival_s - device_s
        if self.offset is None or self._last_device is None or device_s < self._last_device:
            self.offset = seen  # first frame, or the device clock restarted
        else:
            leaked = self.offset + self.drift * (device_s - self._last_device)
            self.offset = min(seen, leaked)
        self._last_device = device_s
        return device_s + self.offset

    def reset(self) -> None:
        self.offset = self._last_device = None


class FreshnessGate:
    """Says which frames may be published (see the module's docstring)."""

    def __init__(self, max_age: float):
        if max_age <= 0:
            raise ValueError(f"max_age must be > 0, got {max_age}")
        self.max_age = max_age
        self.last_stamp: float | None = None
        self.dropped = 0

    def refuse(self, stamp: float, now: float) -> str | None:
        """Why the frame stamped ``stamp`` must not be published at ``now``, or None; a frame
        that passes becomes the newest one published."""
        reason = None
        if not math.isfinite(stamp) or stamp <= 0:
            reason = f"frame has no valid stamp ({stamp})"
        elif self.last_stamp is not None and stamp <= self.last_stamp:
            reason = (
                f"frame stamped {stamp:.6f} is not newer than the last one published "
                f"({self.last_stamp:.6f})"
            )
        elif now - stamp > self.max_age:
            reason = f"frame is {now - stamp:.3f} s old (bound {self.max_age:.3f} s)"
        if reason is None:
            self.last_stamp = stamp
        else:
            self.dropped += 1
        return reason

    def reset(self) -> None:
        """A new stream (reconnect, a file played again): earlier stamps no longer count."""
        self.last_stamp = None


def monotonic_to_host(
    stamp_mono: float, mono_now: float, wall_now: float, horizon: float = 10.0
) -> float | None:
    """A stamp on the host's monotonic clock (how V4L2 stamps buffers) on the wall clock, or
    None when it cannot be one: not in the last ``horizon`` seconds of the monotonic clock
    (a backend that reports no stamp, or a position in a stream instead of a time)."""
    age = mono_now - stamp_mono
    if not math.isfinite(stamp_mono) or stamp_mono <= 0 or not 0 <= age <= horizon:
        return None
    return wall_now - age
