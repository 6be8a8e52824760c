"""Deterministic-policy evaluation with a confidence interval on the success rate.

``evaluate`` runs on any env: the twin (success is the task's ground truth) or a robot (success
is what its reward source says: the operator or the classifier, ``robot_rl.rewards``); an
``on_episode`` callback hears each episode's figures as it ends (progress lines, a report that
survives a crash).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import gymnasium as gym
import numpy as np


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a binomial proportion (sane at 0% and 100%)."""
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class EvalResult:
    episodes: int
    return_mean: float
    return_std: float
    success_rate: float
    success_ci_low: float
    success_ci_high: float
    length_mean: float
    failure_rate: float = 0.0
    """Share of episodes that ended in a real failure (terminated without success)."""
    final_info: dict | None = None
    """Means over episodes of the numeric info entries at the last step (e.g. laps)."""

    def as_dict(self) -> dict:
        return asdict(self)


def episode_success(info: dict) -> bool:
    return bool(info.get("success", info.get("is_success", False)))


def evaluate(
    policy: Callable[[dict], np.ndarray],
    env: gym.Env,
    episodes: int,
    seed: int,
    on_frame: Callable[[gym.Env], None] | None = None,
    on_episode: Callable[[dict], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    reset: Callable[..., tuple] | None = None,
) -> EvalResult:
    """Run ``episodes`` episodes of ``policy`` (observation -> action) from seeded resets.
    ``on_episode`` gets each episode's figures (episode, return, length, success, failure,
    seconds) as it ends; ``on_start`` the episode's index once its reset is done; ``reset``
    (``reset(seed=...)``, default ``env.reset``) resets the env (a robot's, retried)."""
    reset = env.reset if reset is None else reset
    returns, lengths, successes, failures = [], [], 0, 0
    finals: dict[str, list[float]] = {}
    for episode in range(episodes):
        started = time.monotonic()
        obs, info = reset(seed=seed + episode)
        if on_start is not None:
            on_start(episode)
        total, length, success = 0.0, 0, False
        while True:
            obs, reward, terminated, truncated, info = env.step(policy(obs))
            if on_frame is not None:
                on_frame(env)
            total += reward
            length += 1
            success = success or episode_success(info)
            if terminated or truncated:
                break
        failed = bool(terminated and not episode_success(info))
        failures += int(failed)
        if on_episode is not None:
            on_episode({
                "episode": episode, "return": float(total), "length": length,
                "success": bool(success), "failure": failed,
                "seconds": time.monotonic() - started,
            })  # fmt: skip
        for key, value in info.items():
            if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
                finals.setdefault(key, []).append(float(value))
        returns.append(total)
        lengths.append(length)
        successes += int(success)
    low, high = wilson_interval(successes, episodes)
    return EvalResult(
        episodes=episodes,
        return_mean=float(np.mean(returns)),
        return_std=float(np.std(returns)),
        success_rate=successes / episodes,
        success_ci_low=low,
        success_ci_high=high,
        length_mean=float(np.mean(lengths)),
        failure_rate=failures / episodes,
        final_info={k: float(np.mean(v)) for k, v in finals.items()} or None,
    )
