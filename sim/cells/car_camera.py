"""The simulated car's forward camera, as its own process like a real camera driver: a
``StateCameraNode`` (``sim/cells/state_camera.py``) rendering the car's model at the states of
``/sim/car/state``.

    robot-rl-car-sim-cell --ros-args -r __ns:=/front_cam -p part:=camera
"""

from __future__ import annotations

from robot_rl.ros.node_base import main_for
from robot_rl.sim.cells.configs import CarCameraConfig
from robot_rl.sim.cells.state_camera import StateCameraNode
from robot_rl.sim.cells.topics import CAR_STATE_TOPIC


class CarCameraNode(StateCameraNode):
    node_name = "car_camera"
    config_class = CarCameraConfig
    state_topic = CAR_STATE_TOPIC
    hardware = "car-sim"
    camera_missing = "is not in the car's model"
    model_has = "the car's model has {nq}"

    def build_model(self):
        from robot_rl.sim.car_twin import car_twin_model

        return car_twin_model(None)


main = main_for(CarCameraNode)  # the console script is car_cell's (part:=...)
