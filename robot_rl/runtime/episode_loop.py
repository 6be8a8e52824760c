"""The one episode loop (acme's EnvironmentLoop): env, policy, sink; what it does and who feeds
which sink: docs/ARCHITECTURE.md, "One loop, one core"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from robot_rl.data.transition import Transition, from_step
from robot_rl.runtime.evaluation import episode_success

EPISODE_SCALARS = {
    "return": "charts/episode_return",
    "length": "charts/episode_length",
    "success": "charts/success",
    "intervention_rate": "robot/intervention_rate",
}
"""An episode's figures under the names runs log them (an actor's arrive by these keys)."""


@dataclass
class EpisodeEnd:
    figures: dict[str, float]
    """``return``, ``length``, ``success`` (at any step: a lap may be done mid-episode) and
    ``intervention_rate`` (the operator's share of the steps)."""
    info: dict
    """The last step's info (the intervention wrapper's metrics, ...)."""


@dataclass
class LoopStep:
    transition: Transition
    info: dict
    ended: EpisodeEnd | None
    """Set on the step that ended an episode."""


class EpisodeLoop:
    def __init__(self, env, sink: Callable[[Transition], None], auto_reset: bool = True):
        self.env, self.sink, self.auto_reset = env, sink, auto_reset
        self.obs: dict | None = None
        self.steps = self.episodes = 0
        self.recent_success: list[float] = []
        self.recent_intervention: list[float] = []
        self._begin_tally()

    def _begin_tally(self) -> None:
        self._return, self._length, self._intervened, self._success = 0.0, 0, 0, False

    def reset(self, **kwargs) -> dict:
        obs, _ = self.env.reset(**kwargs)
        return self.begin(obs)

    def begin(self, obs: dict) -> dict:
        """Start an episode from ``obs`` (a reset's, or a handed-over robot's)."""
        self.obs = obs
        self._begin_tally()
        return obs

    def step(self, policy: Callable[[dict], np.ndarray]) -> LoopStep:
        action = policy(self.obs)
        result = self.env.step(action)
        transition = from_step(self.obs, action, result)
        info = result[4]
        self.sink(transition)  # may refuse it (the actor's value checks): nothing is counted
        self.steps += 1
        self._return += float(transition.reward)
        self._length += 1
        self._intervened += transition.intervened
        self._success = self._success or episode_success(info)
        self.obs = transition.next_obs
        ended = None
        if transition.terminated or transition.truncated:
            ended = self._end_episode(info)
        return LoopStep(transition, info, ended)

    def _end_episode(self, info: dict) -> EpisodeEnd:
        figures = {
            "return": self._return,
            "length": self._length,
            "success": float(self._success),
            "intervention_rate": self._intervened / max(self._length, 1),
        }
        self.episodes += 1
        self.recent_success.append(figures["success"])
        self.recent_intervention.append(figures["intervention_rate"])
        if self.auto_reset:
            self.reset()
        else:
            self._begin_tally()
        return EpisodeEnd(figures, info)

    def recent_success_rate(self, last: int = 20) -> float | None:
        recent = self.recent_success[-last:]
        return float(np.mean(recent)) if recent else None

    def recent_intervention_rate(self, last: int = 20) -> float | None:
        recent = self.recent_intervention[-last:]
        return float(np.mean(recent)) if recent else None
