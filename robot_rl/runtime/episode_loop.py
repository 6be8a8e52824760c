"""The one episode loop (acme's EnvironmentLoop): env, policy, sink; what it does and who feeds
which sink: docs/ARCHITECTURE.md, "One loop, one core".

A step awaiting a labeller's answer (``info[PENDING_LABEL]``, robot_rl.rewards.wrapper) ends its
episode and the loop goes on at once, but that one transition is held back from the sink until
answered: a yes goes as it is, a no (or no answer in time) with reward 0 and truncated instead of
terminated (``info[IF_REJECTED]``). It reaches the sink after the next episode's first steps; the
episode's figures wait too (``LoopStep.settled``). Held transitions live in memory only:
``flush_pending`` (a run's end, Ctrl-C, an error) hands them on as rejects; a killed process
loses them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

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

PENDING_LABEL = "pending_label"
"""``info`` key: the step's reward awaits an answer (an object with ``answer() -> bool | None``,
None while open, and ``give_up() -> bool``; ``robot_rl.rewards.relabel.PendingLabel``)."""
IF_REJECTED = "if_rejected"
"""``info`` key beside ``PENDING_LABEL``: ``{"terminated": ..., "success": ...}``, the step
without the classifier's success (a real failure still terminates; a twin's ground truth)."""


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
    """Set on the step that ended an episode (its figures tentative while its last step's
    answer is open)."""
    settled: list[EpisodeEnd] = field(default_factory=list)
    """The episodes whose figures are final since the last step: this step's ended one unless
    its answer is open, and those whose answer came (with the answer in their figures)."""


@dataclass
class _Held:
    """A transition held back from the sink until its answer comes."""

    transition: Transition
    pending: object
    end: EpisodeEnd
    if_rejected: dict
    success_before: bool
    """Whether the episode had succeeded before its last step."""


class EpisodeLoop:
    def __init__(
        self,
        env,
        sink: Callable[[Transition], None],
        auto_reset: bool = True,
        reset: Callable[..., tuple] | None = None,
    ):
        """``reset``: how the env is reset (default ``env.reset``; the actor's retries a reset
        the robot refused, robot_rl.resets.retry)."""
        self.env, self.sink, self.auto_reset = env, sink, auto_reset
        self._reset = reset or env.reset
        self.obs: dict | None = None
        self.steps = self.episodes = 0
        self.recent_success: list[float] = []
        self.recent_intervention: list[float] = []
        self.recent_unaided: list[float] = []
        self._held: list[_Held] = []
        self._begin_tally()

    def _begin_tally(self) -> None:
        self._return, self._length, self._intervened, self._success = 0.0, 0, 0, False

    @property
    def held(self) -> int:
        """Transitions held back until their answer comes."""
        return len(self._held)

    def reset(self, **kwargs) -> dict:
        obs, _ = self._reset(**kwargs)
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
        pending = info.get(PENDING_LABEL)
        if pending is None:
            self.sink(transition)  # may refuse it (the actor's value checks): nothing counted
        self.steps += 1
        self._return += float(transition.reward)
        self._length += 1
        self._intervened += transition.intervened
        success_before = self._success
        self._success = self._success or episode_success(info)
        self.obs = transition.next_obs
        ended, settled = None, []
        if pending is not None and not transition.terminated:
            raise RuntimeError("a step awaiting its answer must end its episode (terminated)")
        if transition.terminated or transition.truncated:
            ended = self._end_episode(info, final=pending is None)
            if pending is None:
                settled.append(ended)
            else:  # held before the reset: a reset that fails still flushes it
                self._held.append(
                    _Held(transition, pending, ended, dict(info[IF_REJECTED]), success_before)
                )
            self._next_episode()
        settled.extend(self.settle())
        return LoopStep(transition, info, ended, settled)

    def settle(self) -> list[EpisodeEnd]:
        """Hands the held transitions whose answer came to the sink; their episodes' figures,
        now final. Never waits."""
        return self._release(lambda held: held.pending.answer())

    def flush_pending(self, timeout: float = 0.0, poll: float = 0.05) -> list[EpisodeEnd]:
        """At the end of a run: waits up to ``timeout`` s for the open answers, then hands
        every held transition to the sink, an unanswered one as a reject."""
        settled = self.settle()
        deadline = time.monotonic() + timeout
        while self._held and time.monotonic() < deadline:
            time.sleep(poll)
            settled.extend(self.settle())
        return settled + self._release(lambda held: held.pending.give_up())

    def _release(self, verdict_of: Callable[[_Held], bool | None]) -> list[EpisodeEnd]:
        settled = []
        for held in list(self._held):
            verdict = verdict_of(held)
            if verdict is None:
                continue
            self._held.remove(held)
            transition, figures = held.transition, dict(held.end.figures)
            if not verdict:  # a no: the step without the classifier's success
                terminated = held.if_rejected["terminated"]
                transition = transition._replace(
                    reward=0.0, terminated=terminated, truncated=not terminated
                )
                figures["return"] -= float(held.transition.reward)
                figures["success"] = float(held.success_before or held.if_rejected["success"])
            self.sink(transition)
            self._record(figures)
            settled.append(EpisodeEnd(figures, {**held.end.info, "label_confirmed": verdict}))
        return settled

    def _end_episode(self, info: dict, final: bool = True) -> EpisodeEnd:
        figures = {
            "return": self._return,
            "length": self._length,
            "success": float(self._success),
            "intervention_rate": self._intervened / max(self._length, 1),
        }
        self.episodes += 1
        if final:
            self._record(figures)
        return EpisodeEnd(figures, info)

    def _next_episode(self) -> None:
        if self.auto_reset:
            self.reset()
        else:
            self._begin_tally()

    def _record(self, figures: dict) -> None:
        self.recent_success.append(figures["success"])
        self.recent_intervention.append(figures["intervention_rate"])
        # unaided: a success in which the operator never took over (the policy's own)
        self.recent_unaided.append(float(figures["success"] and not figures["intervention_rate"]))

    def recent_success_rate(self, last: int = 20) -> float | None:
        recent = self.recent_success[-last:]
        return float(np.mean(recent)) if recent else None

    def recent_unaided_rate(self, last: int = 20) -> float | None:
        """The share of the last episodes that succeeded with no operator step in them."""
        recent = self.recent_unaided[-last:]
        return float(np.mean(recent)) if recent else None

    def recent_intervention_rate(self, last: int = 20) -> float | None:
        recent = self.recent_intervention[-last:]
        return float(np.mean(recent)) if recent else None
