"""Insert a square peg, held in the gripper, into a hole in a board (SERL's peg insertion).

Action (normalised, [-1, 1]^4): TCP position delta xyz (x ``step_size`` m) and yaw delta
(x ``yaw_step`` rad). No gripper dim: the gripper stays closed on the peg.

State (float32, 14): ``tcp_pos`` (3, m), ``tcp_vel`` linear (3, m/s), TCP yaw (1, rad),
``wrench`` force / 10 N (3, tool frame), hole centre minus peg tip (3, m, world), hole yaw minus
TCP yaw wrapped to the square's quarter turn (1, rad). The last four are privileged (twin only;
a real-robot run uses cameras and ``privileged_state=False``). ``gripper_pos`` is left out: it is
constant by design here (closed on the peg), and a constant input teaches nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import gymnasium as gym
import numpy as np

from robot_rl.envs.arm_geometry import down_quat, position_step, wrap, yaw_of
from robot_rl.envs.backend import Backend, Command, Reading
from robot_rl.envs.task import Task, register_task
from robot_rl.resets.arm_reset import (
    ArmResetPose,
    GraspSpec,
    lift_clear,
    move_to_reset_pose,
    regrasp,
)

PEG_TIP_BELOW_TCP = 0.045
"""The peg's tip sits this far below the TCP (the gripper holds it by its upper half)."""
BOARD_TOP = 0.04
"""Height of the board's top surface above the table (the hole is this deep)."""
SUCCESS_DEPTH = 0.015
"""Success: the peg tip at least this far below the board's top, inside the hole."""
SQUARE = np.pi / 2
"""A square peg fits the hole every quarter turn."""


