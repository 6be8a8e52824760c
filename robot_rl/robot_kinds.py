"""What each kind of robot brings, in one table: the backend an env needs, the in-process twin,
the ROS robot backend, the twin's driver node and its namespace, the MuJoCo model a camera twin
renders. Everything that used to branch on ``task.robot == "arm"`` looks it up here instead.

Factories are ``"module:attribute"`` strings resolved on use, so reading the table imports
neither MuJoCo nor rclpy.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


def resolve(path: str) -> Any:
    """``"package.module:attribute"`` -> the attribute (imports the module)."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class RobotKind:
    name: str
    namespace: str
    """Where its driver's topics live (``/arm/joint_states``)."""
    backend_method: str
    """A method every backend of this kind has (checked when an env is built)."""
    twin_factory: str
    """``(task, seed=None) -> twin backend``."""
    twin_model: str
    """``(task) -> mujoco.MjModel`` of the twin's world (camera twins render it)."""
    ros_backend: str
    """``(task, config) -> RosRobotBackend``."""
    twin_node_module: str
    twin_node_name: str


ROBOT_KINDS: dict[str, RobotKind] = {
    k.name: k
    for k in (
        RobotKind(
            "arm",
            "/arm",
            "move_to",
            "robot_rl.sim.arm_twin:make_arm_twin",
            "robot_rl.sim.arm_twin:arm_twin_model",
            "robot_rl.ros.backend:RosArmBackend",
            "robot_rl.sim.nodes.arm_twin_node",
            "arm_twin",
        ),
        RobotKind(
            "so101",
            "/arm",
            "move_to",
            "robot_rl.sim.so101_twin:make_so101_twin",
            "robot_rl.sim.so101_twin:so101_twin_model",
            "robot_rl.ros.backend:RosSo101Backend",
            "robot_rl.sim.nodes.arm_twin_node",
            "arm_twin",
        ),
        RobotKind(
            "car",
            "/car",
            "place_car",
            "robot_rl.sim.car_twin:make_car_twin",
            "robot_rl.sim.car_twin:car_twin_model",
            "robot_rl.ros.backend:RosCarBackend",
            "robot_rl.sim.nodes.car_twin_node",
            "car_twin",
        ),
    )
}


def robot_kind(name: str) -> RobotKind:
    try:
        return ROBOT_KINDS[name]
    except KeyError:
        raise ValueError(f"unknown robot kind {name!r}; known: {', '.join(ROBOT_KINDS)}") from None
