"""One camera of the simulated FR3 cell, as its own process like a real camera driver (so it can
be killed and respawned): a ``StateCameraNode`` (``sim/cells/state_camera.py``: what it
publishes) rendering the cell's model (``fr3_scene``) offscreen (``MUJOCO_GL=egl``) at the states
of ``/sim/cell/state``.

    robot-rl-fr3-sim-cell --ros-args -r __ns:=/wrist_cam -p part:=camera -p camera:=wrist
"""

from __future__ import annotations

from robot_rl.ros.node_base import ParameterError, main_for
from robot_rl.sim.cells.configs import CellCameraConfig
from robot_rl.sim.cells.fr3_scene import CAMERA_GEOM_GROUPS
from robot_rl.sim.cells.state_camera import StateCameraNode
from robot_rl.sim.cells.topics import FR3_STATE_TOPIC


class CellCameraNode(StateCameraNode):
    node_name = "cell_camera"
    config_class = CellCameraConfig
    state_topic = FR3_STATE_TOPIC
    hardware = "fr3-sim-cell"
    camera_missing = "is not in the cell"
    model_has = "this cell's model has {nq}: another world?"
    geom_groups = CAMERA_GEOM_GROUPS

    def build_model(self):
        from robot_rl.sim.cells.fr3_scene import cell_model

        try:
            return cell_model(self.config.task)
        except ValueError as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None


main = main_for(CellCameraNode)  # the console script is fr3_cell's (part:=...)
