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
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import Trigger

from robot_rl.ros.convert import diagnostic_array, pose_to_msg
from robot_rl.ros.node_base import ParameterError, declare_config, node_help, run_node
from robot_rl.ros.node_help import help_asked
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, sensor_qos, state_qos
from robot_rl.sim.cells.cell_process import bringup, chosen_part, physics_status
from robot_rl.sim.cells.configs import PARTS, CellWorldConfig
from robot_rl.sim.cells.topics import CUBE_TOPIC, FR3_STATE_TOPIC, RESET_OBJECTS, SUCCESS_TOPIC


class CellWorldNode(Node):
    config_class = CellWorldConfig

    def __init__(self, **kwargs):
        super().__init__("fr3_cell", **kwargs)
        self.config = c = declare_config(self, CellWorldConfig)
        from robot_rl.sim.cells.cell_world import CellWorld

        try:
            self.world = CellWorld(c.host, c.task, c.seed, c.realtime)
        except ValueError as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None
        self.world.start()  # raises OSError in one line if the address is taken
        self.get_logger().info(f"franky-sim serves the FR3 of the {c.task} cell on {c.host}")
        self._state_pub = self.create_publisher(Float64MultiArray, FR3_STATE_TOPIC, state_qos())
        self._cube_pub = self.create_publisher(PoseStamped, CUBE_TOPIC, sensor_qos())
        self._success_pub = self.create_publisher(Bool, SUCCESS_TOPIC, sensor_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self.create_service(Trigger, RESET_OBJECTS, self._on_reset_objects)
        self.create_timer(1.0 / c.state_rate, self._publish_state)
        self.create_timer(1.0, self._publish_diagnostics)
        self._last_steps = -1
        self.bringup = bringup(self, c.manage)

    def _publish_state(self) -> None:
        if not self.world.alive or self.world.steps == self._last_steps:
            return  # the physics stands still: nothing new to say
        self._last_steps = self.world.steps
        truth = self.world.read_now()
        self._state_pub.publish(Float64MultiArray(data=[truth.stamp, *truth.qpos.tolist()]))
        self._cube_pub.publish(pose_to_msg(truth.cube_pos, truth.cube_quat, truth.stamp, "base"))
        self._success_pub.publish(Bool(data=truth.success))

    def _on_reset_objects(self, request, response):
        pos = self.world.reset_objects()
        response.success = True
        response.message = f"cube placed at {pos.round(3).tolist()}"
        return response

    def _publish_diagnostics(self) -> None:
        world = self.world
        factor = world.realtime_factor
        level, message = physics_status(world, factor)
        truth = world.truth()
        values = {
            "host": world.host,
            "steps": str(world.steps),
            "realtime_factor": f"{factor:.3f}",
            "placements": str(world.placements),
            "sim_time": f"{truth.sim_time:.3f}" if truth else "",
        }
        self._diag_pub.publish(
            diagnostic_array(self, level, message, f"franky-sim/{world.host}", values, time.time())
        )

    def destroy_node(self) -> None:
        self.world.linger(self.config.linger)
        self.world.close()
        super().destroy_node()


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
