"""gym_hil's PandaPickCube-v0 with its state scaled as LeRobot's HIL-SERL normalises it.

    robot-rl train --backend gym \\
        --env-id robot_rl.sim.gym_hil_env:robot_rl/PandaPickCubeScaled-v0 \\
        --expert robot_rl.sim.experts.gym_hil_pick:PickCubeExpert --demos 20

gym_hil's ``agent_pos`` carries the gripper's command as 0-255 and the joint velocities in rad/s
beside positions of a few tenths: fed raw, the gripper entry swamps the rest of the state in the
networks' first layer (benchmarks/FINDINGS.md, gym_hil). LeRobot normalises the
state from its dataset's statistics before its policy sees it; this env does the same with fixed
scales: the gripper command to [0, 1], the joint velocities divided by 10. The action wrapper
(2.5 cm steps, the grip as 0/1/2) is gym_hil's own; the 1 s pause at each reset is off.
Importing the module registers the id (``module:id``, as gymnasium's ``gym.make`` takes it).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

ENV_ID = "robot_rl/PandaPickCubeScaled-v0"
JOINT_VELOCITIES = slice(7, 14)
"""``agent_pos``: joint positions (7), joint velocities (7), gripper command (1), pinch (3)."""
GRIPPER = 14
VELOCITY_SCALE = 0.1
GRIPPER_SCALE = 1.0 / 255.0


class ScaledState(gym.ObservationWrapper):
    """``agent_pos`` with the gripper command in [0, 1] and the joint velocities / 10."""

    def observation(self, observation):
        state = np.array(observation["agent_pos"], np.float32)
        state[JOINT_VELOCITIES] *= VELOCITY_SCALE
        state[GRIPPER] *= GRIPPER_SCALE
        return {**observation, "agent_pos": state}


def make_scaled_pick_cube(reset_delay_seconds: float = 0.0, **kwargs) -> gym.Env:
    import gym_hil  # noqa: F401  (registers gym_hil/...)

    env = gym.make("gym_hil/PandaPickCube-v0", reset_delay_seconds=reset_delay_seconds, **kwargs)
    return ScaledState(env)


gym.register(ENV_ID, entry_point=make_scaled_pick_cube, max_episode_steps=100)
