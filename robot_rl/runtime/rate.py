"""Holding a control rate: deadline scheduling that neither drifts nor bursts to catch up."""

from __future__ import annotations

import time
from collections import deque

import numpy as np


class Rate:
    """``sleep()`` returns at the next tick of ``hz`` (None: at once) and records periods."""

    def __init__(self, hz: float | None, history: int = 2000):
        if hz is not None and hz <= 0:
            raise ValueError(f"rate must be > 0 Hz, got {hz}")
        self.period = 1.0 / hz if hz else 0.0
        self._next = time.perf_counter() + self.period
        self._last = None
        self._periods: deque[float] = deque(maxlen=history)

    def sleep(self) -> None:
        now = time.perf_counter()
        if self.period:
            if now < self._next:
                time.sleep(self._next - now)
                now = time.perf_counter()
            # A late tick starts a new schedule rather than rushing the next ones.
            self._next = max(self._next + self.period, now)
        if self._last is not None:
            self._periods.append(now - self._last)
        self._last = now

    def period_stats(self) -> dict:
        if not self._periods:
            return {"mean_ms": 0.0, "p50_ms": 0.0, "p99_ms": 0.0}
        periods = np.asarray(self._periods) * 1000.0
        return {
            "mean_ms": float(periods.mean()),
            "p50_ms": float(np.percentile(periods, 50)),
            "p99_ms": float(np.percentile(periods, 99)),
        }
