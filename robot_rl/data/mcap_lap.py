"""A driven lap as an MCAP file (ROS 2 encoding): what the car published and what it was told.

One message per topic per control step: ``<ns>/odom`` (nav_msgs/Odometry: the odometry pose as
x, y, yaw and the body twist), ``<ns>/imu`` (sensor_msgs/Imu), the command ``<ns>/cmd_vel``
(geometry_msgs/Twist: linear.x speed m/s, angular.z steering angle rad, as the car backend was
given it) and each recorded camera on ``<camera ns>/image_raw``. Messages are written as the
lap goes and the file is closed properly on any exit, so an aborted lap keeps its log.
``read_lap_poses`` gives the odometry poses back (tests, re-deriving checkpoints).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from robot_rl.data.mcap_topics import IMAGE_TYPE, header, image_message

ODOM_TYPE = "nav_msgs/msg/Odometry"
IMU_TYPE = "sensor_msgs/msg/Imu"
TWIST_TYPE = "geometry_msgs/msg/Twist"


def _vector(values) -> dict:
    x, y, z = (float(v) for v in values)
    return {"x": x, "y": y, "z": z}


def _yaw_quaternion(yaw: float) -> dict:
    return {"x": 0.0, "y": 0.0, "z": float(np.sin(yaw / 2)), "w": float(np.cos(yaw / 2))}


class LapLog:
    def __init__(
        self,
        path: str | os.PathLike,
        namespace: str,
        camera_namespaces: dict,
        cameras: tuple[str, ...],
    ):
        from mcap_ros2.writer import Writer  # lazily: the core library imports without it

        from robot_rl.data.ros_schemas import message_definition

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._stream = open(self.path, "wb")  # noqa: SIM115  (closed by close())
        self._writer = Writer(self._stream)
        self._schemas = {
            t: self._writer.register_msgdef(t, message_definition(t))
            for t in (ODOM_TYPE, IMU_TYPE, TWIST_TYPE, IMAGE_TYPE)
        }
        self.namespace = namespace.rstrip("/")
        self.cameras = {c: camera_namespaces.get(c, f"/{c}_cam").rstrip("/") for c in cameras}
        self.steps = 0

    def _put(self, topic: str, type_name: str, message: dict, stamp: int) -> None:
        self._writer.write_message(
            topic, self._schemas[type_name], message, stamp, stamp, self.steps
        )

    def write(self, reading: dict, command: dict) -> None:
        """One control step: the reading the command was chosen on, and the command."""
        stamp = time.time_ns()
        x, y, yaw = (float(v) for v in reading["odom_pose"])
        forward, lateral, yaw_rate = (float(v) for v in reading["velocity"])
        odom = {
            "header": header(stamp, "odom"),
            "child_frame_id": "base",
            "pose": {
                "pose": {"position": _vector([x, y, 0.0]), "orientation": _yaw_quaternion(yaw)},
                "covariance": [0.0] * 36,
            },
            "twist": {
                "twist": {
                    "linear": _vector([forward, lateral, 0.0]),
                    "angular": _vector([0.0, 0.0, yaw_rate]),
                },
                "covariance": [0.0] * 36,
            },
        }
        self._put(f"{self.namespace}/odom", ODOM_TYPE, odom, stamp)
        imu = {
            "header": header(stamp, "imu"),
            "orientation": _yaw_quaternion(yaw),
            "orientation_covariance": [-1.0] + [0.0] * 8,  # -1: no orientation estimate
            "angular_velocity": _vector(reading["imu_gyro"]),
            "angular_velocity_covariance": [0.0] * 9,
            "linear_acceleration": _vector(reading["imu_accel"]),
            "linear_acceleration_covariance": [0.0] * 9,
        }
        self._put(f"{self.namespace}/imu", IMU_TYPE, imu, stamp)
        speed = float(np.asarray(command["speed"]).reshape(-1)[0])
        steering = float(np.asarray(command["steering"]).reshape(-1)[0])
        twist = {"linear": _vector([speed, 0.0, 0.0]), "angular": _vector([0.0, 0.0, steering])}
        self._put(f"{self.namespace}/cmd_vel", TWIST_TYPE, twist, stamp)
        for camera, namespace in self.cameras.items():
            image = reading.get(f"image/{camera}")
            if image is not None:
                message = image_message(np.asarray(image, np.uint8), stamp, f"{camera}_cam")
                self._put(f"{namespace}/image_raw", IMAGE_TYPE, message, stamp)
        self.steps += 1

    def close(self) -> None:
        if self._stream.closed:
            return
        self._writer.finish()
        self._stream.flush()
        os.fsync(self._stream.fileno())
        self._stream.close()


def read_lap_poses(path: str | os.PathLike, namespace: str = "/car") -> np.ndarray:
    """The odometry poses (N, 3: x, y, yaw) of a lap file, in recording order."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    poses = []
    with open(path, "rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        for _, _, _, odom in reader.iter_decoded_messages(topics=[f"{namespace}/odom"]):
            p, q = odom.pose.pose.position, odom.pose.pose.orientation
            poses.append((p.x, p.y, 2 * np.arctan2(q.z, q.w)))
    return np.array(poses).reshape(-1, 3)
