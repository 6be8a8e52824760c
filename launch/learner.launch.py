"""The learner alone (a GPU host needs no other part of the stack, nor ROS 2 to run it).

    ros2 launch robot_rl learner.launch.py task:=pick_cube learner:=tcp://127.0.0.1:5555

Anything but a loopback address needs CURVE keys: pass them in learner_args
(``--curve-secret-key ... --authorized-keys ...``). `--show-args` lists the arguments.
"""

from robot_rl import launch_support

MODE, PARTS = "sim", ("learner",)
ARGUMENTS = launch_support.arguments_for(MODE, PARTS)


def describe(**values):
    """The processes this file starts for these launch arguments (no launch import)."""
    return launch_support.describe(MODE, PARTS, values)


def generate_launch_description():
    return launch_support.launch_description(MODE, PARTS)
