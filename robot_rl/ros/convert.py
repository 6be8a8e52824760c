"""Message <-> numpy conversion without cv_bridge (which has no PyPI wheel).

Conventions at this boundary:
- ROS quaternions are x-y-z-w; the project's readings and commands are w-x-y-z. Every pose
  conversion here takes and returns w-x-y-z, so the reordering happens in one place.
- Stamps are float seconds on the caller's side (sim time or wall time, whichever the node
  uses) and ``builtin_interfaces/Time`` on the wire.
- Images come out as arrays of the message's own channel order (``image_to_array``) or as RGB
  (``image_to_rgb``); row padding (``step`` > width * pixel size) and big-endian payloads are
  handled, and the result never shares memory with the message.
"""

from __future__ import annotations

import array
import math
import sys

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, Twist, TwistStamped, WrenchStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import CameraInfo, Image, Imu, JointState
from std_msgs.msg import Header

from robot_rl.envs.arm_geometry import yaw_of as quat_to_yaw  # noqa: F401  (w-x-y-z -> yaw)

# encoding -> (numpy dtype, channels)
IMAGE_ENCODINGS: dict[str, tuple[np.dtype, int]] = {
    "rgb8": (np.dtype(np.uint8), 3),
    "bgr8": (np.dtype(np.uint8), 3),
    "mono8": (np.dtype(np.uint8), 1),
    "16UC1": (np.dtype(np.uint16), 1),
    "32FC1": (np.dtype(np.float32), 1),
}
_NATIVE_BIG_ENDIAN = sys.byteorder == "big"


def to_stamp(seconds: float) -> Time:
    """Float seconds -> Time, rounded to the nanosecond (negative times are refused)."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"a stamp must be a finite, non-negative time; got {seconds}")
    sec, nanosec = divmod(round(seconds * 1e9), 1_000_000_000)
    return Time(sec=int(sec), nanosec=int(nanosec))


def from_stamp(stamp: Time) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def header(seconds: float, frame_id: str = "") -> Header:
    return Header(stamp=to_stamp(seconds), frame_id=frame_id)


def diagnostic_array(
    node, level: bytes, message: str, hardware_id: str, values: dict[str, str], stamp: float
) -> DiagnosticArray:
    """``node``'s one DiagnosticStatus (``values`` as its key-value pairs), stamped ``stamp``."""
    status = DiagnosticStatus(
        level=level,
        name=node.get_fully_qualified_name(),
        message=message,
        hardware_id=hardware_id,
        values=[KeyValue(key=k, value=v) for k, v in values.items()],
    )
    return DiagnosticArray(header=header(stamp), status=[status])


def array_to_image(image: np.ndarray, encoding: str, stamp: float, frame_id: str = "") -> Image:
    """An (H, W, C) or (H, W) array -> Image with tightly packed rows in native byte order."""
    if encoding not in IMAGE_ENCODINGS:
        raise ValueError(f"unsupported encoding {encoding!r}; have {sorted(IMAGE_ENCODINGS)}")
    dtype, channels = IMAGE_ENCODINGS[encoding]
    image = np.asarray(image)
    if image.ndim == 3 and channels == 1 and image.shape[2] == 1:
        image = image[:, :, 0]
    expected_ndim = 3 if channels > 1 else 2
    if image.ndim != expected_ndim or (channels > 1 and image.shape[2] != channels):
        raise ValueError(
            f"{encoding} needs shape (H, W{', 3' if channels > 1 else ''}), got {image.shape}"
        )
    if image.dtype != dtype:
        raise ValueError(f"{encoding} needs dtype {dtype}, got {image.dtype}")
    height, width = image.shape[:2]
    msg = Image(header=header(stamp, frame_id), height=height, width=width, encoding=encoding)
    msg.is_bigendian = int(_NATIVE_BIG_ENDIAN)
    msg.step = width * channels * dtype.itemsize
    msg.data = array.array("B", np.ascontiguousarray(image).tobytes())
    return msg


