"""Pick a 5 cm cube off the table and lift it (SERL/HIL-SERL's first Franka task).

Action (normalised, [-1, 1]^4): TCP position delta xyz (x ``step_size`` m per step) and the
gripper in the last dim (> 0.5 close, < -0.5 open, otherwise keep: the hybrid-gripper agent's
{-1, 0, +1}). The tool stays pointing down at a fixed heading.

State (float32, 10): ``tcp_pos`` relative to the reset pose (3, in 10 cm), ``tcp_vel`` linear
(3, in 0.2 m/s), ``gripper_pos`` (1, 0 open .. 1 closed), cube position minus TCP position (3,
in 10 cm). The last three are privileged: they exist on the twin only (research, state-only
training); a real-robot run uses cameras and drops them with ``privileged_state=False``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import gymnasium as gym
import numpy as np

from robot_rl.envs.arm_geometry import down_quat, position_step
from robot_rl.envs.backend import Backend, Command, Reading
from robot_rl.envs.task import Task, register_task
from robot_rl.resets.arm_reset import ArmResetPose, reset_arm

TABLE_Z = 0.0
CUBE_HALF = 0.025
POSITION_SCALE = 10.0  # 1 unit = 10 cm
VELOCITY_SCALE = 5.0  # 1 unit = 0.2 m/s, the largest commanded speed
LIFT_HEIGHT = 0.06
"""Success: the cube's bottom at least this far above the table, held by the gripper."""
HOLD_REGION = (0.035, 0.02, 0.03)
""""Held": the cube's centre within these offsets of the TCP (m, per axis of the hand pointing
down at heading 0: along the finger pads' width, along the closing direction, along the tool).
The pads are 2.2 cm wide, so a cube gripped anywhere on its face (centre up to 3.6 cm along the
pads) is held; across the closing direction it is centred by both pads pressing on it."""
HOLD_GRIP = (0.05, 0.9)
""""Held": fingers stopped part-way (``gripper_pos``, 0 open .. 1 closed): on a face-on cube
about 0.35, on one turned in the hand about 0.15; above 0.9 they closed on nothing."""


