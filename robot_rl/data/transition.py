"""One step of experience, in the one shape it keeps from the env to the replay
(docs/ARCHITECTURE.md, "The transition's walk")."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Transition(NamedTuple):
    obs: dict[str, np.ndarray]
    action: np.ndarray
    """The action that was applied (after safety clipping, or the operator's), not the proposal."""
    reward: float
    terminated: bool
    """The task ended for real: no bootstrapping from ``next_obs``."""
    truncated: bool
    """The episode was cut (time limit, operator reset, stale reading): bootstrap."""
    next_obs: dict[str, np.ndarray]
    intervened: bool = False
    """An operator's action replaced the policy's (HIL-SERL: it also counts as a demo)."""

    def replay_args(self) -> tuple:
        """The positional arguments of ``ReplayBuffer.add``."""
        return self.obs, self.action, self.reward, self.terminated, self.truncated, self.next_obs


def applied_action(info: dict, proposed: np.ndarray) -> np.ndarray:
    """The action the robot actually executed (after safety clipping), else the proposal."""
    return np.asarray(info.get("applied_action", proposed), np.float32)


def from_step(obs: dict, action: np.ndarray, step: tuple) -> Transition:
    """The transition of one ``env.step(action)`` taken from ``obs``, whose result is ``step``."""
    next_obs, reward, terminated, truncated, info = step
    return Transition(
        obs,
        applied_action(info, action),
        reward,
        terminated,
        truncated,
        next_obs,
        bool(info.get("intervened", False)),
    )
