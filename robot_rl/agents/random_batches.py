"""Random transitions in the layout ``SACAgent.update`` takes, for timing an update and for the
agent's tests (no environment needed): uint8 images, normal floats for the other entries."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


def random_observations(space: gym.spaces.Dict, n: int, rng: np.random.Generator) -> dict:
    """``n`` random observations of a dict space: uint8 images, normal floats otherwise."""
    out = {}
    for key, sub in space.spaces.items():
        if sub.dtype == np.uint8:
            out[key] = rng.integers(0, 256, (n, *sub.shape), dtype=np.uint8)
        else:
            out[key] = rng.normal(size=(n, *sub.shape)).astype(np.float32)
    return out


def random_batch(space, action_dim: int, n: int, seed: int = 0, gripper: bool = False) -> dict:
    """A batch of ``n`` random transitions; with ``gripper`` the last action entry is a
    discrete gripper command (-1, 0 or 1)."""
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
