"""The camera drivers' configs: each a dataclass whose fields are its node's ROS 2 parameters
(``robot_rl.drivers.config``), each registered by device type with ``register_device``. No ROS 2
and no device library here."""

from __future__ import annotations

from dataclasses import dataclass

from robot_rl.drivers.config import length, non_negative, param, positive, register_device


@dataclass(frozen=True)
class CameraConfig:
    """Parameters every camera driver has (each driver's config adds its device's)."""

    frame_id: str = param("", "frame of the images (default: the node's name + _optical_frame)")
    crop: tuple = param(
        (0, 0, 0, 0),
        "crop box [x, y, width, height] in source pixels, "
        "before resizing; all zeros: the whole frame",
    )
    resize: tuple = param(
        (0, 0),
        "output size [width, height] after cropping; zeros: the crop's "
        "size, one zero: keep the crop's aspect ratio",
    )
    max_frame_age: float = param(
        0.5, "a frame older than this when it arrives is stale and dropped (s)", positive
    )
    stall_timeout: float = param(
        1.0, "no frame for this long: diagnostics report the source stalled (s)", positive
    )
    reconnect_after: float = param(
        3.0, "no frame for this long: close and reopen the device (s)", positive
    )
    reconnect_period: float = param(
        1.0, "wait between attempts to reopen a lost device (s)", positive
    )
    diagnostics_hz: float = param(1.0, "/diagnostics rate (Hz)", positive)
    read_timeout: float = param(
        0.2,
        "longest wait on the device in one read (s); bounds how "
        "fast a stall is noticed and the node stops",
        positive,
    )


@register_device(
    "realsense",
    kind="camera",
    executable="robot-rl-realsense",
    node="robot_rl.drivers.cameras.realsense:RealSenseNode",
    summary="Intel RealSense through pyrealsense2",
)
@dataclass(frozen=True)
class RealSenseConfig(CameraConfig):
    serial: str = param("", "serial number of the camera (empty: the only one connected)")
    width: int = param(640, "stream width (px), as the device offers it", positive)
    height: int = param(480, "stream height (px), as the device offers it", positive)
    rate: float = param(
        30.0,
        "frame rate (Hz), as the device offers it",
        (lambda v: v > 0 and float(v).is_integer(), "must be a whole number > 0"),
    )
    depth: bool = param(
        False,
        "also stream depth (depth/image_raw, 16UC1 millimetres, and "
        "depth/camera_info) at the same size and rate",
    )
    align_depth: bool = param(
        True,
        "reproject depth into the colour camera (its intrinsics and "
        "frame), so one crop cuts both alike; false: the depth camera's "
        "own view",
    )


@register_device(
    "opencv_camera",
    kind="camera",
    executable="robot-rl-camera",
    node="robot_rl.drivers.cameras.opencv_camera:OpenCVCameraNode",
    summary="UVC camera, video file or GStreamer pipeline through cv2.VideoCapture",
)
@dataclass(frozen=True)
class OpenCVCameraConfig(CameraConfig):
    source: str = param(
        "0",
        "device index or path, video file, stream address or GStreamer "
        "pipeline (see the module's docstring)",
        (lambda v: bool(v.strip()), "must not be empty"),
    )
    width: int = param(0, "requested frame width (px); 0: the device's default", non_negative)
    height: int = param(0, "requested frame height (px); 0: the device's default", non_negative)
    rate: float = param(
        0.0,
        "requested frame rate (Hz); for a file, the playback rate; 0: the "
        "device's or the file's own",
        non_negative,
    )
    fourcc: str = param(
        "",
        "pixel format to ask a UVC camera for, e.g. MJPG (needed by many "
        "for 30 Hz at 640x480 and above); empty: the device's default",
        (lambda v: len(v) in (0, 4), "must be empty or 4 characters"),
    )
    loop: bool = param(False, "play a video file again from the start when it ends")
    fovy: float = param(
        45.0,
        "vertical field of view (degrees) assumed when intrinsics are not given",
        (lambda v: 0 < v < 180, "must lie in (0, 180)"),
    )
    intrinsics: tuple = param(
        (0.0, 0.0, 0.0, 0.0),
        "calibrated [fx, fy, cx, cy] (px) at the source's frame size; zeros: from fovy",
        length(4),
    )
    distortion: tuple = param(
        (0.0, 0.0, 0.0, 0.0, 0.0),
        "calibrated plumb_bob coefficients [k1, k2, p1, p2, k3]",
        length(5),
    )
