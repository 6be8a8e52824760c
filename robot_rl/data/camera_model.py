"""What a recorded camera image shows: its pinhole intrinsics and, where known, its mounting.

Conventions (ROS's ``CameraInfo`` and OpenCV's): pixel centres at integer coordinates, so an ideal
camera's principal point is ``((w - 1) / 2, (h - 1) / 2)``; a mount is the pose of the camera's
*optical* frame (z forward, x right, y down: what ``CameraInfo`` describes) in a parent frame.
Pure numpy: readers of driver messages take rclpy's or a decoded MCAP message alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from robot_rl.data.image_fit import centre_square


@dataclass(frozen=True)
class Mount:
    """The camera's optical frame in ``parent``: position (m) and quaternion (w x y z)."""

    parent: str
    position: tuple[float, float, float]
    quat: tuple[float, float, float, float]


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics of an image of ``width`` x ``height`` pixels (pixel centres at
    integer coordinates) and its distortion model and coefficients, as ROS names them: what a
    camera driver publishes (``drivers/cameras``) and a recording keeps."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    distortion_model: str = "plumb_bob"
    coefficients: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0)

    @classmethod
    def from_fov(cls, width: int, height: int, fovy_deg: float, **more):
        """An ideal camera (square pixels, centred principal point, no distortion) of vertical
        field of view ``fovy_deg``, ``fy = h / (2 tan(fovy / 2))``: what a camera without
        calibration data is assumed to be, and what MuJoCo renders. ``more``: further fields."""
        if not 0 < fovy_deg < 180:
            raise ValueError(
                f"the vertical field of view must lie in (0, 180) degrees, got {fovy_deg}"
            )
        focal = 0.5 * height / math.tan(math.radians(fovy_deg) / 2)
        return cls(width, height, focal, focal, (width - 1) / 2, (height - 1) / 2, **more)

    def matrix(self) -> np.ndarray:
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    def project(self, point: np.ndarray) -> np.ndarray:
        """Pixel (u, v) of a point in the optical frame (distortion not applied)."""
        x, y, z = np.asarray(point, np.float64)
        return np.array([self.fx * x / z + self.cx, self.fy * y / z + self.cy])


@dataclass(frozen=True)
class CameraModel(Intrinsics):
    """A recorded image's intrinsics and the camera's mount (None: unknown)."""

    mount: Mount | None = None


def from_camera_info(msg, size: int) -> CameraModel | None:
    """A driver's ``sensor_msgs/CameraInfo`` (its K, distortion model and coefficients) fitted
    to a ``size`` observation (``fitted``); None for an uncalibrated camera (K of zeros)."""
    k = [float(v) for v in msg.k]
    if not (k[0] > 0 and k[4] > 0 and msg.width > 0 and msg.height > 0):
        return None
    model = CameraModel(
        int(msg.width),
        int(msg.height),
        k[0],
        k[4],
        k[2],
        k[5],
        msg.distortion_model or "plumb_bob",
        tuple(float(v) for v in msg.d),
    )
    return fitted(model, size)


def fitted(model: CameraModel, size: int) -> CameraModel:
    """The intrinsics of ``image_fit.fit_image(image, size)`` of an image that ``model``
    describes: the centred square crop (``left``, ``top`` off the corner, ``side`` wide) shifts
    the principal point, and the nearest resampling (output pixel i is source pixel
    ``left + floor(i * side / size)``) scales focal lengths and principal point by
    ``size / side``: source u -> ``(u - left) * size / side``. Distortion coefficients act on
    normalised coordinates and stay as they are."""
    width, height = model.width, model.height
    if width == height == size:
        return model
    top, left, side = centre_square(height, width)
    scale = size / side
    return replace(
        model,
        width=size,
        height=size,
        fx=model.fx * scale,
        fy=model.fy * scale,
        cx=(model.cx - left) * scale,
        cy=(model.cy - top) * scale,
    )


def recorded_cameras(env) -> dict[str, CameraModel]:
    """What each image observation of ``env`` shows, by key: the twin's own cameras
    (``camera_models()``: rendered at the observation's size, mounts from its scene), or the
    driver's newest ``CameraInfo`` kept by the ROS backend (``camera_info``), fitted to the
    observation's size (mount unknown). Empty where the backend knows neither."""
    backend, size = env.backend, env.task.image_size
    own = getattr(backend, "camera_models", None)
    if callable(own):
        cameras = dict(own())
    else:
        infos = dict(getattr(backend, "camera_info", None) or {})
        cameras = {name: from_camera_info(msg, size) for name, msg in infos.items()}
    spaces = env.observation_space.spaces
    return {key: model for key, model in cameras.items() if model and key in spaces}
