"""Pick a 2.5 cm cube and lift it, with the SO-101: pick_cube at the arm's scale.

The same task as ``pick_cube`` (its observation, action, scoring and reset), with the SO-101's
reach, cube and jaw: the workspace in front of the arm's base, steps of 1 cm, a lift of 3 cm,
the state's units scaled to that workspace,
and "held" as this arm holds (the jaws close along the tool's x, which at heading 0 is the
world's x; the jaw's reading of a gripped 2.5 cm cube is about 0.3, 1 when closed on nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from robot_rl.envs.task import register_task
from robot_rl.tasks.pick_cube import PickCubeTask


@register_task
@dataclass(frozen=True)
class So101PickCubeTask(PickCubeTask):
    name = "so101_pick_cube"
    robot = "so101"
    scene = None  # the SO-101's twin has one scene of its own (sim/so101_twin: table and cube)
    backward_task = None
    recipe = MappingProxyType({"total_steps": 20_000, "demos": 20, "start_steps": 500})

    step_size: float = 0.01
    safety_low: tuple[float, float, float] = (0.12, -0.12, 0.01)
    safety_high: tuple[float, float, float] = (0.28, 0.12, 0.14)
    reset_pos: tuple[float, float, float] = (0.2, 0.0, 0.07)
    reset_noise: float = 0.015
    cube_region: float = 0.04
    clearance_height: float = 0.07
    cube_half: float = 0.0125
    lift_height: float = 0.03
    hold_region: tuple[float, float, float] = (0.012, 0.015, 0.015)
    hold_grip: tuple[float, float] = (0.1, 0.85)
    position_scale: float = 25.0  # 1 unit = 4 cm: the workspace is about 16 cm across
    velocity_scale: float = 10.0  # 1 unit = 0.1 m/s, its largest commanded speed
