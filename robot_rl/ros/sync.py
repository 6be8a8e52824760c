"""Approximate time synchronisation of the newest sensor messages, with a staleness bound.

Each topic keeps a short history of (stamp, reading entries). ``synchronise`` picks, for every
topic, the entry closest to a common reference time (the oldest of the newest stamps, i.e. the
slowest sensor's latest sample) and refuses, naming the topic at fault, when a topic has no
data, when its newest data is older than ``max_age``, or when it lags the others by more than
``slop``. Pure Python and numpy: unit-testable without ROS.
"""

from __future__ import annotations

import threading
from collections import deque

import numpy as np

from robot_rl.envs.backend import Reading, StaleReadingError


class TopicHistory:
    """Thread-safe recent history of one topic's converted messages (newest last)."""

    def __init__(self, topic: str, depth: int = 8):
        self.topic = topic
        self._entries: deque[tuple[float, Reading]] = deque(maxlen=depth)
        self._lock = threading.Lock()

    def add(self, stamp: float, entries: Reading) -> None:
        with self._lock:
            if self._entries and stamp < self._entries[-1][0]:
                self._entries.clear()  # time went backwards (a restarted simulation)
            self._entries.append((stamp, entries))

    def snapshot(self) -> list[tuple[float, Reading]]:
        with self._lock:
            return list(self._entries)


def synchronise(
    histories: list[TopicHistory], now: float, max_age: float, slop: float
) -> tuple[Reading, float]:
    """One reading from every topic, all within ``slop`` of each other; returns it and the
    reference stamp. Raises StaleReadingError naming the first topic at fault."""
    snapshots = {h.topic: h.snapshot() for h in histories}
    for topic, entries in snapshots.items():
        if not entries:
            raise StaleReadingError(f"{topic}: no message received yet")
    newest = {topic: entries[-1][0] for topic, entries in snapshots.items()}
    oldest_topic = min(newest, key=newest.get)
    age = now - newest[oldest_topic]
    if age > max_age:
        raise StaleReadingError(
            f"{oldest_topic}: newest message is {age:.3f} s old (bound {max_age:.3f} s)"
        )
    reference = newest[oldest_topic]
    reading: Reading = {}
    for topic, entries in snapshots.items():
        stamp, entries_at = min(entries, key=lambda entry: abs(entry[0] - reference))
        if abs(stamp - reference) > slop:
            # every other topic has newer data than the reference: the lagging sensor is at fault
            raise StaleReadingError(
                f"{oldest_topic}: newest message ({reference:.3f}) lags {topic} "
                f"({stamp:.3f}) by more than {slop:.3f} s"
            )
        for key, value in entries_at.items():
            reading[key] = np.array(value, copy=True)  # never share buffers with the cache
    return reading, reference
