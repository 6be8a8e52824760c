"""One camera of the simulated FR3 cell, as its own process like a real camera driver (so it can
be killed and respawned): it holds its own copy of the cell's MuJoCo model (``fr3_scene``), applies
the world's newest state from ``/sim/cell/state`` and renders the named camera offscreen
(``MUJOCO_GL=egl``) as the states arrive, at most ``rate`` frames per wall second.

It publishes what a camera driver publishes (``sim/nodes/camera_node.py``, the RealSense and
OpenCV nodes): ``image_raw`` (rgb8) and ``camera_info`` on sensor-data QoS, stamped with the wall
time of the world state the frame shows, and its status on ``/diagnostics``. Each frame shows a
new state: when the world stops, the frames stop, and the consumer's staleness bound sees it.

    robot-rl-fr3-sim-cell --ros-args -r __ns:=/wrist_cam -p part:=camera -p camera:=wrist
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Float64MultiArray

from robot_rl.drivers.config import param, positive
from robot_rl.ros.convert import array_to_image, camera_info, header
from robot_rl.ros.node_base import ParameterError, declare_config, main_for
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, sensor_qos, state_qos
from robot_rl.sim.cells.fr3_cell import STATE_TOPIC, part_field

STALE_AFTER = 2.0
"""Wall seconds without a new world state before the diagnostics warn."""


_size = (lambda v: 8 <= v <= 1024, "must be an integer in [8, 1024]")


@dataclass(frozen=True)
class CellCameraConfig:
    part: str = part_field("camera")
    task: str = param("pick_cube", "task whose scene the cell holds")
    camera: str = param("front", "camera of the cell: front or wrist")
    rate: float = param(10.0, "frames per wall second (at most one per world state)", positive)
    width: int = param(64, "image width (px)", _size)
    height: int = param(64, "image height (px)", _size)
    frame_id: str = param("", "frame of the images (default: the camera name)")


class CellCameraNode(Node):
    def __init__(self, **kwargs):
        super().__init__("cell_camera", **kwargs)
        self.config = c = declare_config(self, CellCameraConfig)
        import mujoco

        from robot_rl.sim.cells.fr3_scene import cell_model

        self._mujoco = mujoco
        try:
            self.model = cell_model(c.task)
        except ValueError as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None
        cameras = [self.model.camera(i).name for i in range(self.model.ncam)]
        if c.camera not in cameras:
            raise ParameterError(
                f"{self.get_fully_qualified_name()}: camera {c.camera!r} "
                f"is not in the cell; it has {cameras}"
            )
        self.data = mujoco.MjData(self.model)
        self._renderer = mujoco.Renderer(self.model, c.height, c.width)
        self._fovy = float(self.model.cam_fovy[self.model.camera(c.camera).id])
        self._frame = c.frame_id or c.camera
        self._bad_size = False
        self._frames, self._last_state_wall = 0, None
        self._image_pub = self.create_publisher(Image, "image_raw", sensor_qos())
        self._info_pub = self.create_publisher(CameraInfo, "camera_info", sensor_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self.create_subscription(Float64MultiArray, STATE_TOPIC, self._on_state, state_qos())
        self._period = 1.0 / c.rate
        self._next_frame = 0.0
        self.create_timer(1.0, self._publish_diagnostics)

    def _on_state(self, msg: Float64MultiArray) -> None:
        state = np.array(msg.data, np.float64)
        if len(state) != 1 + self.model.nq:
            if not self._bad_size:
                self.get_logger().error(
                    f"{STATE_TOPIC} has {len(state) - 1} positions, this "
                    f"cell's model has {self.model.nq}: another world?"
                )
                self._bad_size = True
            return
        self._last_state_wall = now = time.monotonic()
        if now < self._next_frame:
            return
        # frames are due every period; one that comes late restarts the schedule (no burst)
        self._next_frame = max(self._next_frame + self._period, now)
        self._render(state)

    def _render(self, state: np.ndarray) -> None:
        # rendered as the state arrives (not on a timer of its own): a frame is no older than
        # the delivery of the state it shows plus one render
        stamp = float(state[0])
        self.data.qpos[:] = state[1:]
        self._mujoco.mj_forward(self.model, self.data)
        self._renderer.update_scene(self.data, camera=self.config.camera)
        pixels = self._renderer.render()
        c = self.config
        self._image_pub.publish(array_to_image(pixels, "rgb8", stamp, self._frame))
        self._info_pub.publish(camera_info(c.width, c.height, self._fovy, stamp, self._frame))
        self._frames += 1

    def _publish_diagnostics(self) -> None:
        c = self.config
        age = None if self._last_state_wall is None else time.monotonic() - self._last_state_wall
        if self._bad_size:
            level, message = DiagnosticStatus.ERROR, f"{STATE_TOPIC} is of another model"
        elif age is None:
            level, message = DiagnosticStatus.WARN, "no world state received yet"
        elif age > STALE_AFTER:
            level, message = DiagnosticStatus.WARN, f"no world state for {age:.1f} s"
        else:
            level, message = DiagnosticStatus.OK, "publishing frames"
        values = {
            "camera": c.camera,
            "frames": str(self._frames),
            "size": f"{c.width}x{c.height}",
            "rate": str(c.rate),
        }
        status = DiagnosticStatus(
            level=level,
            name=self.get_fully_qualified_name(),
            message=message,
            hardware_id=f"fr3-sim-cell/{c.camera}",
            values=[KeyValue(key=k, value=v) for k, v in values.items()],
        )
        self._diag_pub.publish(DiagnosticArray(header=header(time.time()), status=[status]))

    def destroy_node(self) -> None:
        self._renderer.close()
        super().destroy_node()


CONFIG = CellCameraConfig
NODE = CellCameraNode
main = main_for(CellCameraNode)  # the console script is fr3_cell's (part:=...)
