"""A twin camera as its own process, like a real camera driver (so a test can kill it).

A camera cannot read another process's physics: the physics node publishes the full simulation
state on ``/sim/state``; this node keeps its own copy of the same MJCF model, applies each state
and renders the named MuJoCo camera at ``rate`` (simulated Hz). Publishes ``image_raw`` (rgb8)
and ``camera_info`` on sensor-data QoS, stamped with the simulated time of the state it shows,
and its status on ``/diagnostics`` once a wall-clock second (as every driver does): OK while
frames go out, WARN before the first state or when states stop coming, ERROR for a state of
another model.

    python -m robot_rl.sim.nodes.camera_node --ros-args -r __ns:=/front_cam -p camera:=front
"""

from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.clock import Clock, ClockType
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray

from robot_rl.ros.node_base import Param, declare_params, main_for, positive
from robot_rl.ros.qos import state_qos
from robot_rl.sim.cells.state_camera import RenderingNode
from robot_rl.sim.nodes.twin_driver import SIM_STATE_TOPIC


def twin_model(task_name: str):
    """The MuJoCo model the physics node of ``task_name`` simulates."""
    from robot_rl.envs.task import make_task
    from robot_rl.robot_kinds import resolve, robot_kind

    task = make_task(task_name)
    return resolve(robot_kind(task.robot).twin_model)(task)


STALE_AFTER = 2.0
"""Wall seconds without a frame before the diagnostics warn."""


def _positive_int(name: str, default: int, description: str) -> Param:
    return Param(name, default, description, lambda v: v > 0, "must be a positive integer")


class CameraTwinNode(RenderingNode):
    @classmethod
    def declared_parameters(cls) -> list[Param]:
        """The parameters the node declares (its ``--help`` lists them)."""
        return [
            Param("task", "pick_cube", "task whose scene the physics node simulates"),
            Param("camera", "front", "MuJoCo camera name in the model"),
            positive("rate", 30.0, "frames per simulated second"),
            _positive_int("width", 128, "image width (px)"),
            _positive_int("height", 128, "image height (px)"),
            Param("frame_id", "", "frame of the images (default: the camera name)"),
        ]

    def __init__(self, **kwargs):
        super().__init__(
            "camera_twin", parameter_overrides=[Parameter("use_sim_time", value=True)], **kwargs
        )
        self.params = p = declare_params(self, self.declared_parameters())
        missing = f"is not in the {p['task']} model"
        model = twin_model(p["task"])
        self._open_camera(model, p["camera"], p["width"], p["height"], p["frame_id"], missing)
        self._period = 1.0 / p["rate"]
        self._next_frame = -np.inf
        self._sizes = (self.model.nq, 3 * self.model.nmocap, 4 * self.model.nmocap)
        self._warned = False
        self._last_frame_wall, self._last_stamp = None, None
        self.create_subscription(Float64MultiArray, SIM_STATE_TOPIC, self._on_state, state_qos())
        # wall clock: diagnostics go out even while simulated time stands still
        self._diag_timer = self.create_timer(
            1.0, self._publish_diagnostics, clock=Clock(clock_type=ClockType.STEADY_TIME)
        )

    def _on_state(self, msg: Float64MultiArray) -> None:
        stamp = msg.data[0]
        if stamp < self._next_frame:
            return
        # frames are due every period; after a pause (or a reset's jump) start afresh
        self._next_frame = max(self._next_frame + self._period, stamp - self._period)
        state = np.frombuffer(msg.data, np.float64)[1:]
        nq, npos, nquat = self._sizes
        if len(state) != nq + npos + nquat:
            if not self._warned:
                self.get_logger().error(
                    f"/sim/state has {len(state)} values, this model needs "
                    f"{nq + npos + nquat}: is the physics node's task "
                    f"{self.params['task']!r}?"
                )
                self._warned = True
            return
        d = self.data
        d.qpos[:] = state[:nq]
        d.mocap_pos[:] = state[nq : nq + npos].reshape(-1, 3)
        d.mocap_quat[:] = state[nq + npos :].reshape(-1, 4)
        self._publish_frame(stamp)
        self._last_frame_wall, self._last_stamp = time.monotonic(), stamp

    def _publish_diagnostics(self) -> None:
        p = self.params
        age = None if self._last_frame_wall is None else time.monotonic() - self._last_frame_wall
        if self._warned:
            level, message = DiagnosticStatus.ERROR, "/sim/state is of another model"
        elif age is None:
            level, message = DiagnosticStatus.WARN, "no /sim/state received yet"
        elif age > STALE_AFTER:
            level, message = DiagnosticStatus.WARN, f"no frame for {age:.1f} s"
        else:
            level, message = DiagnosticStatus.OK, "publishing frames"
        last = "" if self._last_stamp is None else f"{self._last_stamp:.3f}"
        stamp = self._last_stamp if self._last_stamp is not None else 0.0
        hardware = f"mujoco-twin/{p['task']}/{p['camera']}"
        self._publish_status(level, message, hardware, p["rate"], stamp, last_stamp=last)


main = main_for(CameraTwinNode)

if __name__ == "__main__":
    main()
