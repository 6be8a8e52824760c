"""What every arm driver node shares: the arm's topic contract (docs/ARCHITECTURE.md) on the ROS 2
side, so the Franka node and the SO-101 node differ only in their link to the device.

Publishers ``joint_states``, ``ee_pose`` and ``gripper/joint_states`` (sensor-data QoS; a
driver adds its own, e.g. ``ee_twist``) and ``/diagnostics``; subscriptions ``cmd/ee_pose`` and
``cmd/gripper`` (reliable, depth 1), each command checked before it goes to the link (stamp,
finite, frame, quaternion: ``arm_safety``), refused while not active, e-stopped or in a fault,
and a pose target clipped into the workspace box; services ``reset`` (a coroutine: the executor
keeps serving e-stop and commands while the arm travels), ``estop`` and ``clear_error``.

A subclass sets ``config_class`` (with ``workspace_min``, ``workspace_max``,
``command_max_age``, ``diagnostics_hz``), makes ``self.link`` in ``open_device`` (an object with
``estopped``, ``fault``, ``enable``, ``close``, ``command_pose``, ``command_gripper``,
``set_estop``, ``clear_error``),
and implements ``_start_reset`` and ``_device_name`` (``_device_values`` for more
/diagnostics entries); the link also has ``mode``, ``stalled``, ``reconnects`` and ``loop`` (its
``SupervisedLoop``).
"""

from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from std_srvs.srv import SetBool, Trigger

from robot_rl.drivers.arms.arm_safety import (
    Workspace,
    gripper_command_reason,
    pose_command_reason,
)
from robot_rl.ros.convert import diagnostic_array, from_stamp, msg_to_pose
from robot_rl.ros.node_base import DeviceNode, ParameterError, declare_config
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, command_qos, sensor_qos


class ArmDriverNode(DeviceNode):
    config_class: type

    events_executor = False
    """Spun by rclpy's Python executor (``robot_rl.ros.executors``): the reset coroutine is
    woken by a guard condition, which the events executor refuses."""

    def __init__(self, name: str, **kwargs):
        super().__init__(name, **kwargs)
        self.config = declare_config(self, self.config_class)
        try:
            self.workspace = Workspace(
                tuple(self.config.workspace_min), tuple(self.config.workspace_max)
            )
        except ValueError as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None
        self.link = None
        self.refused = 0
        self.clipped = 0
        self.last_refusal = ""
        self._ros_ready = False

    # hooks

    def _state_publishers(self) -> dict[str, tuple[type, str]]:
        """More state topics than the contract's three: {key: (message type, topic)}."""
        return {}

    def _start_reset(self, finished) -> None:
        """Start the reset motion; the link calls ``finished(ok, message)`` when it ends."""
        raise NotImplementedError

    def _device_name(self) -> str:
        """What /diagnostics' hardware id and a lost connection name: an address, a port."""
        raise NotImplementedError

    def _device_values(self, link) -> dict[str, str]:
        """The driver's own /diagnostics entries beside the shared ones."""
        return {}

    def _publish_diagnostics(self) -> None:
        link = self.link
        if link is None:
            level, message, mode = DiagnosticStatus.WARN, "not configured", "unconfigured"
        elif (fault := link.loop.recent_fault()) is not None:
            level, message, mode = DiagnosticStatus.ERROR, fault, "fault"
        elif link.stalled:
            level, mode = DiagnosticStatus.ERROR, "stalled"
            message = "the driver's device thread hangs: the arm holds its last target"
        else:
            mode = link.mode
            if mode in ("e-stop", "fault", "disconnected"):
                level = DiagnosticStatus.ERROR
                message = {
                    "e-stop": "e-stop engaged",
                    "fault": link.fault,
                    "disconnected": f"no connection to {self._device_name()}",
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
            "thread_faults": str(link.loop.faults if link else 0),
            "last_fault": link.loop.last_fault if link else "",
            **(self._device_values(link) if link else {}),
        }
        hardware = f"{self.get_name()}/{self._device_name()}"
        self._diag_pub.publish(
            diagnostic_array(self, level, message, hardware, values, time.time())
        )

    def safe_stop(self) -> None:
        """Hold and take no more commands; the link stays open."""
        if self.link is not None:
            self.link.enable(False)

    def close_device(self) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None

    # ROS 2 interfaces

    def _make_ros_interfaces(self) -> None:
        qos = sensor_qos()
        topics = {
            "joint_states": (JointState, "joint_states"),
            "ee_pose": (PoseStamped, "ee_pose"),
            "gripper": (JointState, "gripper/joint_states"),
            **self._state_publishers(),
        }
        self._pubs = {k: self.create_publisher(t, name, qos) for k, (t, name) in topics.items()}
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
            pos, quat, msg.header.frame_id, from_stamp(msg.header.stamp), time.time(),
            self.config.command_max_age,
        )  # fmt: skip
        if reason is not None:
            self._refuse(reason)
            return
        if not self._ready_for("pose command"):
            return
        clipped = self.workspace.clip(pos)
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
        elif self._ready_for("gripper command"):
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

        self._start_reset(finished)
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
            else "the driver's thread did not answer (connection lost?)"
        )
        return response

    def _on_clear_error(self, request, response):
        if self.link is None:
            response.success, response.message = False, "not configured"
            return response
        response.message = self.link.clear_error()
        response.success = not response.message.startswith(("recovery failed", "error "))
        return response
