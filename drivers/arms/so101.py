"""SO-100/SO-101 arm driver: the arm's topic contract (docs/ARCHITECTURE.md) over a bus of Feetech
STS3215 servos, so the actor's ROS backend drives it as it drives the Franka node.

    robot-rl-so101 --ros-args -r __ns:=/arm -p port:=/dev/serial/by-id/usb-... \\
        -p calibration_file:=my_arm.json   # LeRobot's, from lerobot-calibrate

Publishes ``joint_states`` (the five arm joints, rad), ``ee_pose`` (the TCP by forward
kinematics, frame ``base``, the contract's tool axes), ``ee_twist`` (its velocity from the
servos' speeds; no ``ee_wrench``: the arm has no force sensor), ``gripper/joint_states`` (the
jaw, 0 open .. 1 closed, as the Franka's hand) and ``/diagnostics``; subscribes ``cmd/ee_pose``
and ``cmd/gripper`` (0 open .. 1 closed); services ``reset`` (to ``reset_joints``), ``estop`` and
``clear_error``. A stale or malformed command is refused, a valid target clipped into the
workspace box; what reaches the servos is decided in the bus thread (``so101_link``: one step
from the measured TCP, joint limits, watchdog, faults). Configure opens the bus and holds where
the arm is (torque on), activate enables commands, deactivate holds, cleanup closes the port.
"""

from __future__ import annotations

from geometry_msgs.msg import TwistStamped

from robot_rl.drivers.arms import so101_calibration as calibration
from robot_rl.drivers.arms import so101_kinematics as kin
from robot_rl.drivers.arms.arm_node import ArmDriverNode
from robot_rl.drivers.arms.configs import So101Config
from robot_rl.drivers.arms.feetech_bus import BusError
from robot_rl.drivers.arms.so101_link import ArmReading, LinkSettings, So101Link
from robot_rl.ros.arm_contract import BASE_FRAME, GRIPPER_JOINT
from robot_rl.ros.convert import array_to_twist_stamped, joint_state_msg, pose_to_msg
from robot_rl.ros.node_base import ParameterError, main_for


class So101Driver(ArmDriverNode):
    """See the module docstring."""

    config_class = So101Config

    def __init__(self, **kwargs):
        super().__init__("so101", **kwargs)
        try:
            self.motors = (
                calibration.load(self.config.calibration_file)
                if self.config.calibration_file
                else calibration.default()
            )
        except calibration.CalibrationError as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None

    def open_device(self) -> None:
        if not self._ros_ready:
            self._make_ros_interfaces()
        c = self.config
        link = So101Link(LinkSettings.of(c, self.motors), self._publish_state, self.log)
        try:
            link.connect()  # BusError: one line, in the failed transition's log
        except BusError:
            link.close()
            raise
        self.link = link
        link.start()
        self.get_logger().info(f"SO-101 on {c.port}: {len(self.motors)} servos answer")

    def enable_motion(self) -> None:
        self.link.enable(True)

    def _state_publishers(self) -> dict[str, tuple[type, str]]:
        return {"ee_twist": (TwistStamped, "ee_twist")}

    # called from the link's thread
    def _publish_state(self, r: ArmReading) -> None:
        if not self.context.ok():
            return
        self._pubs["joint_states"].publish(
            joint_state_msg(kin.JOINTS, r.joints, r.velocities, stamp=r.stamp)
        )
        self._pubs["ee_pose"].publish(pose_to_msg(r.tcp_pos, r.tcp_quat, r.stamp, BASE_FRAME))
        jacobian, _ = kin.jacobian(r.joints)  # the TCP's velocity from the servos' speeds
        twist = jacobian @ r.velocities
        self._pubs["ee_twist"].publish(array_to_twist_stamped(twist, r.stamp, BASE_FRAME))
        closed = kin.closed_fraction(r.gripper, self.config.gripper_open)
        self._pubs["gripper"].publish(joint_state_msg([GRIPPER_JOINT], [closed], stamp=r.stamp))

    def _start_reset(self, finished) -> None:
        c = self.config
        self.link.reset(c.reset_joints, c.reset_speed, c.reset_timeout, finished)

    def _device_name(self) -> str:
        return self.config.port

    def _device_values(self, link) -> dict[str, str]:
        last = link.last
        return {
            "unreachable": str(link.unreachable),
            "bus_cycles": str(link.cycles),
            "temperatures": ",".join(map(str, last.temperatures)) if last else "",
        }


def discover() -> list[dict]:
    """The servo bus adapters this machine shows (``feetech_bus.discover_adapters``)."""
    from robot_rl.drivers.arms.feetech_bus import discover_adapters

    return discover_adapters()


main = main_for(So101Driver)

if __name__ == "__main__":
    main()
