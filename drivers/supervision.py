"""One rule for every driver's I/O and control threads (issue 27), in one place:

- ``SupervisedLoop``: a driver's thread runs its work as a ``step`` called over and over. Any
  exception in a step (a parser's ``struct.error``, a bug, a library's surprise) stops the
  actuator at once (``stop``: zero, brake where the device has one), is counted and reported
  (``report``: the driver puts it on /diagnostics as an ERROR), and the work restarts after
  ``restart_delay`` from a clean start (``restart``: a new connection, a new parser). The thread
  itself never dies of an exception, and a failed restart is one more fault, retried.
- ``Watchdog``: the check that stops a motor whose commands ran out, or whose I/O thread hangs,
  runs in a thread of its own, never in the thread it guards: a thread that died or hangs
  cannot run its own watchdog.
- ``SensorGate``: a sensor value that is not finite or lies outside the device's range is
  refused before it reaches any state (odometry, filters, observations), counted and
  described for /diagnostics; the next valid value is used as if the bad one never came.

Pure Python: no ROS 2, no device library (tests drive it with synthesised input).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterable

FAULT_SHOWN_S = 5.0
"""How long after a thread's fault a driver's /diagnostics keeps reporting it as an ERROR (at
least a few diagnostics periods, so a 1 Hz reader cannot miss it)."""


def describe(error: BaseException) -> str:
    """``TypeName: first line of the message``: what a fault report says."""
    kind = type(error)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    text = str(error).strip().splitlines()
    return f"{name}: {text[0]}" if text else name


def _quiet(log: Callable[[str, str], None], level: str, message: str) -> None:
    with contextlib.suppress(Exception):  # logging fails while the process shuts down
        log(level, message)


class FaultLog:
    """The faults of one thread or callback: how many, the last one's report and when. A
    driver whose I/O runs in a ROS timer rather than a thread of its own (the teleop nodes)
    applies the same rule with this alone: stop, ``record``, restart the connection."""

    def __init__(self, name: str):
        self.name = name
        self.faults = 0
        self.last_fault = ""
        self.last_fault_at: float | None = None
        """Monotonic time of the last fault, or None."""

    def record(self, error: BaseException, stopped: str = "actuator stopped") -> str:
        self.faults += 1
        self.last_fault_at = time.monotonic()
        self.last_fault = f"{self.name} failed ({describe(error)}): {stopped}, restarting"
        return self.last_fault

    def recent(self, within: float = FAULT_SHOWN_S) -> str | None:
        """The last fault's report if it came within ``within`` seconds, else None."""
        if self.last_fault_at is not None and time.monotonic() - self.last_fault_at < within:
            return self.last_fault
        return None

    def fields(self) -> dict[str, str]:
        return {"thread_faults": str(self.faults), "last_fault": self.last_fault}


