"""The simulated cell's operator answers the actor's questions, as a person at a gamepad would.

It reads the question lines on ``/operator/query`` (what a real operator's display shows), looks
at the scene's ground truth (``task.success``) when a question opens, and after a reaction time
(``delay``, uniform) presses reject or success; it never holds the arm. A success it has just
pressed for anyway (``SuccessPress``) already answers, so it presses no second time. A question
that closes first, or that it cannot judge (no fresh reading), stays unanswered: the timeout
counts it as a reject. Pure Python: ``cell_human`` feeds it the lines and the buttons' state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robot_rl.rewards.operator import parse_question
from robot_rl.rewards.operator_input import REJECT, SUCCESS

RECENT_PRESS_S = 1.0
"""A success press this recent (s) when a question opens is taken as its answer already."""


@dataclass
class _Answer:
    number: int
    event: str
    at: float
    opened: float


class QuestionAnswerer:
    def __init__(
        self,
        rng: np.random.Generator,
        delay: tuple[float, float] = (0.5, 2.0),
        press_s: float = 0.3,
    ):
        low, high = delay
        if not 0.0 <= low <= high:
            raise ValueError(f"answer delay must satisfy 0 <= low <= high, got {delay}")
        if not press_s > 0:
            raise ValueError(f"press_s must be > 0, got {press_s}")
        self.rng, self.delay, self.press_s = rng, (float(low), float(high)), float(press_s)
        self._scheduled: dict[int, _Answer] = {}
        self._until = {SUCCESS: -np.inf, REJECT: -np.inf}
        self._success_seen_down = -np.inf
        self.answered = {SUCCESS: 0, REJECT: 0}
        self.unjudged = 0

    def watch_success_button(self, down: bool, now: float) -> None:
        """The success button's state as published (the operator's own success presses)."""
        if down:
            self._success_seen_down = now

    def on_line(self, line: str, done: bool | None, now: float) -> None:
        """A line of ``/operator/query``; ``done``: whether the operator sees the task done
        now (None: it cannot see the scene)."""
        parsed = parse_question(line)
        if parsed is None:
            return
        number, state = parsed
        if state == "closed":
            self._scheduled.pop(number, None)
            return
        if number in self._scheduled:
            return
        if done is None:
            self.unjudged += 1
            return
        if done and now - self._success_seen_down <= RECENT_PRESS_S:
            return  # its own success press, just now, answers it
        wait = float(self.rng.uniform(*self.delay))
        self._scheduled[number] = _Answer(number, SUCCESS if done else REJECT, now + wait, now)

    def update(self, now: float) -> str | None:
        """Presses the answer whose time has come (one at a time); returns its event."""
        if any(now < until for until in self._until.values()):
            return None  # a button is down: one press at a time
        due = [a for a in self._scheduled.values() if a.at <= now]
        if not due:
            return None
        answer = min(due, key=lambda a: a.at)
        del self._scheduled[answer.number]
        if answer.event == SUCCESS and self._success_seen_down >= answer.opened:
            return None  # it pressed success since the question opened: answered
        self._until[answer.event] = now + self.press_s
        self.answered[answer.event] += 1
        return answer.event

    def down(self, event: str, now: float) -> bool:
        """Whether ``event``'s button is held at ``now``."""
        return now < self._until[event]
