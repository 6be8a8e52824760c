"""Spaces and random batches for agent tests (a test helper, not a test module)."""

import gymnasium as gym
import numpy as np


def state_space(dim: int = 6) -> gym.spaces.Dict:
    return gym.spaces.Dict({"state": gym.spaces.Box(-np.inf, np.inf, (dim,), np.float32)})


def pixel_space(size: int = 16, cameras=("front", "wrist"), state_dim: int = 3) -> gym.spaces.Dict:
    spaces = {cam: gym.spaces.Box(0, 255, (size, size, 3), np.uint8) for cam in cameras}
    spaces["state"] = gym.spaces.Box(-np.inf, np.inf, (state_dim,), np.float32)
    return gym.spaces.Dict(spaces)


def action_space(dim: int = 2) -> gym.spaces.Box:
    return gym.spaces.Box(-1.0, 1.0, (dim,), np.float32)


def random_observations(space: gym.spaces.Dict, n: int, rng: np.random.Generator) -> dict:
    out = {}
    for key, sub in space.spaces.items():
        if sub.dtype == np.uint8:
            out[key] = rng.integers(0, 256, (n, *sub.shape), dtype=np.uint8)
        else:
            out[key] = rng.normal(size=(n, *sub.shape)).astype(np.float32)
    return out


def random_batch(space, action_dim: int, n: int, seed: int = 0, gripper: bool = False) -> dict:
    rng = np.random.default_rng(seed)
    actions = rng.uniform(-1, 1, (n, action_dim)).astype(np.float32)
    if gripper:
        actions[:, -1] = rng.integers(-1, 2, n)
    return {
        "observations": random_observations(space, n, rng),
        "next_observations": random_observations(space, n, rng),
        "actions": actions,
        "rewards": rng.normal(size=n).astype(np.float32),
        "terminated": (rng.uniform(size=n) < 0.1).astype(np.float32),
        "truncated": (rng.uniform(size=n) < 0.1).astype(np.float32),
    }
