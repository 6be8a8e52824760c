"""Put a held cube back down: pick_cube's backward task, for forward-backward reset-free training.

SERL trains a forward policy (here pick_cube: grasp the cube and lift it) and a backward policy
that undoes it (here: lower the held cube onto the table inside the start region, let go, move
clear), alternating without resets. The backward task ends where pick_cube starts: cube resting
in the region, gripper open, the hand above it.

Same scene, observation (state of 10, cameras optional), action space and scaling as pick_cube.
Its own reset (the twin's, and a robot's for evaluation) puts the cube on the table inside the
region, grasps it with the scripted re-grasp of ``robot_rl.resets.arm_reset`` and lifts it to a
random height: the states in which pick_cube succeeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robot_rl.envs.backend import Backend, Reading
from robot_rl.envs.task import register_task
from robot_rl.resets.arm_reset import GraspSpec, lift_clear, regrasp
from robot_rl.tasks.pick_cube import CUBE_HALF, LIFT_HEIGHT, TABLE_Z, PickCubeTask

RESTING = 0.005
"""The cube rests on the table when its bottom is within this of it (m): flat on a face, since
a cube tilted onto an edge stands at least 1 cm higher."""
OPEN = 0.1
"""A gripper reading below this counts as open."""


@register_task
@dataclass(frozen=True)
class PutDownCubeTask(PickCubeTask):
    name = "put_down_cube"
    # pick_cube's scene, objects and teleop axes (inherited); not its recipe nor its backward
    # task: this one is the backward task
    recipe = None
    backward_task = None

    max_episode_steps: int = 50
    release_clearance: float = 0.05
    """Success needs the TCP this far above the cube's centre (m): fingertips clear of its top."""
    hold_height: tuple[float, float] = (LIFT_HEIGHT + 0.01, 0.12)
    """The reset lifts the held cube's bottom to a uniform height in this range (m)."""
    cube_holding_range: tuple[float, float] = (0.2, 0.9)
    """Gripper readings that mean the fingers stopped on the 5 cm cube."""
    region_margin: float = 0.015
    """Success accepts the cube this far outside pick_cube's start region (m): a cube grasped
    at the region's edge may slip a few millimetres in the fingers."""

    def _placement(self, reading: Reading) -> tuple[float, bool, bool, float]:
        cube, tcp = reading["object/cube_pos"], reading["tcp_pos"]
        bottom = float(cube[2] - CUBE_HALF - TABLE_Z)
        offset = np.abs(cube[:2] - np.asarray(self.reset_pos[:2]))
        in_region = bool(np.all(offset <= self.cube_region + self.region_margin))
        released = bottom < RESTING and float(reading["gripper_pos"][0]) < OPEN
        clear = float(np.clip((tcp[2] - cube[2]) / self.release_clearance, 0.0, 1.0))
        return bottom, in_region, released, clear

    def dense_reward(self, reading: Reading) -> float:
        # lower the cube, let go of it on the table, move clear; 1 only at success
        bottom, in_region, released, clear = self._placement(reading)
        lowered = 1.0 - np.clip(bottom / (2 * LIFT_HEIGHT), 0.0, 1.0)
        return float(0.3 * lowered + 0.2 * released + 0.3 * released * clear + 0.2 * in_region)

    def success(self, reading: Reading) -> bool:
        _, in_region, released, clear = self._placement(reading)
        return bool(released and in_region and clear >= 1.0)

    def success_possible(self, reading: Reading) -> bool:
        # from the arm alone: the fingers have let go
        return bool(float(reading["gripper_pos"][0]) < OPEN)

    def info(self, reading: Reading) -> dict:
        if "object/cube_pos" not in reading:
            return {}
        bottom, in_region, _, _ = self._placement(reading)
        return {"cube_height": bottom, "cube_in_region": float(in_region)}

    def grasp_spec(self, rng: np.random.Generator) -> GraspSpec:
        """A random spot in the start region to grasp the cube at, and a random lift (the tool
        keeps pick_cube's fixed heading, which its actions hold)."""
        xy = np.asarray(self.reset_pos[:2]) + rng.uniform(-1, 1, 2) * self.cube_region
        lift = float(rng.uniform(*self.hold_height))
        return GraspSpec(
            pick_pos=(float(xy[0]), float(xy[1]), TABLE_Z + CUBE_HALF),
            holding_range=self.cube_holding_range,
            lift_height=lift,
            clearance=self.clearance_height,
            twin_object="cube",
        )

    def reset(self, backend: Backend, rng: np.random.Generator) -> None:
        """On the twin the cube is put at the drawn spot; a robot must hold the cube already or
        find it there (this task is meant to start where pick_cube succeeded)."""
        backend.begin_reset()
        lift_clear(backend, self.clearance_height)
        regrasp(backend, self.grasp_spec(rng))
