"""What an operator's device gives: events, ``"success"`` or ``"reject"``, queued in arrival
order. The devices (the keyboard in ``rewards/operator.py``, ``/teleop/joy`` buttons in
``ros/operator_buttons.py``) build on ``OperatorInput``; it lives here, below both, so that
neither imports the other for it."""

from __future__ import annotations

import threading
import time
from collections import deque

SUCCESS, REJECT = "success", "reject"


class OperatorInput:
    """Events from the operator's device, queued in arrival order (thread-safe)."""

    name = "operator"

    def __init__(self) -> None:
        self._events: deque[str] = deque()
        self._ready = threading.Condition()

    def push(self, event: str) -> None:
        with self._ready:
            self._events.append(event)
            self._ready.notify_all()

    def poll(self) -> list[str]:
        """The events since the last poll (never waits)."""
        with self._ready:
            events = list(self._events)
            self._events.clear()
        return events

    def pending(self) -> int:
        """How many events wait to be read."""
        with self._ready:
            return len(self._events)

    def wait(self, timeout: float) -> str | None:
        """The first queued event, waiting up to ``timeout`` s for one; None if none came."""
        deadline = time.monotonic() + timeout
        with self._ready:
            while not self._events:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._ready.wait(left)
            return self._events.popleft()

    def describe(self, event: str) -> str:
        """How the operator says ``event`` on this device ("key 'y'")."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the device."""
