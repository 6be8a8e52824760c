"""The robot side of a real setup: the driver nodes its hardware file names, and the actor.

    ros2 launch robot_rl robot.launch.py hardware:=hardware/fr3_realsense_spacemouse.yaml \
        task:=pick_cube cameras:=front,wrist learner:=tcp://gpu-host:5555

The learner runs elsewhere (``learner.launch.py`` or ``robot-rl learner`` on the GPU host);
``robot-rl up robot`` starts these and the learner together. `--show-args` lists the arguments.
"""

from robot_rl import launch_support

MODE, PARTS = "robot", ("nodes", "actor")
ARGUMENTS = launch_support.arguments_for(MODE, PARTS)


def describe(**values):
    """The processes this file starts for these launch arguments (no launch import)."""
    return launch_support.describe(MODE, PARTS, values)


def generate_launch_description():
    return launch_support.launch_description(MODE, PARTS)