class SupervisedLoop:
    """See the module docstring. ``step`` should return within about a period (it may block on
    a read with a timeout); ``heartbeat`` is when a step last finished, for a ``Watchdog``.

    ``stop()`` and ``report(message)`` run in this thread right after the failing step; both
    are guarded (an exception there is logged, never raised). ``restart()`` runs before the next
    step; if it raises, that is a fault like any other and is tried again after the delay."""

    def __init__(
        self,
        name: str,
        step: Callable[[], None],
        *,
        stop: Callable[[], None],
        restart: Callable[[], None] | None = None,
        report: Callable[[str], None] | None = None,
        log: Callable[[str, str], None] = lambda level, message: None,
        restart_delay: float = 0.2,
    ):
        self.name = name
        self._step = step
        self._stop_actuator = stop
        self._restart = restart
        self._report = report
        self._log = log
        self.restart_delay = restart_delay
        self._running = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.log = FaultLog(f"{name} thread")
        self.restarts = 0
        self.restarting = False
        """True from a fault until the restart succeeded: the actuator must stay stopped."""
        self.heartbeat = time.monotonic()

    def start(self) -> SupervisedLoop:
        self._running.set()
        self.heartbeat = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._running.is_set()

    def close(self, timeout: float = 5.0) -> None:
        self._running.clear()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stalled(self, bound: float) -> bool:
        """No step has finished for ``bound`` seconds while running (a hung read, a dead
        thread): the watchdog of another thread stops the actuator."""
        return self.running and time.monotonic() - self.heartbeat > bound

    @property
    def faults(self) -> int:
        return self.log.faults

    @property
    def last_fault(self) -> str:
        return self.log.last_fault

    def recent_fault(self, within: float = FAULT_SHOWN_S) -> str | None:
        """The last fault's report if it came within ``within`` seconds or the work has not
        restarted since, else None."""
        if self.restarting and self.log.last_fault_at is not None:
            return self.log.last_fault
        return self.log.recent(within)

    def _run(self) -> None:
        while self._running.is_set():
            try:
                if self.restarting:
                    if self._restart is not None:
                        self._restart()
                    self.restarting = False
                    self.restarts += 1
                    _quiet(self._log, "info", f"{self.name}: restarted after the fault")
                self._step()
                self.heartbeat = time.monotonic()
            except Exception as error:
                if not self._running.is_set():
                    return  # closing: a read on a closed port is the ordinary end
                self._fault(error)

    def _fault(self, error: BaseException) -> None:
        self.restarting = True
        message = self.log.record(error)
        try:
            self._stop_actuator()
        except Exception as stop_error:
            message = self.log.last_fault = f"{message}; the stop failed ({describe(stop_error)})"
        _quiet(self._log, "error", message)
        if self._report is not None:
            try:
                self._report(message)
            except Exception as report_error:
                _quiet(self._log, "error", f"{self.name}: report failed: {report_error}")
        self._wake.wait(self.restart_delay)
        self._wake.clear()
        self.heartbeat = time.monotonic()  # the pause is no stall


class Watchdog:
    """A thread that calls ``check()`` every ``period`` seconds until closed; ``check`` looks at
    what it guards (a command's age, a loop's heartbeat) and stops the actuator itself. An
    exception in ``check`` is logged and the next period checks again."""

    def __init__(
        self,
        name: str,
        period: float,
        check: Callable[[], None],
        log: Callable[[str, str], None] = lambda level, message: None,
    ):
        self.name = name
        self.period = period
        self._check = check
        self._log = log
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.checks = 0

    def start(self) -> Watchdog:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self._check()
                self.checks += 1
            except Exception as error:
                _quiet(self._log, "error", f"{self.name}: {describe(error)}")


class SensorGate:
    """Refuses sensor samples that are not finite or lie outside their bounds; counts them.

    ``reason(name, values, bound)`` returns why a sample must not be used (or None); ``admit``
    does the same and counts a refusal. ``bound`` is the largest magnitude the device can
    report (its measuring range): a larger value is a corrupt packet, not a measurement."""

    def __init__(self):
        self.refused = 0
        self.last_refusal = ""
        self.last_refusal_at: float | None = None

    @staticmethod
    def reason(name: str, values: Iterable[float], bound: float = math.inf) -> str | None:
        for value in values:
            value = float(value)
            if not math.isfinite(value):
                return f"{name}: non-finite value {value}"
            if abs(value) > bound:
                return f"{name}: {value:g} beyond the sensor's range (+-{bound:g})"
        return None

    def admit(self, name: str, values: Iterable[float], bound: float = math.inf) -> bool:
        """True if the sample may be used; else it is counted and described."""
        why = self.reason(name, values, bound)
        if why is None:
            return True
        self.refused += 1
        self.last_refusal = why
        self.last_refusal_at = time.monotonic()
        return False

    def fields(self, prefix: str = "") -> dict[str, str]:
        """What /diagnostics shows of the gate."""
        return {
            f"{prefix}refused_samples": str(self.refused),
            f"{prefix}last_sample_refusal": self.last_refusal,
        }
