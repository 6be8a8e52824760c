"""Holding a control rate: deadline scheduling that neither drifts nor bursts to catch up.
What the periods came to is ``loop_timing.ControlLoopTiming``'s to record."""

from __future__ import annotations

import time


class Rate:
    """``sleep()`` returns at the next tick of ``hz`` (None: at once)."""

    def __init__(self, hz: float | None):
        if hz is not None and hz <= 0:
            raise ValueError(f"rate must be > 0 Hz, got {hz}")
        self.period = 1.0 / hz if hz else 0.0
        self._next = time.perf_counter() + self.period

    def sleep(self) -> None:
        if not self.period:
            return
        now = time.perf_counter()
        if now < self._next:
            time.sleep(self._next - now)
            now = time.perf_counter()
        # A late tick starts a new schedule rather than rushing the next ones.
        self._next = max(self._next + self.period, now)
