"""What the agent's jitted functions treat as static: its modules and the observation layout."""

from __future__ import annotations

from dataclasses import dataclass

import flax.linen as nn
import gymnasium as gym
import numpy as np

from robot_rl.agents.networks import (
    Actor,
    CriticEnsemble,
    GripperCritic,
    ObservationEncoder,
    Temperature,
)

STAY = 1  # index of the 'stay' gripper command


def split_observation_keys(space: gym.spaces.Dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Cameras are uint8 boxes of rank 3 (H, W, C); everything else is state."""
    if not isinstance(space, gym.spaces.Dict):
        raise TypeError(f"observation_space must be a gymnasium Dict space, got {type(space)}")
    image_keys, state_keys = [], []
    for key, sub in sorted(space.spaces.items()):
        if not isinstance(sub, gym.spaces.Box):
            raise TypeError(f"observation {key!r} must be a Box space, got {type(sub).__name__}")
        if sub.dtype == np.uint8 and len(sub.shape) == 3:
            image_keys.append(key)
        else:
            state_keys.append(key)
    return tuple(image_keys), tuple(state_keys)


@dataclass(frozen=True, eq=False)
class Networks:
    """The agent's modules and static shapes (compared by identity under jit)."""

    encoder: ObservationEncoder
    ensemble: CriticEnsemble
    target_subset: CriticEnsemble
    actor: Actor
    temperature: Temperature
    gripper: GripperCritic | None
    frozen_trunk: nn.Module | None
    image_keys: tuple[str, ...]
    state_keys: tuple[str, ...]
    observation_ndims: tuple[tuple[str, int], ...]
    arm_dim: int
    target_entropy: float