def image_to_array(msg: Image) -> np.ndarray:
    """Image -> a fresh (H, W, C) or (H, W) array in native byte order, in the message's own
    channel order. Honours ``step`` (row padding) and ``is_bigendian``."""
    if msg.encoding not in IMAGE_ENCODINGS:
        raise ValueError(f"unsupported encoding {msg.encoding!r}; have {sorted(IMAGE_ENCODINGS)}")
    dtype, channels = IMAGE_ENCODINGS[msg.encoding]
    row_bytes = msg.width * channels * dtype.itemsize
    if msg.step < row_bytes:
        raise ValueError(f"step {msg.step} is shorter than a row of {row_bytes} bytes")
    if len(msg.data) < msg.step * msg.height:
        raise ValueError(
            f"image data has {len(msg.data)} bytes, need step * height = {msg.step * msg.height}"
        )
    raw = np.frombuffer(msg.data, np.uint8, count=msg.step * msg.height)
    rows = raw.reshape(msg.height, msg.step)[:, :row_bytes]
    wire = dtype.newbyteorder(">" if msg.is_bigendian else "<")
    pixels = np.ascontiguousarray(rows).view(wire).astype(dtype)  # astype: native, own memory
    shape = (msg.height, msg.width, channels) if channels > 1 else (msg.height, msg.width)
    return pixels.reshape(shape)


def image_to_rgb(msg: Image) -> np.ndarray:
    """A colour or mono8 Image -> (H, W, 3) uint8 RGB (what camera observations are)."""
    pixels = image_to_array(msg)
    if msg.encoding == "rgb8":
        return pixels
    if msg.encoding == "bgr8":
        return np.ascontiguousarray(pixels[:, :, ::-1])
    if msg.encoding == "mono8":
        return np.repeat(pixels[:, :, None], 3, axis=2)
    raise ValueError(f"{msg.encoding} is not a colour encoding; use image_to_array")


