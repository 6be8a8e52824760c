"""The actor's control loop in figures: its period, the policy's inference time and, where the
backend says it, how old the newest camera frame was when the command left (and when the tick
that read it came: the part before the actor's own work).

A step whose episode ended is followed by the reset, which is no control period: the period
from it to the next step is left out. ``summary`` gives milliseconds (p50, p99, max) and the
share of periods over ``LATE`` times the task's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import numpy as np

LATE = 1.1
"""A period longer than this many of the task's periods counts as late."""
HISTORY = 20_000


def milliseconds(values: Iterable[float]) -> dict:
    """Durations in seconds as ``{n, p50, p99, max}`` in milliseconds (``{n: 0}`` when empty)."""
    ms = np.asarray(list(values), np.float64) * 1000.0
    if not ms.size:
        return {"n": 0}
    return {
        "n": int(ms.size),
        "p50": round(float(np.median(ms)), 1),
        "p99": round(float(np.percentile(ms, 99)), 1),
        "max": round(float(ms.max()), 1),
    }


class ControlLoopTiming:
    def __init__(self, control_hz: float):
        self.period = 1.0 / float(control_hz)
        self._periods: deque[float] = deque(maxlen=HISTORY)
        self._inference: deque[float] = deque(maxlen=HISTORY)
        self._last_start: float | None = None

    def step_started(self, now: float) -> None:
        if self._last_start is not None:
            self._periods.append(now - self._last_start)
        self._last_start = now

    def episode_ended(self) -> None:
        """The next step starts after a reset: no period to it."""
        self._last_start = None

    def inferred(self, seconds: float) -> None:
        self._inference.append(seconds)

    def summary(
        self, frame_to_command: Iterable[float] = (), frame_age_at_tick: Iterable[float] = ()
    ) -> dict:
        periods = np.asarray(self._periods, np.float64)
        late = float(np.mean(periods > LATE * self.period)) if periods.size else None
        return {
            "task_period_ms": round(self.period * 1000.0, 1),
            "period_ms": milliseconds(periods),
            "late_share": None if late is None else round(late, 4),
            "inference_ms": milliseconds(self._inference),
            "frame_to_command_ms": milliseconds(frame_to_command),
            "frame_age_at_tick_ms": milliseconds(frame_age_at_tick),
        }


def summary_line(summary: dict) -> str:
    """One line for the terminal: period, late share, newest frame to command, inference."""

    def pair(figures: dict) -> str:
        return "-" if not figures.get("n") else f"p50 {figures['p50']} / p99 {figures['p99']} ms"

    late = summary["late_share"]
    parts = [
        f"period {pair(summary['period_ms'])}"
        + ("" if late is None else f" ({late:.0%} over {LATE:g}x the task's)"),
        f"inference {pair(summary['inference_ms'])}",
    ]
    if summary["frame_to_command_ms"].get("n"):
        parts.insert(1, f"newest frame to command {pair(summary['frame_to_command_ms'])}")
    return "control loop: " + ", ".join(parts)
