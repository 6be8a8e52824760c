"""Scripted demonstrations into a demonstration buffer (successful episodes only)."""

from __future__ import annotations

import numpy as np

from robot_rl.data.replay import ReplayBuffer
from robot_rl.runtime.evaluation import episode_success


def applied_action(info: dict, proposed: np.ndarray) -> np.ndarray:
    """The action the robot actually executed (after safety clipping), else the proposal."""
    return np.asarray(info.get("applied_action", proposed), np.float32)


def collect_demos(
    env,
    expert,
    buffer: ReplayBuffer,
    episodes: int,
    seed: int,
    max_attempts: int | None = None,
) -> dict:
    """Run ``expert`` until ``episodes`` successful episodes are stored in ``buffer``.

    Failed attempts are discarded whole: a demonstration buffer holds only successes.
    Returns counts (stored episodes, attempts, transitions).
    """
    max_attempts = max_attempts or 3 * episodes + 10
    rng = np.random.default_rng(seed)
    stored, attempts, transitions = 0, 0, 0
    while stored < episodes:
        if attempts >= max_attempts:
            raise RuntimeError(
                f"the scripted expert succeeded in only {stored} of {attempts} attempts"
            )
        attempts += 1
        obs, info = env.reset(seed=seed + attempts)
        expert.reset(rng)
        episode = []
        success = False
        while True:
            action = np.asarray(expert.act(env.reading), np.float32)
            next_obs, reward, terminated, truncated, info = env.step(action)
            episode.append(
                (obs, applied_action(info, action), reward, terminated, truncated, next_obs)
            )
            success = success or episode_success(info)
            obs = next_obs
            if terminated or truncated:
                break
        if success:
            for transition in episode:
                buffer.add(*transition)
            stored += 1
            transitions += len(episode)
    return {"episodes": stored, "attempts": attempts, "transitions": transitions}
