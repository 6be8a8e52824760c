"""The names in the arm's topic contract (docs/ARCHITECTURE.md): joint names and frames, shared
by the drivers, the twin, the ROS backend and MCAP recordings. Pure: no rclpy."""

ARM_NAMESPACE = "/arm"
ARM_JOINTS = tuple(f"joint{i}" for i in range(1, 8))
"""The Franka's seven joints, as its driver names them on ``joint_states``."""
SO101_JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
"""The SO-100/SO-101's five arm joints (its model's and LeRobot's names)."""
GRIPPER_JOINT = "gripper"
BASE_FRAME = "base"
FLANGE_FRAME = "flange"
TCP_FRAME = "tcp"
"""The frame of the TCP pose on ``ee_pose`` (in ``BASE_FRAME``), as demos record it on ``/tf``."""
