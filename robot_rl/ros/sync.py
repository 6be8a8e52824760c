"""Approximate time synchronisation of the newest sensor messages, with a staleness bound.

Each topic keeps ``window`` seconds of (stamp, reading entries) behind its newest stamp.
``synchronise`` picks, for every topic, the entry closest to the reference time (the slowest
sensor's newest stamp) and refuses, naming the topic, when it has no data, when its newest data
is older than ``max_age``, or when it lags the others by more than ``slop``. ``bounds_for_rates``
gives ``max_age`` and ``slop`` from the sensors' publishing rates. Pure Python and numpy.
"""

from __future__ import annotations

import threading
from collections import deque

import numpy as np

from robot_rl.envs.backend import Reading, StaleReadingError

MIN_MAX_AGE = 0.3
"""Staleness bound (s) for sensors of 10 Hz and faster: three periods of a 10 Hz camera."""
MIN_SLOP = 0.05
"""Sync window (s) for fast sensors: transport and stamping jitter, whatever the rates."""
AGE_PERIODS = 3.0
"""The slowest sensor's newest sample may be this many of its periods old (one period between
samples, the rest for capture, conversion and transport latency)."""
SLOP_PERIODS = 1.0
"""Samples of two sensors may lie this many periods of the slower one apart (half a period
when both publish evenly; the rest is jitter)."""
HISTORY_WINDOW = 1.0
"""Seconds of history a topic keeps by default (more than any bound above for sensors of
3 Hz and faster)."""
MAX_HISTORY = 512
"""Entries a topic keeps at most, whatever its rate (a 500 Hz topic over a second)."""


def bounds_for_rates(rates: list[float] | tuple[float, ...]) -> tuple[float, float]:
    """(max_age, slop) that fit sensors publishing at ``rates`` (Hz): a 10 Hz camera beside a
    100 Hz arm gives (0.3, 0.1); 30 Hz cameras (0.3, 0.05); a 5 Hz camera (0.6, 0.2)."""
    rates = [float(r) for r in rates if r and r > 0]
    if not rates:
        return MIN_MAX_AGE, 0.1
    period = 1.0 / min(rates)
    return max(MIN_MAX_AGE, AGE_PERIODS * period), max(MIN_SLOP, SLOP_PERIODS * period)


class TopicHistory:
    """Thread-safe recent history of one topic's converted messages (newest last): the entries
    of the last ``window`` seconds by stamp, at most ``MAX_HISTORY``."""

    def __init__(self, topic: str, window: float = HISTORY_WINDOW):
        self.topic = topic
        self.window = float(window)
        self._entries: deque[tuple[float, Reading]] = deque(maxlen=MAX_HISTORY)
        self._lock = threading.Lock()

    def add(self, stamp: float, entries: Reading) -> None:
        with self._lock:
            if self._entries and stamp < self._entries[-1][0]:
                self._entries.clear()  # time went backwards (a restarted simulation)
            self._entries.append((stamp, entries))
            oldest = stamp - self.window
            while len(self._entries) > 1 and self._entries[0][0] < oldest:
                self._entries.popleft()

    def newest(self) -> float | None:
        """The newest entry's stamp (None before the first)."""
        with self._lock:
            return self._entries[-1][0] if self._entries else None

    def snapshot(self) -> list[tuple[float, Reading]]:
        with self._lock:
            return list(self._entries)


def synchronise(
    histories: list[TopicHistory],
    now: float,
    max_age: float,
    slop: float,
    stamps: dict[str, float] | None = None,
) -> tuple[Reading, float]:
    """One reading from every topic, all within ``slop`` of each other; returns it and the
    reference stamp, and fills ``stamps`` (when given) with each topic's chosen stamp. Raises
    StaleReadingError naming the first topic at fault."""
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
        if stamps is not None:
            stamps[topic] = stamp
    return reading, reference
