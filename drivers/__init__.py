"""ROS 2 nodes for real hardware, one node per file (later issues). Imported as ``robot_rl.drivers``."""
