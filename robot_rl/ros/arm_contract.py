"""The names in the arm's topic contract (docs/ARCHITECTURE.md): joint names and frames, shared
by the drivers, the twin, the ROS backend and MCAP recordings. Pure: no rclpy."""

ARM_NAMESPACE = "/arm"
ARM_JOINTS = tuple(f"joint{i}" for i in range(1, 8))
GRIPPER_JOINT = "gripper"
BASE_FRAME = "base"
FLANGE_FRAME = "flange"
TCP_FRAME = "tcp"
"""The frame of the TCP pose on ``ee_pose`` (in ``BASE_FRAME``), as demos record it on ``/tf``."""
