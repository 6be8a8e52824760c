"""The simulated car's forward camera, as its own process like a real camera driver: it holds its
own copy of the car's MuJoCo model, applies the world's newest state from ``/sim/car/state`` and
renders the ``front`` camera offscreen as the states arrive, at most ``rate`` frames per wall
second, on the camera contract: ``image_raw`` (rgb8), ``camera_info`` (sensor-data QoS), stamped
with the wall time of the state it shows, and its status on ``/diagnostics``.

    robot-rl-car-sim-cell --ros-args -r __ns:=/front_cam -p part:=camera
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
from robot_rl.sim.cells.car_cell import STATE_TOPIC, part_field

STALE_AFTER = 2.0
_size = (lambda v: 8 <= v <= 1024, "must be an integer in [8, 1024]")


@dataclass(frozen=True)
class CarCameraConfig:
    part: str = part_field("camera")
    camera: str = param("front", "camera of the car's model")
    rate: float = param(10.0, "frames per wall second (at most one per world state)", positive)
    width: int = param(64, "image width (px)", _size)
    height: int = param(64, "image height (px)", _size)
    frame_id: str = param("", "frame of the images (default: the camera name)")


class CarCameraNode(Node):
    def __init__(self, **kwargs):
        super().__init__("car_camera", **kwargs)
        self.config = c = declare_config(self, CarCameraConfig)
        import mujoco

        from robot_rl.sim.car_twin import car_twin_model

        self._mujoco = mujoco
        self.model = car_twin_model(None)
        cameras = [self.model.camera(i).name for i in range(self.model.ncam)]
        if c.camera not in cameras:
            raise ParameterError(
                f"{self.get_fully_qualified_name()}: camera {c.camera!r} is "
                f"not in the car's model; it has {cameras}"
            )
        self.data = mujoco.MjData(self.model)
        self._renderer = mujoco.Renderer(self.model, c.height, c.width)
        self._fovy = float(self.model.cam_fovy[self.model.camera(c.camera).id])
        self._frame = c.frame_id or c.camera
        self._frames, self._last_state_wall, self._bad_size = 0, None, False
        self._image_pub = self.create_publisher(Image, "image_raw", sensor_qos())
        self._info_pub = self.create_publisher(CameraInfo, "camera_info", sensor_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self.create_subscription(Float64MultiArray, STATE_TOPIC, self._on_state, state_qos())
        self._period, self._next_frame = 1.0 / c.rate, 0.0
        self.create_timer(1.0, self._publish_diagnostics)

    def _on_state(self, msg: Float64MultiArray) -> None:
        state = np.array(msg.data, np.float64)
        if len(state) != 1 + self.model.nq:
            if not self._bad_size:
                self.get_logger().error(
                    f"{STATE_TOPIC} has {len(state) - 1} positions, the "
                    f"car's model has {self.model.nq}"
                )
                self._bad_size = True
            return
        self._last_state_wall = now = time.monotonic()
        if now < self._next_frame:
            return
        self._next_frame = max(self._next_frame + self._period, now)
        self.data.qpos[:] = state[1:]
        self._mujoco.mj_forward(self.model, self.data)
        self._renderer.update_scene(self.data, camera=self.config.camera)
        pixels = self._renderer.render()
        c, stamp = self.config, float(state[0])
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
            hardware_id=f"car-sim/{c.camera}",
            values=[KeyValue(key=k, value=v) for k, v in values.items()],
        )
        self._diag_pub.publish(DiagnosticArray(header=header(time.time()), status=[status]))

    def destroy_node(self) -> None:
        self._renderer.close()
        super().destroy_node()


CONFIG = CarCameraConfig
NODE = CarCameraNode
main = main_for(CarCameraNode)  # the console script is car_cell's (part:=...)
