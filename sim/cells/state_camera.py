"""What the simulated cells' camera processes share (``car_camera``, ``cell_camera``): a node
that holds its own copy of a world's MuJoCo model, applies the world's newest state from its
state topic (``[wall stamp, *qpos]``) and renders one camera offscreen as the states arrive, at
most ``rate`` frames per wall second on the wall clock's grid of periods (a cell's cameras of one
rate show the same states, as on a common trigger), on the camera contract: ``image_raw`` (rgb8) and
``camera_info`` on sensor-data QoS, stamped with the wall time of the state the frame shows, and
its status on ``/diagnostics``. Each frame shows a new state: when the world stops, the frames
stop, and the consumer's staleness bound sees it.
"""

from __future__ import annotations

import math
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Float64MultiArray

from robot_rl.ros.convert import array_to_image, camera_info, diagnostic_array
from robot_rl.ros.node_base import ParameterError, declare_config
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, sensor_qos, state_qos

STALE_AFTER = 2.0
"""Wall seconds without a new world state before the diagnostics warn."""


class RenderingNode(Node):
    """A camera process: one camera of its own copy of a MuJoCo model rendered offscreen and
    published on the camera contract (``image_raw``, ``camera_info``), its status on
    ``/diagnostics``. Shared by the cells' cameras and the twin's (``sim/nodes/camera_node.py``)."""

    geom_groups: tuple[int, ...] | None = None
    """The model's geom groups the camera shows (None: MuJoCo's default, groups 0-2)."""

    def _open_camera(self, model, camera: str, width: int, height: int, frame_id: str, missing):
        """Render ``camera`` of ``model`` (``missing`` completes "camera 'x' ..." when the model
        has no such camera) at ``width`` x ``height`` into frames of ``frame_id``."""
        import mujoco

        self._mujoco = mujoco
        self.model = model
        cameras = [model.camera(i).name for i in range(model.ncam)]
        if camera not in cameras:
            raise ParameterError(
                f"{self.get_fully_qualified_name()}: camera {camera!r} {missing}; it has {cameras}"
            )
        self.data = mujoco.MjData(model)
        self._renderer = mujoco.Renderer(model, height, width)
        self._scene_option = None
        if self.geom_groups is not None:
            self._scene_option = mujoco.MjvOption()
            self._scene_option.geomgroup[:] = [g in self.geom_groups for g in range(6)]
        self._fovy = float(model.cam_fovy[model.camera(camera).id])
        self._camera, self._size, self._frame = camera, (width, height), frame_id or camera
        self._frames = 0
        self._image_pub = self.create_publisher(Image, "image_raw", sensor_qos())
        self._info_pub = self.create_publisher(CameraInfo, "camera_info", sensor_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)

    def _publish_frame(self, stamp: float) -> None:
        """Render the state in ``data`` and publish it, stamped ``stamp``."""
        self._mujoco.mj_forward(self.model, self.data)
        self._renderer.update_scene(self.data, camera=self._camera, scene_option=self._scene_option)
        pixels = self._renderer.render()
        self._image_pub.publish(array_to_image(pixels, "rgb8", stamp, self._frame))
        self._info_pub.publish(camera_info(*self._size, self._fovy, stamp, self._frame))
        self._frames += 1

    def _publish_status(
        self, level, message: str, hardware: str, rate: float, stamp: float, **more
    ):
        width, height = self._size
        values = {
            "camera": self._camera,
            "frames": str(self._frames),
            "size": f"{width}x{height}",
            "rate": str(rate),
            **more,
        }
        self._diag_pub.publish(diagnostic_array(self, level, message, hardware, values, stamp))

    def destroy_node(self) -> None:
        self._renderer.close()
        super().destroy_node()


class StateCameraNode(RenderingNode):
    """Subclasses name their node, config class (``camera``, ``rate``, ``width``, ``height``,
    ``frame_id``), state topic and diagnostics' hardware prefix, and build the model."""

    node_name: str
    config_class: type
    state_topic: str
    hardware: str
    camera_missing = "is not in the model"
    """Completes "camera 'x' ..." when the model has no such camera."""
    model_has = "the model has {nq}"
    """Completes the log line of a state of another size."""

    def __init__(self, **kwargs):
        super().__init__(self.node_name, **kwargs)
        self.config = c = declare_config(self, self.config_class)
        model = self.build_model()
        self._open_camera(model, c.camera, c.width, c.height, c.frame_id, self.camera_missing)
        self._last_state_wall, self._bad_size = None, False
        self.create_subscription(Float64MultiArray, self.state_topic, self._on_state, state_qos())
        self._period, self._next_frame = 1.0 / c.rate, 0.0
        self.create_timer(1.0, self._publish_diagnostics)

    def build_model(self):
        """The world's MuJoCo model (``ParameterError`` for a config it cannot build)."""
        raise NotImplementedError

    def _on_state(self, msg: Float64MultiArray) -> None:
        state = np.array(msg.data, np.float64)
        if len(state) != 1 + self.model.nq:
            if not self._bad_size:
                self.get_logger().error(
                    f"{self.state_topic} has {len(state) - 1} positions, "
                    + self.model_has.format(nq=self.model.nq)
                )
                self._bad_size = True
            return
        self._last_state_wall = time.monotonic()
        now = time.time()
        if now < self._next_frame:
            return
        # frames are due on the wall clock's grid of periods, so a cell's cameras of one rate
        # capture the same world state (as cameras on a common trigger do); one that comes late
        # waits for the next grid point (no burst)
        self._next_frame = (math.floor(now / self._period) + 1) * self._period
        # rendered as the state arrives (not on a timer of its own): a frame is no older than
        # the delivery of the state it shows plus one render
        self.data.qpos[:] = state[1:]
        self._publish_frame(float(state[0]))

    def _publish_diagnostics(self) -> None:
        c = self.config
        age = None if self._last_state_wall is None else time.monotonic() - self._last_state_wall
        if self._bad_size:
            level, message = DiagnosticStatus.ERROR, f"{self.state_topic} is of another model"
        elif age is None:
            level, message = DiagnosticStatus.WARN, "no world state received yet"
        elif age > STALE_AFTER:
            level, message = DiagnosticStatus.WARN, f"no world state for {age:.1f} s"
        else:
            level, message = DiagnosticStatus.OK, "publishing frames"
        self._publish_status(level, message, f"{self.hardware}/{c.camera}", c.rate, time.time())