@register_task
@dataclass(frozen=True)
class PickCubeTask(Task):
    name = "pick_cube"
    robot = "arm"
    reward_needs_twin = True  # scoring reads object poses: a robot uses a reward classifier
    scene = "cube"
    twin_objects = ("cube",)
    teleop_axes = ("linear.x", "linear.y", "linear.z", "gripper")
    recipe = MappingProxyType({"total_steps": 20_000, "demos": 20, "start_steps": 500})
    backward_task = "put_down_cube"

    max_episode_steps: int = 100
    step_size: float = 0.02
    """Largest TCP move per step (m); 0.2 m/s at 10 Hz."""
    privileged_state: bool = True
    """Append the cube's position relative to the TCP (twin only)."""
    safety_low: tuple[float, float, float] = (0.3, -0.25, 0.015)
    safety_high: tuple[float, float, float] = (0.7, 0.25, 0.3)
    """The box of allowed TCP positions (m, robot base frame)."""
    reset_pos: tuple[float, float, float] = (0.5, 0.0, 0.15)
    reset_noise: float = 0.03
    """Uniform TCP offset at reset, per axis (m)."""
    cube_region: float = 0.075
    """The cube is placed uniformly within +-this of the reset xy (twin only; m)."""
    clearance_height: float = 0.15
    """The reset lifts the TCP to this height (m) before moving over: a held cube clears the
    table's scene."""
    cube_half: float = CUBE_HALF
    """Half the cube's side (m)."""
    lift_height: float = LIFT_HEIGHT
    hold_region: tuple[float, float, float] = HOLD_REGION
    hold_grip: tuple[float, float] = HOLD_GRIP
    position_scale: float = POSITION_SCALE
    """State units per metre for positions: every entry moves over about [-1, 1]."""
    velocity_scale: float = VELOCITY_SCALE

    def state_space(self) -> gym.spaces.Box:
        size = 10 if self.privileged_state else 7
        return gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)

    def action_space(self) -> gym.spaces.Box:
        return gym.spaces.Box(-1.0, 1.0, (4,), np.float32)

    def observe(self, reading: Reading) -> dict[str, np.ndarray]:
        # Scaled so that every entry moves over about [-1, 1] within the safety box: networks
        # learn poorly from inputs that vary by centimetres around a constant.
        parts = [
            (reading["tcp_pos"] - np.asarray(self.reset_pos)) * self.position_scale,
            reading["tcp_vel"][:3] * self.velocity_scale,
            reading["gripper_pos"],
        ]
        if self.privileged_state:
            parts.append((reading["object/cube_pos"] - reading["tcp_pos"]) * self.position_scale)
        return self.observation(np.concatenate(parts), reading)

    def to_command(self, action: np.ndarray, reading: Reading) -> tuple[Command, np.ndarray]:
        target, applied_xyz = position_step(
            action[:3], reading["tcp_pos"], self.step_size, self.safety_low, self.safety_high
        )
        command: Command = {"tcp_pos": target, "tcp_quat": down_quat(0.0)}
        # a 'keep' sends no gripper entry: the driver holds its last gripper command
        grip = float(action[3])
        if grip > 0.5:
            command["gripper"], applied_grip = np.array([1.0]), 1.0
        elif grip < -0.5:
            command["gripper"], applied_grip = np.array([0.0]), -1.0
        else:
            applied_grip = 0.0
        applied = np.append(applied_xyz, applied_grip).astype(np.float32)
        return command, applied

    # Rewards read the twin's privileged cube pose; on the real robot ``reward_type='sparse'``
    # and a learned reward classifier (robot_rl.rewards) replaces success().
    def _cube(self, reading: Reading) -> tuple[np.ndarray, float, bool]:
        cube = reading["object/cube_pos"]
        offset = np.abs(cube - reading["tcp_pos"])
        grip = float(reading["gripper_pos"][0])
        # the cube between the pads and the fingers stopped on it; a centred grasp is not asked
        # for: an operator (or a reward classifier) sees a cube gripped off-centre as held too
        low, high = self.hold_grip
        grasped = bool(np.all(offset <= self.hold_region)) and low < grip < high
        return cube, float(np.linalg.norm(offset)), grasped

    def dense_reward(self, reading: Reading) -> float:
        cube, dist, grasped = self._cube(reading)
        reach = 1.0 - np.tanh(10.0 * dist)
        lift = np.clip((cube[2] - self.cube_half - TABLE_Z) / self.lift_height, 0.0, 1.0)
        return float(0.25 * reach + 0.25 * grasped + 0.5 * lift * grasped)

    def success(self, reading: Reading) -> bool:
        cube, _, grasped = self._cube(reading)
        return bool(grasped and cube[2] - self.cube_half - TABLE_Z >= self.lift_height)

    def success_possible(self, reading: Reading) -> bool:
        # from the arm alone: the fingers stopped on something, high enough that what they hold
        # is lifted (a held cube's centre is within HOLD_REGION of the TCP along the tool)
        grip = float(reading["gripper_pos"][0])
        lifted = TABLE_Z + self.cube_half + self.lift_height - self.hold_region[2]
        low, high = self.hold_grip
        return bool(low < grip < high and reading["tcp_pos"][2] >= lifted)

    def failure(self, reading: Reading) -> bool:
        # knocked off the table; the real robot has no cube reading and relies on the operator
        if "object/cube_pos" not in reading:
            return False
        return bool(reading["object/cube_pos"][2] < TABLE_Z - 0.02)

    def info(self, reading: Reading) -> dict:
        if "object/cube_pos" not in reading:
            return {}
        return {"cube_height": float(reading["object/cube_pos"][2] - self.cube_half)}

    def reset_pose(self) -> ArmResetPose:
        return ArmResetPose(
            pos=self.reset_pos,
            noise=(self.reset_noise,) * 3,
            gripper=0.0,
            clearance=self.clearance_height,
        )

    def random_cube_pose(self, rng: np.random.Generator, above: float = 0.0):
        """Where the twin's reset (or a person tidying up a cell) puts the cube: uniformly around
        the reset position, turned by a small random yaw, ``above`` the table (m)."""
        xy = np.asarray(self.reset_pos[:2]) + rng.uniform(-1, 1, 2) * self.cube_region
        yaw = rng.uniform(-0.25, 0.25)
        quat = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
        return np.array([*xy, TABLE_Z + self.cube_half + above]), quat

    def reset(self, backend: Backend, rng: np.random.Generator) -> None:
        reset_arm(backend, self.reset_pose(), rng)
        if backend.is_simulated:
            backend.place_object("cube", *self.random_cube_pose(rng))
