"""Adapt a plain gymnasium environment to the agent's conventions.

The agent reads dict observations and acts in [-1, 1]; many gymnasium environments have a flat
Box observation and their own action bounds. This wrapper is for benchmarks and learning tests
on standard environments; robot tasks define their observation dict and action scaling
themselves.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class DictObservationAdapter(gym.Wrapper):
    """Box observation -> ``{"state": obs}``; agent actions in [-1, 1] -> the env's bounds."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        if not isinstance(env.observation_space, gym.spaces.Box):
            raise TypeError(f"expected a Box observation space, got {env.observation_space}")
        space = env.action_space
        if not isinstance(space, gym.spaces.Box) or not np.all(np.isfinite(space.low)):
            raise TypeError(f"expected a bounded Box action space, got {space}")
        self._low = space.low.astype(np.float64)
        self._high = space.high.astype(np.float64)
        self.observation_space = gym.spaces.Dict(
            {"state": gym.spaces.Box(-np.inf, np.inf, env.observation_space.shape, np.float32)}
        )
        self.action_space = gym.spaces.Box(-1.0, 1.0, space.shape, np.float32)

    def _wrap(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        return {"state": np.asarray(obs, np.float32)}

    def reset(self, *, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        return self._wrap(obs), info

    def step(self, action):
        action = np.clip(np.asarray(action, np.float64), -1.0, 1.0)
        scaled = self._low + (action + 1.0) * 0.5 * (self._high - self._low)
        obs, reward, terminated, truncated, info = self.env.step(scaled.astype(np.float32))
        return self._wrap(obs), float(reward), terminated, truncated, info


def make_gym_env(env_id: str, seed: int | None = None) -> gym.Env:
    try:
        env = gym.make(env_id)
    except gym.error.Error as err:
        raise ValueError(f"cannot make gymnasium environment {env_id!r}: {err}") from err
    env = DictObservationAdapter(env)
    if seed is not None:
        env.action_space.seed(seed)
    return env
