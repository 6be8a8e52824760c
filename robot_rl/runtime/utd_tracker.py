"""The learner's account of its update-to-data ratio while the actors play.

The recipe asks for ``utd_ratio`` critic updates per online transition after ``start_steps``.
What counts is the ratio the acting policy was trained at while data came in, not after the
actors stopped (a learner that catches up at the end has trained the played policies less):
so the effective ratio is taken when the last transition arrived, as

    updates done then / (transitions then - start_steps + 1)

(the same count ``allowed_updates`` uses). With a paced actor (the twin) it is the recipe's
within ``max_lag / transitions``; on a real robot, which never waits, the lag says how far the
learner fell behind instead. Pure Python.
"""

from __future__ import annotations


class UtdTracker:
    def __init__(self, utd_ratio: int, start_steps: int):
        self.utd_ratio = utd_ratio
        self.start_steps = max(start_steps, 1)
        self.received = 0
        self.updates_at_arrival = 0
        self.lag_at_arrival = 0
        self.max_lag = 0

    def observe(self, received: int, updates: int, lag: int) -> None:
        """A sample of the learner's counters (a few per second)."""
        self.max_lag = max(self.max_lag, lag)
        if received > self.received:  # data came in: the actors were playing until now
            self.received = received
            self.updates_at_arrival = updates
            self.lag_at_arrival = lag

    def effective_ratio(self) -> float | None:
        """Updates per transition after ``start_steps`` when the newest transition arrived."""
        trained_on = self.received - self.start_steps + 1
        if trained_on <= 0:
            return None
        return self.updates_at_arrival / trained_on

    def text(self) -> str:
        ratio = self.effective_ratio()
        return f"{ratio:.2f}/{self.utd_ratio}" if ratio is not None else f"-/{self.utd_ratio}"

    def summary(self) -> dict:
        ratio = self.effective_ratio()
        return {
            "recipe": self.utd_ratio,
            "effective_while_acting": None if ratio is None else round(ratio, 4),
            "transitions_at_data_end": self.received,
            "updates_at_data_end": self.updates_at_arrival,
            "lag_at_data_end": self.lag_at_arrival,
            "max_lag": self.max_lag,
        }
