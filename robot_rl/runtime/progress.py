"""How far a long job is, and the bookkeeping of the outer loops (train, forward-backward,
actor, learner). ``JobProgress``: on a terminal a rich progress bar below the job's own lines;
anywhere else (a log file, CI, a pipe) one whole line per update with an ETA, at most one every
``min_interval`` seconds and always at the end. ``Every``: when a progress line, an evaluation or
a checkpoint is due; ``PerSecond``: a count's rate since the last line; ``on_stop``: on Ctrl-C or
SIGTERM the final save and its one line. What is logged, evaluated and saved stays with each loop.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console

from robot_rl.runtime import stopping


def format_seconds(seconds: float | None) -> str:
    """'1h02m', '4m05s', '12s'; '?' when unknown."""
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return "?"
    seconds = round(max(seconds, 0.0))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class JobProgress:
    """``with JobProgress("train", total, console=console) as progress: progress.update(done)``.

    ``start``: where a resumed job begins (its rate counts only this run's work); ``lines``:
    False where the job prints its own progress lines (with ``eta()``) off a terminal."""

    def __init__(
        self,
        what: str,
        total: int,
        *,
        unit: str = "steps",
        console: Console | None = None,
        start: int = 0,
        min_interval: float = 10.0,
        lines: bool = True,
        clock=time.monotonic,
    ):
        self.what, self.total, self.unit = what, max(int(total), 0), unit
        self.console = console or Console(soft_wrap=True, stderr=False)
        self.start, self.done = start, start
        self.lines = lines
        self._clock = clock
        self._started = clock()
        self._line_due = Every(min_interval, -math.inf, grid=False)  # the first line at once
        self._bar = None
        if self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(unit),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[note]}"),
                console=self.console,
                transient=True,
            )
            self._task = self._bar.add_task(what, total=self.total, completed=start, note="")
            self._bar.start()

    def rate(self) -> float | None:
        """Units per second in this run so far (None before any)."""
        elapsed = self._clock() - self._started
        work = self.done - self.start
        return work / elapsed if work > 0 and elapsed > 0 else None

    def eta(self) -> float | None:
        """Seconds left at this run's rate (None before any work)."""
        rate = self.rate()
        return (self.total - self.done) / rate if rate else None

    def line(self, note: str = "") -> str:
        percent = f"{self.done / self.total:.0%}" if self.total else "?"
        rate = self.rate()
        speed = f"{rate:.3g} {self.unit}/s" if rate else f"- {self.unit}/s"
        text = (
            f"{self.what} {self.done}/{self.total} {self.unit} ({percent}) | {speed} | "
            f"ETA {format_seconds(self.eta())}"
        )
        return f"{text} | {note}" if note else text

    def update(self, done: int, note: str = "") -> None:
        """The job has done ``done`` units of ``total``."""
        self.done = min(int(done), self.total) if self.total else int(done)
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, note=note)
            return
        if not self.lines:
            return
        if self._line_due.due(self._clock()) or self.done >= self.total:
            print(self.line(note), file=self.console.file, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> JobProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def stderr_console() -> Console:
    """A console for progress of a job whose stdout is its result (JSON and the like)."""
    return Console(soft_wrap=True, file=sys.stderr)


class Every:
    """``due(now)``: True once per ``interval`` of a count that only grows: at its multiples
    after ``start`` (env steps: a resumed run keeps them), or with ``grid=False`` (seconds)
    ``interval`` after ``start``, then after each time it was due."""

    def __init__(self, interval: float, start: float = 0, *, grid: bool = True):
        self.interval = interval
        self.next = (start // interval + 1) * interval if grid else start + interval

    def due(self, now: float) -> bool:
        if now < self.next:
            return False
        self.next = now + self.interval
        return True


class PerSecond:
    """A count's rate per second of ``clock`` since the previous call (or since made)."""

    def __init__(self, count: float = 0, clock: Callable[[], float] = time.monotonic):
        self._clock, self._count, self._since = clock, count, clock()

    def __call__(self, count: float) -> float:
        now = self._clock()
        rate = (count - self._count) / max(now - self._since, 1e-9)
        self._count, self._since = count, now
        return rate


@contextmanager
def on_stop(final: Callable[[], object]) -> Iterator[None]:
    """On Ctrl-C or SIGTERM (``robot_rl.runtime.stopping``) inside: ``final()`` (what the run
    keeps, and its one line), then the interrupt goes on."""
    try:
        yield
    except KeyboardInterrupt:
        stopping.acknowledge()
        final()
        raise
