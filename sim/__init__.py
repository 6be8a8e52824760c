"""The MuJoCo twin: models, in-process envs, ROS 2 nodes (later issues): ``robot_rl.sim``."""
