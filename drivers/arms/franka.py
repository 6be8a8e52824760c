"""Franka FR3/Panda arm driver: the arm's topic contract (docs/ARCHITECTURE.md) over libfranka
through franky, so the actor's ROS backend cannot tell it from the arm twin.

    robot-rl-franka --ros-args -r __ns:=/arm -p robot_ip:=172.16.0.2

Publishes ``joint_states``, ``ee_pose``, ``ee_twist``, ``ee_wrench`` and ``gripper/joint_states``
(sensor-data QoS) and ``/diagnostics``; subscribes ``cmd/ee_pose`` and ``cmd/gripper`` (reliable,
depth 1); services ``reset``, ``estop`` and ``clear_error``. A stale or malformed command is
refused (``franka_safety``), a valid target clipped into the workspace box and per-step limits;
the watchdog holds the arm when commands stop. Configure connects, activate holds the current
pose, deactivate stops the arm, cleanup disconnects.
"""

from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import TwistStamped, WrenchStamped

from robot_rl.drivers.arms.arm_node import ArmDriverNode
from robot_rl.drivers.arms.configs import FrankaConfig
from robot_rl.drivers.arms.franka_link import FrankaLink
from robot_rl.drivers.arms.franka_state import ArmState
from robot_rl.ros.arm_contract import ARM_JOINTS, BASE_FRAME, FLANGE_FRAME, GRIPPER_JOINT
from robot_rl.ros.convert import (
    array_to_twist_stamped,
    array_to_wrench_stamped,
    diagnostic_array,
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

    def safe_stop(self) -> None:
        if self.link is not None:
            self.link.enable(False)

    def close_device(self) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None

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

    def _publish_diagnostics(self) -> None:
        link = self.link
        if link is None:
            level, message, mode = DiagnosticStatus.WARN, "not configured", "unconfigured"
        elif (fault := link.loop.recent_fault()) is not None:
            level, message, mode = DiagnosticStatus.ERROR, fault, "fault"
        elif link.stalled:
            level, mode = DiagnosticStatus.ERROR, "stalled"
            message = "the franka-link thread hangs: the controller holds its last reference"
        else:
            mode = link.mode
            if mode in ("e-stop", "fault", "disconnected"):
                level = DiagnosticStatus.ERROR
                message = {
                    "e-stop": "e-stop engaged",
                    "fault": link.fault,
                    "disconnected": f"no connection to {self.config.robot_ip}",
                }[mode]
            elif mode == "holding":
                level, message = DiagnosticStatus.WARN, "holding (watchdog or no command yet)"
            else:
                level, message = DiagnosticStatus.OK, mode
        values = {
            "mode": mode,
            "motion_enabled": str(self.motion_enabled),
            "estop": str(bool(link and link.estopped)),
            "fault": link.fault if link else "",
            "refused": str(self.refused),
            "last_refusal": self.last_refusal,
            "clipped": str(self.clipped),
            "reconnects": str(link.reconnects if link else 0),
            "joint_moves": str(link.joint_moves if link else 0),
            "state_cycles": str(link.cycles if link else 0),
            "thread_faults": str(link.loop.faults if link else 0),
            "last_fault": link.loop.last_fault if link else "",
            **(link.samples.fields() if link else {}),
        }
        self._diag_pub.publish(
            diagnostic_array(
                self, level, message, f"franka/{self.config.robot_ip}", values, time.time()
            )
        )


main = main_for(FrankaDriver)

if __name__ == "__main__":
    main()