def camera_info(
    width: int, height: int, fovy_deg: float, stamp: float, frame_id: str = ""
) -> CameraInfo:
    """Pinhole intrinsics of an ideal camera (square pixels, centred principal point, no
    distortion) from its vertical field of view, as MuJoCo cameras are."""
    if width <= 0 or height <= 0 or not 0 < fovy_deg < 180:
        raise ValueError(
            f"need a positive image size and 0 < fovy < 180, got {width}x{height}, {fovy_deg}"
        )
    focal = 0.5 * height / math.tan(math.radians(fovy_deg) / 2)
    cx, cy = width / 2, height / 2
    msg = CameraInfo(header=header(stamp, frame_id), width=width, height=height)
    msg.distortion_model = "plumb_bob"
    msg.d = [0.0] * 5
    msg.k = [focal, 0.0, cx, 0.0, focal, cy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [focal, 0.0, cx, 0.0, 0.0, focal, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


def camera_fovy(msg: CameraInfo) -> float:
    """The vertical field of view (degrees) of a CameraInfo's intrinsics."""
    return math.degrees(2 * math.atan(0.5 * msg.height / msg.k[4]))


def _finite(name: str, values: np.ndarray, size: int) -> np.ndarray:
    values = np.asarray(values, np.float64).reshape(-1)
    if values.shape != (size,):
        raise ValueError(f"{name} needs {size} values, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must be finite, got {values}")
    return values


def pose_to_msg(pos, quat_wxyz, stamp: float, frame_id: str = "") -> PoseStamped:
    pos = _finite("position", pos, 3)
    w, x, y, z = _finite("quaternion", quat_wxyz, 4)
    msg = PoseStamped(header=header(stamp, frame_id))
    p, q = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = (float(v) for v in pos)
    q.x, q.y, q.z, q.w = float(x), float(y), float(z), float(w)
    return msg


def msg_to_pose(msg: PoseStamped) -> tuple[np.ndarray, np.ndarray]:
    """PoseStamped -> (position (3), quaternion w-x-y-z (4))."""
    p, q = msg.pose.position, msg.pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([q.w, q.x, q.y, q.z])


def array_to_twist(velocity) -> Twist:
    """(6: linear xyz, angular xyz) -> Twist."""
    v = _finite("twist", velocity, 6)
    msg = Twist()
    msg.linear.x, msg.linear.y, msg.linear.z = (float(a) for a in v[:3])
    msg.angular.x, msg.angular.y, msg.angular.z = (float(a) for a in v[3:])
    return msg


def twist_to_array(msg: Twist) -> np.ndarray:
    lin, ang = msg.linear, msg.angular
    return np.array([lin.x, lin.y, lin.z, ang.x, ang.y, ang.z])


def array_to_twist_stamped(velocity, stamp: float, frame_id: str = "") -> TwistStamped:
    return TwistStamped(header=header(stamp, frame_id), twist=array_to_twist(velocity))


def twist_stamped_to_array(msg: TwistStamped) -> np.ndarray:
    return twist_to_array(msg.twist)


def array_to_wrench_stamped(wrench, stamp: float, frame_id: str = "") -> WrenchStamped:
    """(6: force N, torque Nm) -> WrenchStamped."""
    w = _finite("wrench", wrench, 6)
    msg = WrenchStamped(header=header(stamp, frame_id))
    f, t = msg.wrench.force, msg.wrench.torque
    f.x, f.y, f.z = (float(a) for a in w[:3])
    t.x, t.y, t.z = (float(a) for a in w[3:])
    return msg


def wrench_stamped_to_array(msg: WrenchStamped) -> np.ndarray:
    f, t = msg.wrench.force, msg.wrench.torque
    return np.array([f.x, f.y, f.z, t.x, t.y, t.z])


def joint_state_msg(names, position, velocity=None, effort=None, stamp: float = 0.0) -> JointState:
    names = [str(n) for n in names]
    msg = JointState(header=header(stamp), name=names)
    for field, values in (("position", position), ("velocity", velocity), ("effort", effort)):
        if values is not None:
            setattr(msg, field, _finite(f"joint {field}", values, len(names)).tolist())
    return msg


def joint_state_to_arrays(msg: JointState, names=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """JointState -> (position, velocity, effort), ordered as ``names`` (default: as sent).
    An absent velocity or effort field comes back as NaN; a missing joint is an error."""
    order = list(msg.name) if names is None else list(names)
    index = {name: i for i, name in enumerate(msg.name)}
    missing = [n for n in order if n not in index]
    if missing:
        raise KeyError(f"joint state lacks {missing}; it has {list(msg.name)}")
    picks = [index[n] for n in order]

    def column(values) -> np.ndarray:
        values = np.asarray(values, np.float64)
        if len(values) == 0:
            return np.full(len(picks), np.nan)
        if len(values) != len(msg.name):
            raise ValueError(f"joint state has {len(msg.name)} names but {len(values)} values")
        return values[picks]

    return column(msg.position), column(msg.velocity), column(msg.effort)


def odometry_msg(
    pos, quat_wxyz, velocity, stamp: float, frame_id: str = "odom", child_frame_id: str = "base"
) -> Odometry:
    """Pose in ``frame_id``; ``velocity`` (6: linear, angular) in the child (body) frame, as
    REP 105 has it."""
    pose = pose_to_msg(pos, quat_wxyz, stamp, frame_id)
    msg = Odometry(header=pose.header, child_frame_id=child_frame_id)
    msg.pose.pose = pose.pose
    msg.twist.twist = array_to_twist(velocity)
    return msg


def odometry_to_arrays(msg: Odometry) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Odometry -> (position (3), quaternion w-x-y-z (4), body velocity (6))."""
    pos, quat = msg_to_pose(PoseStamped(pose=msg.pose.pose))
    return pos, quat, twist_to_array(msg.twist.twist)


def imu_msg(quat_wxyz, gyro, accel, stamp: float, frame_id: str = "imu") -> Imu:
    w, x, y, z = _finite("quaternion", quat_wxyz, 4)
    msg = Imu(header=header(stamp, frame_id))
    q = msg.orientation
    q.x, q.y, q.z, q.w = float(x), float(y), float(z), float(w)
    g, a = msg.angular_velocity, msg.linear_acceleration
    g.x, g.y, g.z = (float(v) for v in _finite("gyro", gyro, 3))
    a.x, a.y, a.z = (float(v) for v in _finite("acceleration", accel, 3))
    return msg


def imu_to_arrays(msg: Imu) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Imu -> (orientation w-x-y-z (4), angular velocity (3), linear acceleration (3))."""
    q, g, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
    return np.array([q.w, q.x, q.y, q.z]), np.array([g.x, g.y, g.z]), np.array([a.x, a.y, a.z])


def yaw_to_quat(yaw: float) -> np.ndarray:
    """w-x-y-z quaternion of a rotation by ``yaw`` about z."""
    return np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
