"""The actor as a ROS 2 node: ``robot-rl actor --backend ros`` that also takes ``--ros-args``.

Launch files (and ``robot-rl up``, which starts exactly what they would) run

    python -m robot_rl.ros.actor_node --task pick_cube --learner tcp://... \
        --ros-args -r __node:=actor -p use_sim_time:=true

The actor's own options come before ``--ros-args`` (parsed as ``robot-rl actor``'s); the ROS
arguments go to the node that the ROS backend spins, so its name, remappings and parameters
(``use_sim_time`` above all) are the launch file's. The node publishes the actor's status on
``/diagnostics``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence

DEFAULT_NODE_NAME = "actor"


def split_ros_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(own arguments, ROS arguments from ``--ros-args`` up to a closing ``--``)."""
    own, ros, inside = [], [], False
    for arg in argv:
        if arg == "--ros-args":
            inside = True
            ros.append(arg)
        elif inside and arg == "--":
            inside = False
        elif inside:
            ros.append(arg)
        else:
            own.append(arg)
    return own, ros


def main(argv: Sequence[str] | None = None) -> int:
    import tyro

    from robot_rl.commands import actor as actor_command
    from robot_rl.runtime.actor import ActorConfig

    own, ros = split_ros_args(sys.argv[1:] if argv is None else argv)
    try:
        cfg = tyro.cli(
            ActorConfig,
            args=own,
            default=ActorConfig(backend="ros", speedup=0.0),
            prog="python -m robot_rl.ros.actor_node",
            description="the actor as a ROS 2 node (options as robot-rl actor)",
        )
    except SystemExit as err:
        return err.code if isinstance(err.code, int) else 1
    ros_config = dataclasses.replace(
        cfg.ros,
        node_name=cfg.ros.node_name or DEFAULT_NODE_NAME,
        ros_args=tuple(ros),
        # with ROS arguments (a launch file's) the use_sim_time parameter decides
        use_sim_time=None if ros else cfg.ros.use_sim_time,
    )
    return actor_command.run(dataclasses.replace(cfg, ros=ros_config))


if __name__ == "__main__":
    sys.exit(main())
