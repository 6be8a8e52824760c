"""Backend readings as the robot's own ROS 2 topics (the contract in docs/ARCHITECTURE.md), as
plain dicts.

A recording carries these so that ``ros2 bag`` and Foxglove show a demonstration the way the
drivers publish it, with what other tools need to place the images in space: each camera's
``camera_info``, the TCP on ``/tf`` and the cameras' mounts on ``/tf_static``. They are for people
and tools: the demonstration buffer is rebuilt from the ``/robot_rl/*`` topics and the camera
images only (see ``mcap_demos``). Messages are dicts in
the field layout of the standard types, which is what ``mcap_ros2``'s encoder takes.
"""

from __future__ import annotations

import numpy as np

from robot_rl.data.camera_model import CameraModel
from robot_rl.ros.arm_contract import ARM_JOINTS, ARM_NAMESPACE, BASE_FRAME, FLANGE_FRAME, TCP_FRAME

IMAGE_TYPE = "sensor_msgs/msg/Image"
CAMERA_INFO_TYPE = "sensor_msgs/msg/CameraInfo"
TF_TYPE = "tf2_msgs/msg/TFMessage"
TF_TOPIC, TF_STATIC_TOPIC = "/tf", "/tf_static"
JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
POSE_TYPE = "geometry_msgs/msg/PoseStamped"
TWIST_TYPE = "geometry_msgs/msg/TwistStamped"
WRENCH_TYPE = "geometry_msgs/msg/WrenchStamped"


def camera_topic(camera: str) -> str:
    """``front`` -> ``/front_cam/image_raw`` (each camera in its own namespace)."""
    return f"/{camera}_cam/image_raw"


def camera_frame(camera: str) -> str:
    """``front`` -> ``front_cam``: the frame of its images, camera_info and mount."""
    return f"{camera}_cam"


def camera_info_topic(camera: str) -> str:
    """``front`` -> ``/front_cam/camera_info``, beside its images."""
    return f"/{camera}_cam/camera_info"


def header(stamp_ns: int, frame_id: str) -> dict:
    sec, nanosec = divmod(int(stamp_ns), 1_000_000_000)
    return {"stamp": {"sec": sec, "nanosec": nanosec}, "frame_id": frame_id}


def image_message(image: np.ndarray, stamp_ns: int, frame_id: str) -> dict:
    image = np.ascontiguousarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in (1, 3):
        raise ValueError(f"images must be uint8 HxWx3 or HxWx1, got {image.dtype} {image.shape}")
    height, width, channels = image.shape
    return {
        "header": header(stamp_ns, frame_id),
        "height": height,
        "width": width,
        "encoding": "rgb8" if channels == 3 else "mono8",
        "is_bigendian": 0,
        "step": width * channels,
        "data": image.tobytes(),
    }


def image_from_message(message) -> np.ndarray:
    channels = {"rgb8": 3, "mono8": 1}.get(message.encoding)
    if channels is None:
        raise ValueError(f"image encoding {message.encoding!r}: expected rgb8 or mono8")
    data = np.frombuffer(bytes(message.data), np.uint8)
    if message.step != message.width * channels:
        raise ValueError("padded image rows are not supported (step != width * channels)")
    return data.reshape(message.height, message.width, channels).copy()


def _floats(values) -> list[float]:
    return [float(v) for v in np.asarray(values, np.float64).reshape(-1)]


def _joints(names, position, velocity) -> dict:
    return {
        "name": list(names),
        "position": _floats(position),
        "velocity": _floats(velocity),
        "effort": [],
    }


def _vectors(values, first: str, second: str) -> dict:
    """A 6-vector as two x/y/z vectors (a twist's linear and angular, a wrench's force and
    torque)."""
    v = _floats(values)
    return {
        first: dict(zip("xyz", v[:3], strict=True)),
        second: dict(zip("xyz", v[3:6], strict=True)),
    }


