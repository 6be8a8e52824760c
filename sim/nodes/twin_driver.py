"""What the arm and car twin nodes share: a DeviceNode that owns an in-process twin, steps its
physics on the wall clock (``speedup`` times real time), is the source of ``/clock``, publishes
the full simulation state for the camera nodes, and runs the driver-side safety (command
watchdog, e-stop, faults), the ``reset``/``estop``/``clear_error`` services and ``/diagnostics``.

Subclasses publish their robot's topics (``publish_readings``), turn command messages into twin
commands (``command``) and say how to hold still (``hold``).
"""

from __future__ import annotations

import array

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.clock import Clock, ClockType
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock as ClockMsg
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from std_srvs.srv import SetBool, Trigger

from robot_rl.drivers.command_guard import stale_reason
from robot_rl.envs.backend import Command, Reading
from robot_rl.ros.convert import diagnostic_array, to_stamp
from robot_rl.ros.node_base import DeviceNode, Param, declare_params, positive
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, state_qos

SIM_STATE_TOPIC = "/sim/state"
"""Float64MultiArray: [time, qpos (nq), mocap_pos (3 nmocap), mocap_quat (4 nmocap)]."""


def pack_sim_state(time: float, data) -> Float64MultiArray:
    parts = [np.array([time]), data.qpos, data.mocap_pos.ravel(), data.mocap_quat.ravel()]
    msg = Float64MultiArray()
    for label, part in zip(("time", "qpos", "mocap_pos", "mocap_quat"), parts, strict=True):
        msg.layout.dim.append(MultiArrayDimension(label=label, size=len(part), stride=1))
    msg.data = array.array("d", np.concatenate(parts).tobytes())
    return msg


