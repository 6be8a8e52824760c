"""Driver messages -> backend reading entries (``robot_rl.envs.backend``'s names and units): the
one conversion the ROS backend applies to live topics and ``robot_rl.data.ros_bag_demos`` to a
recorded bag, so a bag's observations are the ones the robot would have seen. No rclpy: the
messages may be rclpy's or the decoded ones of an MCAP reader (the same fields)."""

from __future__ import annotations

import numpy as np

from robot_rl.data.image_fit import fit_image
from robot_rl.envs.backend import Reading
from robot_rl.ros import convert
from robot_rl.ros.arm_contract import ARM_JOINTS


def pose_entries(prefix: str):
    """PoseStamped -> ``<prefix>_pos`` (3) and ``<prefix>_quat`` (4, w x y z)."""

    def extract(msg) -> Reading:
        pos, quat = convert.msg_to_pose(msg)
        return {f"{prefix}_pos": pos, f"{prefix}_quat": quat}

    return extract


def arm_joint_entries(names=ARM_JOINTS):
    """The ``joint_pos`` and ``joint_vel`` of the arm's joints ``names`` from a joint state."""

    def extract(msg) -> Reading:
        pos, vel, _ = convert.joint_state_to_arrays(msg, names)
        return {"joint_pos": pos, "joint_vel": vel}

    return extract


def gripper_entries(msg) -> Reading:
    pos, _, _ = convert.joint_state_to_arrays(msg, ["gripper"])
    return {"gripper_pos": np.clip(pos, 0.0, 1.0)}


def twist_entries(msg) -> Reading:
    return {"tcp_vel": convert.twist_stamped_to_array(msg)}


def wrench_entries(msg) -> Reading:
    return {"wrench": convert.wrench_stamped_to_array(msg)}


def camera_entries(camera: str, size: int):
    """Image -> ``image/<camera>``: RGB, centre-cropped and resampled to the task's size."""
    return lambda msg: {f"image/{camera}": fit_image(convert.image_to_rgb(msg), size)}


ARM_TOPICS = {
    "ee_pose": ("geometry_msgs/msg/PoseStamped", pose_entries("tcp")),
    "joint_states": ("sensor_msgs/msg/JointState", arm_joint_entries()),
    "ee_twist": ("geometry_msgs/msg/TwistStamped", twist_entries),
    "ee_wrench": ("geometry_msgs/msg/WrenchStamped", wrench_entries),
    "gripper/joint_states": ("sensor_msgs/msg/JointState", gripper_entries),
}
"""The arm's sensor topics (relative to its namespace): message type and reading entries."""
