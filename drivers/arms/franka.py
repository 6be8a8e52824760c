"""Franka FR3/Panda arm driver: the arm's topic contract (docs/ARCHITECTURE.md) over libfranka
through franky, so the actor's ROS backend cannot tell it from the arm twin.

    robot-rl-franka --ros-args -r __ns:=/arm -p robot_ip:=172.16.0.2

Publishes ``joint_states``, ``ee_pose``, ``ee_twist``, ``ee_wrench`` and ``gripper/joint_states``
(sensor-data QoS) and ``/diagnostics``; subscribes ``cmd/ee_pose`` and ``cmd/gripper`` (reliable,
depth 1); services ``reset``, ``estop`` and ``clear_error``. A stale or malformed command is
refused (``arm_safety``), a valid target clipped into the workspace box and per-step limits;
the watchdog holds the arm when commands stop. Configure connects, activate holds the current
pose, deactivate stops the arm, cleanup disconnects.
"""

from __future__ import annotations

from geometry_msgs.msg import TwistStamped, WrenchStamped

from robot_rl.drivers.arms.arm_node import ArmDriverNode
from robot_rl.drivers.arms.configs import FrankaConfig
from robot_rl.drivers.arms.franka_link import FrankaLink
from robot_rl.drivers.arms.franka_state import ArmState
from robot_rl.ros.arm_contract import ARM_JOINTS, BASE_FRAME, FLANGE_FRAME, GRIPPER_JOINT
from robot_rl.ros.convert import (
    array_to_twist_stamped,
    array_to_wrench_stamped,
    joint_state_msg,
    pose_to_msg,
)
from robot_rl.ros.node_base import main_for


class FrankaDriver(ArmDriverNode):
    """See the module docstring."""

    config_class = FrankaConfig

    def __init__(self, **kwargs):
        super().__init__("franka", **kwargs)

    def open_device(self) -> None:
        if not self._ros_ready:
            self._make_ros_interfaces()
        link = FrankaLink(self.config, self._publish_state, self.log)
        link.connect()  # raises ConnectError with one line
        self.link = link
        link.start()
        self.get_logger().info(f"connected to the Franka at {self.config.robot_ip}")

    def enable_motion(self) -> None:
        self.link.enable(True)
        state = self.link.last_state
        if state is not None and not self.link.estopped and not self.link.fault:
            self.link.command_pose(state.tcp_pos, state.tcp_quat)  # hold here, controller on

    def _state_publishers(self) -> dict[str, tuple[type, str]]:
        return {"ee_twist": (TwistStamped, "ee_twist"), "ee_wrench": (WrenchStamped, "ee_wrench")}

    # called from the link's thread
    def _publish_state(self, s: ArmState) -> None:
        if not self.context.ok():
            return  # shutting down: the link thread is about to be stopped
        pubs = self._pubs
        pubs["joint_states"].publish(
            joint_state_msg(ARM_JOINTS, s.joint_pos, s.joint_vel, s.joint_effort, stamp=s.stamp)
        )
        pubs["ee_pose"].publish(pose_to_msg(s.tcp_pos, s.tcp_quat, s.stamp, BASE_FRAME))
        pubs["ee_twist"].publish(array_to_twist_stamped(s.tcp_vel, s.stamp, BASE_FRAME))
        pubs["ee_wrench"].publish(array_to_wrench_stamped(s.wrench, s.stamp, FLANGE_FRAME))
        if s.gripper is not None:
            pubs["gripper"].publish(joint_state_msg([GRIPPER_JOINT], [s.gripper], stamp=s.stamp))

    def _start_reset(self, finished) -> None:
        pose = self.config.reset_pose
        self.link.reset(pose[:3], pose[3:], self.config.reset_timeout, finished)

    def _device_name(self) -> str:
        return self.config.robot_ip

    def _device_values(self, link) -> dict[str, str]:
        return {
            "joint_moves": str(link.joint_moves),
            "state_cycles": str(link.cycles),
            **link.samples.fields(),
        }


main = main_for(FrankaDriver)

if __name__ == "__main__":
    main()
