"""ROS 2 nodes for real hardware: one folder per device kind (``arms/``, ``cameras/``,
``car/``, ``teleop/``), one node per file (a config dataclass plus a node), each registered by
name in ``robot_rl.drivers.registry``."""
