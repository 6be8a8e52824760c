"""The simulated car cell (``hardware/car_sim.yaml``): a world that the VESC node, the car's camera
and the actor meet as they would the FastRLAP car.

    robot-rl-car-sim-cell --ros-args -r __ns:=/sim -p port:=/tmp/robot_rl_car_sim/vesc
    robot-rl-car-sim-cell --ros-args -r __ns:=/front_cam -p part:=camera
    robot-rl-car-sim-cell --ros-args -r __ns:=/teleop -p part:=human -p mode:=drive

One console script, three processes (``part``): ``world`` (this module: the car twin behind a VESC
on a pty linked at ``port``; once it exists, brings up the ``manage`` driver nodes), ``camera``
(``car_camera``) and ``human`` (``car_human``). Ground truth goes only to ``/sim/...``
(``/sim/car/state``, ``/sim/collision``), never read by the robot. The ``calibration`` fields must
equal the VESC node's. Stamps are wall time.
"""

from __future__ import annotations

import sys
import time

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from std_msgs.msg import Bool, Float64MultiArray

from robot_rl.ros.convert import diagnostic_array
from robot_rl.ros.node_base import declare_config, node_help, run_node
from robot_rl.ros.node_help import help_asked
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, sensor_qos, state_qos
from robot_rl.sim.cells.cell_process import bringup, chosen_part, physics_status
from robot_rl.sim.cells.configs import PARTS, CarWorldConfig
from robot_rl.sim.cells.topics import CAR_STATE_TOPIC, COLLISION_TOPIC


class CarWorldNode(Node):
    config_class = CarWorldConfig

    def __init__(self, **kwargs):
        super().__init__("car_cell", **kwargs)
        self.config = c = declare_config(self, CarWorldConfig)
        from robot_rl.drivers.car.vesc_kinematics import CarGeometry
        from robot_rl.sim.car_twin import WHEELBASE
        from robot_rl.sim.cells.car_world import Calibration, CarWorld

        calibration = Calibration(
            CarGeometry(c.wheel_radius, c.gear_ratio, c.motor_poles, WHEELBASE),
            c.servo_centre,
            c.servo_per_radian,
            c.duty_per_mps,
        )
        self.world = CarWorld(c.port, calibration, c.start_pose, c.physics_hz, c.realtime)
        self.world.start()
        self.get_logger().info(f"the car twin answers as a VESC on {c.port}")
        self._state_pub = self.create_publisher(Float64MultiArray, CAR_STATE_TOPIC, state_qos())
        self._collision_pub = self.create_publisher(Bool, COLLISION_TOPIC, sensor_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self.create_timer(1.0 / c.state_rate, self._publish_state)
        self.create_timer(1.0, self._publish_diagnostics)
        self.bringup = bringup(self, c.manage)

    def _publish_state(self) -> None:
        stamp, qpos, touching = self.world.truth()
        self._state_pub.publish(Float64MultiArray(data=[stamp, *qpos.tolist()]))
        self._collision_pub.publish(Bool(data=touching))

    def _publish_diagnostics(self) -> None:
        world = self.world
        factor = world.realtime_factor
        level, message = physics_status(world, factor)
        peer = world.peer
        values = {
            "port": str(world.peer.link),
            "steps": str(world.steps),
            "realtime_factor": f"{factor:.3f}",
            "pace": f"{world.drivetrain.pace:.3f}",  # of late; the rates reported follow it
            "collisions": str(world.collisions),
            "vesc_requests": str(peer.requests),
            "vesc_commands": str(len(peer.commands)),
            "speed_setpoint": f"{world.drivetrain.speed:.3f}",
            "steering_setpoint": f"{world.drivetrain.steering:.3f}",
        }
        self._diag_pub.publish(
            diagnostic_array(
                self, level, message, f"car-sim/{world.peer.link}", values, time.time()
            )
        )

    def destroy_node(self) -> None:
        self.world.close()
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    if help_asked(args):  # before the VESC peer opens its pty
        from robot_rl.sim.cells.car_camera import CarCameraNode
        from robot_rl.sim.cells.car_human import CarHumanNode

        parts = {"world": CarWorldNode, "camera": CarCameraNode, "human": CarHumanNode}
        titles = {f"parameters of -p part:={name}": cls for name, cls in parts.items()}
        print(node_help(CarWorldNode, titles))
        sys.exit(0)
    part = chosen_part(args, PARTS)
    if part == "world":
        factory = CarWorldNode
    elif part == "camera":
        from robot_rl.sim.cells.car_camera import CarCameraNode as factory
    else:
        from robot_rl.sim.cells.car_human import CarHumanNode as factory
    sys.exit(run_node(factory, args))


if __name__ == "__main__":
    main()