def arm_messages(reading: dict[str, np.ndarray], stamp_ns: int) -> list[tuple[str, str, dict]]:
    """(topic, type, message) for the arm readings present; missing readings are skipped."""
    out = []

    def add(topic: str, kind: str, frame: str, **fields) -> None:
        out.append(
            (f"{ARM_NAMESPACE}/{topic}", kind, {"header": header(stamp_ns, frame), **fields})
        )

    if "joint_pos" in reading:
        joints = _joints(ARM_JOINTS, reading["joint_pos"], reading.get("joint_vel", []))
        add("joint_states", JOINT_STATE_TYPE, BASE_FRAME, **joints)
    if "gripper_pos" in reading:
        joints = _joints(["gripper"], reading["gripper_pos"], [])
        add("gripper/joint_states", JOINT_STATE_TYPE, BASE_FRAME, **joints)
    if "tcp_pos" in reading and "tcp_quat" in reading:
        x, y, z = _floats(reading["tcp_pos"])
        qw, qx, qy, qz = _floats(reading["tcp_quat"])  # backend readings are w x y z
        pose = {
            "position": {"x": x, "y": y, "z": z},
            "orientation": {"x": qx, "y": qy, "z": qz, "w": qw},
        }
        add("ee_pose", POSE_TYPE, BASE_FRAME, pose=pose)
    if "tcp_vel" in reading:
        twist = _vectors(reading["tcp_vel"], "linear", "angular")
        add("ee_twist", TWIST_TYPE, BASE_FRAME, twist=twist)
    if "wrench" in reading:
        wrench = _vectors(reading["wrench"], "force", "torque")
        add("ee_wrench", WRENCH_TYPE, FLANGE_FRAME, wrench=wrench)
    return out


def camera_info_message(model: CameraModel, stamp_ns: int, frame_id: str) -> dict:
    """sensor_msgs/CameraInfo of ``model`` (an unrectified image: R identity, P = [K | 0])."""
    fx, fy, cx, cy = (float(v) for v in (model.fx, model.fy, model.cx, model.cy))
    return {
        "header": header(stamp_ns, frame_id),
        "height": int(model.height),
        "width": int(model.width),
        "distortion_model": model.distortion_model,
        "d": [float(v) for v in model.coefficients],
        "k": [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0],
        "r": [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        "p": [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0],
        "binning_x": 0,
        "binning_y": 0,
        "roi": {"x_offset": 0, "y_offset": 0, "height": 0, "width": 0, "do_rectify": False},
    }


def transform(stamp_ns: int, parent: str, child: str, position, quat_wxyz) -> dict:
    """geometry_msgs/TransformStamped: ``child``'s pose in ``parent`` (quaternion w x y z)."""
    x, y, z = _floats(position)
    qw, qx, qy, qz = _floats(quat_wxyz)
    return {
        "header": header(stamp_ns, parent),
        "child_frame_id": child,
        "transform": {
            "translation": {"x": x, "y": y, "z": z},
            "rotation": {"x": qx, "y": qy, "z": qz, "w": qw},
        },
    }


def tcp_transform(reading: dict[str, np.ndarray], stamp_ns: int) -> dict | None:
    """The arm's TCP in its base frame (what ``ee_pose`` says), None without a TCP pose."""
    if "tcp_pos" not in reading or "tcp_quat" not in reading:
        return None
    return transform(stamp_ns, BASE_FRAME, TCP_FRAME, reading["tcp_pos"], reading["tcp_quat"])


def frame_messages(
    cameras: dict[str, CameraModel], reading: dict | None, stamp_ns: int, first: bool
) -> list[tuple[str, str, dict]]:
    """(topic, type, message) that place a step's images in space: the cameras' known mounts on
    ``/tf_static`` (``first`` step only), the TCP on ``/tf`` (from ``reading``), and each
    camera's ``camera_info`` (by observation key)."""
    out = []
    mounts = [
        transform(stamp_ns, m.parent, camera_frame(key), m.position, m.quat)
        for key, model in cameras.items()
        if (m := model.mount) is not None
    ]
    if first and mounts:
        out.append((TF_STATIC_TOPIC, TF_TYPE, {"transforms": mounts}))
    tcp = tcp_transform(reading, stamp_ns) if reading is not None else None
    if tcp is not None:
        out.append((TF_TOPIC, TF_TYPE, {"transforms": [tcp]}))
    for key, model in cameras.items():
        info = camera_info_message(model, stamp_ns, camera_frame(key))
        out.append((camera_info_topic(key), CAMERA_INFO_TYPE, info))
    return out
