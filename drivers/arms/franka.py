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

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from std_srvs.srv import SetBool, Trigger

from robot_rl.drivers.arms.configs import FrankaConfig
from robot_rl.drivers.arms.franka_link import FrankaLink
from robot_rl.drivers.arms.franka_safety import (
    Workspace,
    gripper_command_reason,
    pose_command_reason,
)
from robot_rl.drivers.arms.franka_state import ArmState
from robot_rl.ros.arm_contract import ARM_JOINTS, BASE_FRAME, FLANGE_FRAME, GRIPPER_JOINT
from robot_rl.ros.convert import (
    array_to_twist_stamped,
    array_to_wrench_stamped,
    diagnostic_array,
    from_stamp,
    joint_state_msg,
    msg_to_pose,
    pose_to_msg,
)
from robot_rl.ros.node_base import DeviceNode, ParameterError, declare_config, main_for
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, command_qos, sensor_qos


class FrankaDriver(DeviceNode):
    """See the module docstring."""

    config_class = FrankaConfig

    def __init__(self, **kwargs):
        super().__init__("franka", **kwargs)
        self.config = declare_config(self, FrankaConfig)
        try:
            Workspace(tuple(self.config.workspace_min), tuple(self.config.workspace_max))
        except ValueError as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None
        self.link: FrankaLink | None = None
        self.refused = 0
        self.clipped = 0
        self.last_refusal = ""
        self._ros_ready = False

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

    def _make_ros_interfaces(self) -> None:
        qos = sensor_qos()
        self._pubs = {
            "joint_states": self.create_publisher(JointState, "joint_states", qos),
            "ee_pose": self.create_publisher(PoseStamped, "ee_pose", qos),
            "ee_twist": self.create_publisher(TwistStamped, "ee_twist", qos),
            "ee_wrench": self.create_publisher(WrenchStamped, "ee_wrench", qos),
            "gripper": self.create_publisher(JointState, "gripper/joint_states", qos),
        }
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self.create_subscription(PoseStamped, "cmd/ee_pose", self._on_pose, command_qos())
        self.create_subscription(Float64, "cmd/gripper", self._on_gripper, command_qos())
        # the reset coroutine runs in a group of its own, so that while it awaits the arm the
        # default group (estop, commands, timers and the guard that wakes it) keeps running
        self._reset_guard = self.create_guard_condition(lambda: None)
        self.create_service(
            Trigger, "reset", self._on_reset, callback_group=ReentrantCallbackGroup()
        )
        self.create_service(SetBool, "estop", self._on_estop)
        self.create_service(Trigger, "clear_error", self._on_clear_error)
        self.create_timer(1.0 / self.config.diagnostics_hz, self._publish_diagnostics)
        self._ros_ready = True

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

    def _refuse(self, reason: str) -> None:
        self.refused += 1
        self.last_refusal = reason
        self.get_logger().warning(f"command refused: {reason}", throttle_duration_sec=1.0)

    def _ready_for(self, what: str) -> bool:
        link = self.link
        if link is None or not self.motion_enabled:
            self._refuse(f"{what}: the node is not active")
        elif link.estopped:
            self._refuse(f"{what}: e-stop engaged")
        elif link.fault:
            self._refuse(f"{what}: fault ({link.fault}); call clear_error")
        else:
            return True
        return False

    def _on_pose(self, msg: PoseStamped) -> None:
        pos, quat = msg_to_pose(msg)
        reason = pose_command_reason(
            pos,
            quat,
            msg.header.frame_id,
            from_stamp(msg.header.stamp),
            time.time(),
            self.config.command_max_age,
        )
        if reason is not None:
            self._refuse(reason)
            return
        if not self._ready_for("pose command"):
            return
        clipped = self.link.workspace.clip(pos)
        if (clipped != pos).any():
            self.clipped += 1
            self.get_logger().info(
                f"target {pos.round(3).tolist()} clipped to the workspace: "
                f"{clipped.round(3).tolist()}",
                throttle_duration_sec=1.0,
            )
        self.link.command_pose(clipped, quat)

    def _on_gripper(self, msg: Float64) -> None:
        # Float64 carries no stamp; the pose stream is what the watchdog guards.
        reason = gripper_command_reason(msg.data)
        if reason is not None:
            self._refuse(reason)
            return
        if self._ready_for("gripper command"):
            self.link.command_gripper(min(max(msg.data, 0.0), 1.0))

    async def _on_reset(self, request, response):
        # A coroutine: the executor keeps serving estop, commands and /diagnostics while the
        # arm travels; the link's thread completes the future and wakes the executor.
        if self.link is None or not self.motion_enabled:
            response.success, response.message = False, "not active"
            return response
        done = Future()

        def finished(ok: bool, message: str) -> None:
            done.set_result((ok, message))
            self._reset_guard.trigger()

        pose = self.config.reset_pose
        self.link.reset(pose[:3], pose[3:], self.config.reset_timeout, finished)
        response.success, response.message = await done
        return response

    def _on_estop(self, request, response):
        if self.link is None:
            response.success, response.message = False, "not configured"
            return response
        applied = self.link.set_estop(bool(request.data))
        response.success = applied
        response.message = (
            ("engaged" if request.data else "released")
            if applied
            else "the robot thread did not answer (connection lost?)"
        )
        return response

    def _on_clear_error(self, request, response):
        if self.link is None:
            response.success, response.message = False, "not configured"
            return response
        response.message = self.link.clear_error()
        response.success = not response.message.startswith(("recovery failed", "error "))
        return response

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
