"""ROS 2 nodes for real hardware: one folder per device kind (``arms/``, ``cameras/``,
``car/``, ``teleop/``), one node per file; each folder's ``configs.py`` holds its devices'
config dataclasses, registered by name in ``robot_rl.drivers.registry``."""
