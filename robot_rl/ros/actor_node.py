"""The actor as a ROS 2 node: ``robot-rl actor --backend ros`` that also takes ``--ros-args``.

Launch files and ``robot-rl up`` run it with ``--config RUN_DIR/config/actor.json --ros-args
...`` (docs/ARCHITECTURE.md, "Configuration"). The actor's own options come before
``--ros-args`` (``robot-rl actor``'s flags override the file); the ROS arguments go to the node
that the ROS backend spins, so its name, remappings and parameters (``use_sim_time`` above all)
are the launch file's. The node publishes the actor's status on ``/diagnostics``.
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


def parse_actor_args(own: Sequence[str]):
    """The node's ``ActorConfig`` from its own arguments: ``--config FILE`` and flags."""
    from robot_rl.config_file import parse_args
    from robot_rl.runtime.actor import ActorConfig

    return parse_args(
        ActorConfig,
        own,
        default=ActorConfig(backend="ros", speedup=0.0),
        prog="python -m robot_rl.ros.actor_node",
        description="the actor as a ROS 2 node (options as robot-rl actor)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    from robot_rl.errors import UserError
    from robot_rl.runtime.actor_main import actor_main

    own, ros = split_ros_args(sys.argv[1:] if argv is None else argv)
    try:
        cfg = parse_actor_args(own)
    except SystemExit as err:
        return err.code if isinstance(err.code, int) else 1
    except UserError as err:  # a bad config file: one line
        print(f"error: {err}", file=sys.stderr)
        return 2
    ros_config = dataclasses.replace(
        cfg.ros,
        node_name=cfg.ros.node_name or DEFAULT_NODE_NAME,
        ros_args=tuple(ros),
        # with ROS arguments (a launch file's) the use_sim_time parameter decides
        use_sim_time=None if ros else cfg.ros.use_sim_time,
    )
    return actor_main(dataclasses.replace(cfg, ros=ros_config))


if __name__ == "__main__":
    sys.exit(main())
