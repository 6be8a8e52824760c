"""The simulated SO-101 cell (``hardware/so101_sim.yaml``): a world that the SO-101 node, camera
consumers and an operator meet as they would meet the arm on a desk.

    robot-rl-so101-sim-cell --ros-args -r __ns:=/sim -p port:=/tmp/robot_rl_so101_sim/bus
    robot-rl-so101-sim-cell --ros-args -r __ns:=/front_cam -p part:=camera -p camera:=front
    robot-rl-so101-sim-cell --ros-args -r __ns:=/teleop -p part:=human

One console script, three processes (``part``): ``world`` (the SO-101 twin's world behind a
Feetech servo bus on a pty linked at ``port``, the SO-101 node's port: ``so101_world``; brings up
the ``manage`` driver nodes once the bus is there), ``camera`` (renders the world's states, as the
FR3 cell's cameras do) and ``human`` (the FR3 cell's operator with this arm's task, publishing
what a gamepad node publishes). Ground truth goes only to ``/sim/...`` (cube pose,
``/sim/success``, ``/sim/cell/state``, service ``/sim/reset_objects``), never to the actor.
"""

from __future__ import annotations

import sys

from robot_rl.ros.node_base import ParameterError, node_help, run_node
from robot_rl.ros.node_help import help_asked
from robot_rl.sim.cells.cell_human import CellHumanNode
from robot_rl.sim.cells.cell_process import chosen_part
from robot_rl.sim.cells.configs import (
    PARTS,
    So101CameraConfig,
    So101HumanConfig,
    So101WorldConfig,
)
from robot_rl.sim.cells.state_camera import StateCameraNode
from robot_rl.sim.cells.topics import FR3_STATE_TOPIC
from robot_rl.sim.cells.world_node import ArmWorldNode


class So101WorldNode(ArmWorldNode):
    node_name = "so101_cell"
    config_class = So101WorldConfig

    def open_world(self, c: So101WorldConfig):
        from robot_rl.sim.cells.so101_world import So101CellWorld

        world = So101CellWorld(c.port, c.task, c.seed)
        world.start()
        self.get_logger().info(f"the SO-101 of the {c.task} cell answers on its bus at {c.port}")
        return world

    def hardware(self) -> str:
        return f"so101-sim/{self.world.port}"

    def diagnostic_values(self) -> dict[str, str]:
        peer = self.world.peer
        return {
            "port": str(peer.link),
            "goal_writes": str(len(peer.goal_writes)),
            "bad_packets": str(peer.bad_packets),
        }


class So101CameraNode(StateCameraNode):
    node_name = "cell_camera"
    config_class = So101CameraConfig
    state_topic = FR3_STATE_TOPIC
    hardware = "so101-sim-cell"
    camera_missing = "is not in the cell"
    model_has = "this cell's model has {nq}: another world?"

    def build_model(self):
        from robot_rl.envs.task import make_task
        from robot_rl.sim.so101_twin import so101_twin_model

        try:
            return so101_twin_model(make_task(self.config.task))
        except ValueError as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None


class So101HumanNode(CellHumanNode):
    config_class = So101HumanConfig
    hardware = "so101-sim-cell/operator"


PART_NODES = {"world": So101WorldNode, "camera": So101CameraNode, "human": So101HumanNode}


def main(args: list[str] | None = None) -> None:
    if help_asked(args):  # before the bus is plugged
        titles = {f"parameters of -p part:={name}": cls for name, cls in PART_NODES.items()}
        print(node_help(So101WorldNode, titles))
        sys.exit(0)
    sys.exit(run_node(PART_NODES[chosen_part(args, PARTS)], args))


if __name__ == "__main__":
    main()
