"""The simulated car's forward camera, as its own process like a real camera driver: a
``StateCameraNode`` (``sim/cells/state_camera.py``) rendering the car's model at the states of
``/sim/car/state``.

    robot-rl-car-sim-cell --ros-args -r __ns:=/front_cam -p part:=camera
"""

from __future__ import annotations

from dataclasses import dataclass

from robot_rl.drivers.config import param
from robot_rl.ros.node_base import main_for
from robot_rl.sim.cells.car_cell import STATE_TOPIC, part_field
from robot_rl.sim.cells.state_camera import (
    StateCameraNode,
    frame_id_field,
    rate_field,
    size_field,
)


@dataclass(frozen=True)
class CarCameraConfig:
    part: str = part_field("camera")
    camera: str = param("front", "camera of the car's model")
    rate: float = rate_field()
    width: int = size_field(64, "width")
    height: int = size_field(64, "height")
    frame_id: str = frame_id_field()


class CarCameraNode(StateCameraNode):
    node_name = "car_camera"
    config_class = CarCameraConfig
    state_topic = STATE_TOPIC
    hardware = "car-sim"
    camera_missing = "is not in the car's model"
    model_has = "the car's model has {nq}"

    def build_model(self):
        from robot_rl.sim.car_twin import car_twin_model

        return car_twin_model(None)


CONFIG = CarCameraConfig
NODE = CarCameraNode
main = main_for(CarCameraNode)  # the console script is car_cell's (part:=...)
