"""The simulated FR3 cell (``hardware/fr3_sim.yaml``): a world that a Franka node, camera consumers
and an operator meet as they would meet hardware.

    robot-rl-fr3-sim-cell --ros-args -r __ns:=/sim -p host:=127.13.0.1            # the world
    robot-rl-fr3-sim-cell --ros-args -r __ns:=/front_cam -p part:=camera -p camera:=front
    robot-rl-fr3-sim-cell --ros-args -r __ns:=/teleop -p part:=human

One console script, three processes (``part``): ``world`` (this module: franky-sim on ``host``, the
Franka node's ``robot_ip``, stepping ``cell_world``; brings up the ``manage`` driver nodes once it
serves), ``camera`` (``cell_camera``) and ``human`` (``cell_human``). Ground truth goes only to
``/sim/...`` (cube pose, ``/sim/success``, ``/sim/cell/state``, service ``/sim/reset_objects``),
read by evaluation and the operator, never the actor; status to ``/diagnostics``. Wall stamps.
"""

from __future__ import annotations

import sys

from robot_rl.ros.node_base import node_help, run_node
from robot_rl.ros.node_help import help_asked
from robot_rl.sim.cells.cell_process import chosen_part
from robot_rl.sim.cells.configs import PARTS, CellWorldConfig
from robot_rl.sim.cells.world_node import ArmWorldNode


class CellWorldNode(ArmWorldNode):
    node_name = "fr3_cell"
    config_class = CellWorldConfig

    def open_world(self, c: CellWorldConfig):
        from robot_rl.sim.cells.cell_world import CellWorld

        world = CellWorld(c.host, c.task, c.seed, c.realtime)
        world.start()  # raises OSError in one line if the address is taken
        self.get_logger().info(f"franky-sim serves the FR3 of the {c.task} cell on {c.host}")
        return world

    def hardware(self) -> str:
        return f"franky-sim/{self.world.host}"

    def diagnostic_values(self) -> dict[str, str]:
        truth = self.world.truth()
        return {"host": self.world.host, "sim_time": f"{truth.sim_time:.3f}" if truth else ""}


def main(args: list[str] | None = None) -> None:
    if help_asked(args):  # before franky-sim starts
        from robot_rl.sim.cells.cell_camera import CellCameraNode
        from robot_rl.sim.cells.cell_human import CellHumanNode

        parts = {"world": CellWorldNode, "camera": CellCameraNode, "human": CellHumanNode}
        titles = {f"parameters of -p part:={name}": cls for name, cls in parts.items()}
        print(node_help(CellWorldNode, titles))
        sys.exit(0)
    part = chosen_part(args, PARTS)
    if part == "world":
        factory = CellWorldNode
    elif part == "camera":
        from robot_rl.sim.cells.cell_camera import CellCameraNode as factory
    else:
        from robot_rl.sim.cells.cell_human import CellHumanNode as factory
    try:
        sys.exit(run_node(factory, args))
    except OSError as error:  # the world's address is taken: one line
        print(f"error: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
