"""Spaces and random batches for agent tests (a test helper, not a test module)."""

import gymnasium as gym
import numpy as np

from robot_rl.agents.random_batches import random_batch, random_observations

__all__ = ["action_space", "pixel_space", "random_batch", "random_observations", "state_space"]


def state_space(dim: int = 6) -> gym.spaces.Dict:
    return gym.spaces.Dict({"state": gym.spaces.Box(-np.inf, np.inf, (dim,), np.float32)})


def pixel_space(size: int = 16, cameras=("front", "wrist"), state_dim: int = 3) -> gym.spaces.Dict:
    spaces = {cam: gym.spaces.Box(0, 255, (size, size, 3), np.uint8) for cam in cameras}
    spaces["state"] = gym.spaces.Box(-np.inf, np.inf, (state_dim,), np.float32)
    return gym.spaces.Dict(spaces)


def action_space(dim: int = 2) -> gym.spaces.Box:
    return gym.spaces.Box(-1.0, 1.0, (dim,), np.float32)
