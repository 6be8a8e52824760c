"""ROS 2 nodes for real hardware: one folder per device kind (``arms/``, ``cameras/``,
``teleop/``), one node per file, each registered by name in ``robot_rl.drivers.registry``."""
