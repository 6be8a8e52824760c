"""What the arm cells' world nodes share (``fr3_cell``, ``so101_cell``): the ground truth of a
pick-cube world on ``/sim/...`` (the world's state for its cameras, the cube's pose, the task's
success), the service that puts the cube at a new place, the physics' pace and the device's
figures on ``/diagnostics``, and the driver nodes it brings up once its robot is there.

A subclass opens its world (``open_world``: ``read_now``, ``reset_objects``, ``alive``,
``error``, ``steps``, ``realtime_factor``, ``placements``, ``linger``, ``close``) and names the
hardware and the figures of its diagnostics. Wall stamps.
"""

from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import Trigger

from robot_rl.ros.convert import diagnostic_array, pose_to_msg
from robot_rl.ros.node_base import ParameterError, declare_config
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, sensor_qos, state_qos
from robot_rl.sim.cells.cell_process import bringup, physics_status
from robot_rl.sim.cells.topics import CUBE_TOPIC, FR3_STATE_TOPIC, RESET_OBJECTS, SUCCESS_TOPIC


class ArmWorldNode(Node):
    """See the module docstring; ``config_class`` has ``state_rate``, ``linger`` and ``manage``."""

    node_name: str
    config_class: type

    def __init__(self, **kwargs):
        super().__init__(self.node_name, **kwargs)
        self.config = c = declare_config(self, self.config_class)
        try:
            self.world = self.open_world(c)
        except ValueError as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None
        self._state_pub = self.create_publisher(Float64MultiArray, FR3_STATE_TOPIC, state_qos())
        self._cube_pub = self.create_publisher(PoseStamped, CUBE_TOPIC, sensor_qos())
        self._success_pub = self.create_publisher(Bool, SUCCESS_TOPIC, sensor_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self.create_service(Trigger, RESET_OBJECTS, self._on_reset_objects)
        self.create_timer(1.0 / c.state_rate, self._publish_state)
        self.create_timer(1.0, self._publish_diagnostics)
        self._last_steps = -1
        self.bringup = bringup(self, c.manage)

    def open_world(self, config):
        """The started world (``ValueError`` for a config it cannot use, ``OSError`` in one line
        when its device cannot be served)."""
        raise NotImplementedError

    def hardware(self) -> str:
        """The diagnostics' hardware id."""
        raise NotImplementedError

    def diagnostic_values(self) -> dict[str, str]:
        """The device's own figures, beside the physics' pace."""
        return {}

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
        values = {
            **self.diagnostic_values(),
            "steps": str(world.steps),
            "realtime_factor": f"{factor:.3f}",
            "placements": str(world.placements),
        }
        self._diag_pub.publish(
            diagnostic_array(self, level, message, self.hardware(), values, time.time())
        )

    def destroy_node(self) -> None:
        self.world.linger(self.config.linger)
        self.world.close()
        super().destroy_node()
