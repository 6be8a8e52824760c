"""The MuJoCo twin: models, in-process envs and ROS 2 nodes (later issues). Imported as ``robot_rl.sim``."""
