"""ROS 2 nodes for real hardware, one node per file (later issues): ``robot_rl.drivers``."""