class TwinDriverNode(DeviceNode):
    """Base of the twin driver nodes; see the module docstring."""

    robots: tuple[str, ...] = ("arm",)
    """The robot kinds (``Task.robot``) whose tasks this node's twin serves."""
    default_task = "pick_cube"

    @classmethod
    def declared_parameters(cls) -> list[Param]:
        """The parameters the node declares (its ``--help`` lists them)."""
        return [
            Param("task", cls.default_task, "task whose scene and reset procedure to use"),
            positive("speedup", 1.0, "simulated seconds per wall-clock second"),
            positive(
                "physics_hz",
                50.0,
                "sensor publishing rate in simulated Hz (physics runs finer inside)",
            ),
            positive(
                "watchdog_timeout",
                0.5,
                "hold still when no motion command arrived within this many simulated seconds",
            ),
            positive("diagnostics_hz", 1.0, "/diagnostics rate (wall clock)"),
            Param("seed", 0, "seed of the reset randomisation", lambda v: v >= 0, "must be >= 0"),
        ]

    def __init__(self, name: str, **kwargs):
        super().__init__(
            name, parameter_overrides=[Parameter("use_sim_time", value=True)], **kwargs
        )
        self.params = declare_params(self, self.declared_parameters())
        self.twin = None
        self.task = None
        self.sim_time = 0.0
        self.estopped = False
        self.fault = ""
        self.holding = True
        self.last_command_time = -np.inf
        self.reading: Reading = {}
        self._rng = np.random.default_rng(self.params["seed"])
        self._wall = Clock(clock_type=ClockType.STEADY_TIME)
        self._timers = []

    def publish_readings(self, reading: Reading, stamp: float) -> None:
        raise NotImplementedError

    def hold(self) -> None:
        """Command the twin to stand still where it is."""
        raise NotImplementedError

    def build_twin(self):
        from robot_rl.envs.task import make_task
        from robot_rl.sim import make_twin_backend

        task = make_task(self.params["task"])
        if task.robot not in self.robots:
            raise ValueError(
                f"task {task.name!r} is for a {task.robot}, this node is a twin of "
                f"{' or '.join(self.robots)}"
            )
        self.task = task
        # The node steps one sensor period at a time; cameras render in their own processes.
        physics = task.replace(control_hz=self.params["physics_hz"], cameras=())
        return make_twin_backend(physics)

    def open_device(self) -> None:
        self.twin = self.build_twin()
        self.sim_time = float(self.twin.data.time)
        self._clock_pub = self.create_publisher(ClockMsg, "/clock", 10)
        self._state_pub = self.create_publisher(Float64MultiArray, SIM_STATE_TOPIC, state_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self.create_service(Trigger, "reset", self._on_reset)
        self.create_service(SetBool, "estop", self._on_estop)
        self.create_service(Trigger, "clear_error", self._on_clear_error)
        self.paused = False  # a paced actor waits for its learner: simulated time stands still
        self.create_service(SetBool, "pause", self._on_pause)
        period = 1.0 / (self.params["physics_hz"] * self.params["speedup"])
        self._timers = [
            self.create_timer(period, self._tick, clock=self._wall),
            self.create_timer(
                1.0 / self.params["diagnostics_hz"], self._publish_diagnostics, clock=self._wall
            ),
        ]
        self._publish_all()

    def enable_motion(self) -> None:
        self.last_command_time = -np.inf  # motion starts on the first fresh command

    def safe_stop(self) -> None:
        if self.twin is not None:
            self.hold()
            self.holding = True

    def close_device(self) -> None:
        for timer in self._timers:
            self.destroy_timer(timer)
        self._timers = []
        if self.twin is not None:
            self.twin.close()
            self.twin = None

    def accepts_commands(self) -> bool:
        ready = self.twin is not None and self.motion_enabled
        return ready and not self.estopped and not self.fault

    def apply(self, command: Command, stamp: float | None) -> bool:
        """Send a command to the twin if motion is allowed and the command is fresh; returns
        whether it was sent.

        ``stamp`` is the command's header stamp on this node's clock (simulated time, which the
        actor's ROS backend also stamps with); None for a message type without a header
        (``cmd_vel``), whose freshness is its arrival (the watchdog bounds it). An unstamped,
        stale or future-stamped command is refused and the robot holds where it is: a stream
        that sends one cannot be trusted to be following the robot."""
        if not self.accepts_commands():
            return False
        if stamp is not None:
            reason = stale_reason(stamp, self.sim_time, self.params["watchdog_timeout"])
            if reason is not None:
                self.get_logger().warning(
                    f"refused a command: {reason}; holding", throttle_duration_sec=1.0
                )
                if not self.holding:
                    self.safe_stop()
                return False
        try:
            self.twin.send(command)
        except ValueError as error:  # non-finite or malformed: latch a fault, hold
            self.fault = str(error)
            self.get_logger().error(f"command refused, holding until clear_error: {error}")
            self.safe_stop()
            return False
        self.last_command_time = self.sim_time
        self.holding = False
        return True

    def _tick(self) -> None:
        if self.twin is None:
            return
        if self.paused:  # /clock goes on (a silent clock is a fault), its time does not
            self._clock_pub.publish(ClockMsg(clock=to_stamp(self.sim_time)))
            return
        self.twin.advance()
        self.sim_time = max(self.sim_time, float(self.twin.data.time))
        stale = self.sim_time - self.last_command_time > self.params["watchdog_timeout"]
        if stale and not self.holding:
            self.get_logger().info("no fresh command: watchdog holds the robot")
            self.safe_stop()
        self._publish_all()

    def _publish_all(self) -> None:
        self.reading = self.twin.read()
        self._clock_pub.publish(ClockMsg(clock=to_stamp(self.sim_time)))
        self.publish_readings(self.reading, self.sim_time)
        self._state_pub.publish(pack_sim_state(self.sim_time, self.twin.data))

    def _on_reset(self, request, response):
        if self.twin is None or self.estopped or self.fault:
            response.success = False
            response.message = (
                "not configured"
                if self.twin is None
                else "e-stop engaged"
                if self.estopped
                else f"fault: {self.fault}"
            )
            return response
        try:
            self.task.reset(self.twin, self._rng)
        except Exception as error:  # the reset procedure failed; say so to the caller
            response.success, response.message = False, f"reset failed: {error}"
            return response
        self.safe_stop()
        self.sim_time = max(self.sim_time, float(self.twin.data.time))
        self._publish_all()
        response.success, response.message = True, f"reset at t={self.sim_time:.3f}"
        return response

    def _on_estop(self, request, response):
        self.estopped = bool(request.data)
        if self.estopped:
            self.safe_stop()
        self.get_logger().warning(f"e-stop {'engaged' if self.estopped else 'released'}")
        response.success, response.message = True, "engaged" if self.estopped else "released"
        return response

    def _on_pause(self, request, response):
        self.paused = bool(request.data)
        state = f"paused at t={self.sim_time:.3f}" if self.paused else "running"
        response.success, response.message = True, state
        return response

    def _on_clear_error(self, request, response):
        cleared, self.fault = self.fault, ""
        response.success = True
        response.message = f"cleared: {cleared}" if cleared else "no fault"
        return response

    def _publish_diagnostics(self) -> None:
        if self.estopped or self.fault:
            level, message = DiagnosticStatus.ERROR, self.fault or "e-stop engaged"
        elif self.holding:
            level, message = DiagnosticStatus.WARN, "holding (watchdog or no command yet)"
        else:
            level, message = DiagnosticStatus.OK, "following commands"
        values = {
            "sim_time": f"{self.sim_time:.3f}",
            "speedup": str(self.params["speedup"]),
            "motion_enabled": str(self.motion_enabled),
            "estop": str(self.estopped),
        }
        self._diag_pub.publish(
            diagnostic_array(
                self, level, message, f"mujoco-twin/{self.params['task']}", values, self.sim_time
            )
        )
