"""The whole stack on the MuJoCo twin: twin node, camera nodes, actor node, learner.

    ros2 launch robot_rl sim.launch.py task:=pick_cube speedup:=4.0 cameras:=front,wrist

The same processes as ``robot-rl up sim`` (both read ``robot_rl.stack``); `ros2 launch
robot_rl sim.launch.py --show-args` lists the arguments.
"""

from robot_rl import launch_support

MODE, PARTS = "sim", ("nodes", "actor", "learner")
ARGUMENTS = launch_support.arguments_for(MODE, PARTS)


def describe(**values):
    """The processes this file starts for these launch arguments (no launch import)."""
    return launch_support.describe(MODE, PARTS, values)


def generate_launch_description():
    return launch_support.launch_description(MODE, PARTS)