@register_task
@dataclass(frozen=True)
class PegInsertTask(Task):
    name = "peg_insert"
    robot = "arm"
    reward_needs_twin = True  # scoring reads object poses: a robot uses a reward classifier
    scene = "peg_and_board"
    twin_objects = ("board", "peg", "hole")
    teleop_axes = ("linear.x", "linear.y", "linear.z", "angular.z")
    recipe = MappingProxyType({"total_steps": 30_000, "demos": 20, "start_steps": 500})

    max_episode_steps: int = 100
    step_size: float = 0.015
    """Largest TCP move per step (m)."""
    yaw_step: float = 0.1
    """Largest TCP turn per step (rad)."""
    privileged_state: bool = True
    """Append the hole's pose relative to the peg (twin only)."""
    safety_low: tuple[float, float, float] = (0.38, -0.12, 0.04)
    safety_high: tuple[float, float, float] = (0.62, 0.12, 0.2)
    """The box of allowed TCP positions (m): low z lets the tip reach the hole's bottom."""
    yaw_limit: float = 0.6
    """Allowed TCP yaw (rad either side of the reset heading)."""
    reset_pos: tuple[float, float, float] = (0.5, 0.0, BOARD_TOP + PEG_TIP_BELOW_TCP + 0.05)
    reset_noise: float = 0.02
    """Uniform TCP offset at reset, per axis (m); the yaw gets 5x this in rad."""
    board_noise: float = 0.03
    """The board is placed uniformly within +-this of the reset xy (twin only; m)."""
    board_yaw_noise: float = 0.2
    """... and turned uniformly within +-this (rad)."""
    clearance_height: float = 0.14
    """The reset lifts the TCP to this height (m) first: the peg comes out of the hole and its
    tip clears the board before the arm moves over."""
    peg_holder_pos: tuple[float, float, float] = (0.45, -0.2, 0.08)
    """A robot without the peg in its hand grasps it here, standing in its holder (TCP position,
    m; set per setup). The twin's hand holds the peg rigidly and never loses it."""
    peg_holding_range: tuple[float, float] = (0.45, 0.85)
    """Gripper readings that mean the fingers stopped on the 30 mm peg (not on nothing)."""

    def state_space(self) -> gym.spaces.Box:
        size = 14 if self.privileged_state else 10
        return gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)

    def action_space(self) -> gym.spaces.Box:
        return gym.spaces.Box(-1.0, 1.0, (4,), np.float32)

    def _relative_hole(self, reading: Reading) -> tuple[np.ndarray, float]:
        offset = reading["object/hole_pos"] - reading["object/peg_pos"]
        yaw = wrap(yaw_of(reading["object/hole_quat"]) - yaw_of(reading["tcp_quat"]), SQUARE)
        return offset, yaw

    def observe(self, reading: Reading) -> dict[str, np.ndarray]:
        # Scaled so that entries move over about [-1, 1]: networks learn poorly from inputs
        # that vary by millimetres around a constant.
        parts = [
            (reading["tcp_pos"] - np.asarray(self.reset_pos)) * 10.0,  # 1 unit = 10 cm
            reading["tcp_vel"][:3] * 5.0,  # 1 unit = 0.2 m/s
            [yaw_of(reading["tcp_quat"])],
            reading["wrench"][:3] / 10.0,
        ]
        if self.privileged_state:
            offset, yaw = self._relative_hole(reading)
            parts += [offset * 20.0, [yaw]]  # 1 unit = 5 cm
        return self.observation(np.concatenate(parts), reading)

    def to_command(self, action: np.ndarray, reading: Reading) -> tuple[Command, np.ndarray]:
        target, applied_xyz = position_step(
            action[:3], reading["tcp_pos"], self.step_size, self.safety_low, self.safety_high
        )
        yaw = yaw_of(reading["tcp_quat"])
        target_yaw = np.clip(
            yaw + np.clip(action[3], -1.0, 1.0) * self.yaw_step, -self.yaw_limit, self.yaw_limit
        )
        applied_yaw = np.clip((target_yaw - yaw) / self.yaw_step, -1.0, 1.0)
        command: Command = {
            "tcp_pos": target,
            "tcp_quat": down_quat(float(target_yaw)),
            "gripper": np.array([1.0]),
        }
        return command, np.append(applied_xyz, applied_yaw).astype(np.float32)

    # Rewards read the twin's privileged hole and peg poses; on the real robot
    # ``reward_type='sparse'`` and a learned reward classifier (robot_rl.rewards) replaces them.
    def _insertion(self, reading: Reading) -> tuple[float, float, float]:
        offset, yaw = self._relative_hole(reading)
        return float(np.linalg.norm(offset[:2])), float(offset[2]), yaw

    def dense_reward(self, reading: Reading) -> float:
        lateral, depth, yaw = self._insertion(reading)
        align = 1.0 - np.tanh(20.0 * lateral)
        turn = 1.0 - np.tanh(5.0 * abs(yaw))
        approach = 1.0 - np.tanh(10.0 * max(-depth, 0.0))
        insert = np.clip(depth / SUCCESS_DEPTH, 0.0, 1.0) if lateral < 0.01 else 0.0
        return float(0.3 * align + 0.1 * turn + 0.1 * approach * align + 0.5 * insert)

    def success(self, reading: Reading) -> bool:
        lateral, depth, _ = self._insertion(reading)
        return bool(lateral < 0.006 and depth >= SUCCESS_DEPTH)

    def info(self, reading: Reading) -> dict:
        if "object/hole_pos" not in reading:
            return {}
        lateral, depth, yaw = self._insertion(reading)
        return {"peg_lateral_error": lateral, "peg_depth": depth, "peg_yaw_error": yaw}

    def reset_pose(self) -> ArmResetPose:
        return ArmResetPose(
            pos=self.reset_pos,
            noise=(self.reset_noise,) * 3,
            gripper=1.0,
            clearance=self.clearance_height,
            yaw_noise=5 * self.reset_noise,
        )

    def grasp_spec(self) -> GraspSpec:
        return GraspSpec(
            pick_pos=self.peg_holder_pos,
            holding_range=self.peg_holding_range,
            clearance=self.clearance_height,
        )

    def reset(self, backend: Backend, rng: np.random.Generator) -> None:
        backend.begin_reset()
        lift_clear(backend, self.clearance_height)
        if backend.is_simulated:
            # the board first, so the peg never starts inside it
            xy = np.asarray(self.reset_pos[:2]) + rng.uniform(-1, 1, 2) * self.board_noise
            yaw = rng.uniform(-1, 1) * self.board_yaw_noise
            quat = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
            backend.place_object("board", np.array([*xy, 0.0]), quat)
        regrasp(backend, self.grasp_spec())
        move_to_reset_pose(backend, self.reset_pose(), rng)
