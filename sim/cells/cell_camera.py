"""One camera of the simulated FR3 cell, as its own process like a real camera driver (so it can
be killed and respawned): a ``StateCameraNode`` (``sim/cells/state_camera.py``: what it
publishes) rendering the cell's model (``fr3_scene``) offscreen (``MUJOCO_GL=egl``) at the states
of ``/sim/cell/state``.

    robot-rl-fr3-sim-cell --ros-args -r __ns:=/wrist_cam -p part:=camera -p camera:=wrist
"""

from __future__ import annotations

from dataclasses import dataclass

from robot_rl.drivers.config import param
from robot_rl.ros.node_base import ParameterError, main_for
from robot_rl.sim.cells.fr3_cell import STATE_TOPIC, part_field
from robot_rl.sim.cells.state_camera import (
    StateCameraNode,
    frame_id_field,
    rate_field,
    size_field,
)


@dataclass(frozen=True)
class CellCameraConfig:
    part: str = part_field("camera")
    task: str = param("pick_cube", "task whose scene the cell holds")
    camera: str = param("front", "camera of the cell: front or wrist")
    rate: float = rate_field()
    width: int = size_field(64, "width")
    height: int = size_field(64, "height")
    frame_id: str = frame_id_field()


class CellCameraNode(StateCameraNode):
    node_name = "cell_camera"
    config_class = CellCameraConfig
    state_topic = STATE_TOPIC
    hardware = "fr3-sim-cell"
    camera_missing = "is not in the cell"
    model_has = "this cell's model has {nq}: another world?"

    def build_model(self):
        from robot_rl.sim.cells.fr3_scene import cell_model

        try:
            return cell_model(self.config.task)
        except ValueError as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None


CONFIG = CellCameraConfig
NODE = CellCameraNode
main = main_for(CellCameraNode)  # the console script is fr3_cell's (part:=...)
