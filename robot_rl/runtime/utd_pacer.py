"""The actor's side of the update-to-data ratio: on a twin, wait for a learner that falls behind.

When the learner's reported lag (``status``) passes ``max_lag`` the actor stops stepping until
the lag is 0, so the ratio holds within ``max_lag`` transitions. The in-process twin waits
between steps; the twin's ROS 2 nodes (on ``/clock``) wait with the twin node paused through its
``pause`` service; a real robot (wall clock) never waits: it keeps its control rate, the lag is
reported, and asking for pacing there is refused.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

RESUME_LAG = 0
"""Play on once the learner's lag is down to this (caught up)."""
RESUME_WHILE_STOPPING_S = 2.0
"""How long an interrupted wait tries to resume the paused twin before the actor exits."""


class PacingRefused(ValueError):
    """Pacing asked for where the actor must never wait (a real robot)."""


class UtdPacer:
    """Holds the actor while the learner is more than ``max_lag`` transitions behind."""

    def __init__(
        self, max_lag: int, pause: Callable[[bool], object] | None = None, poll: float = 0.005
    ):
        if max_lag < 1:
            raise ValueError(f"max_learner_lag must be >= 1, got {max_lag}")
        self.max_lag = max_lag
        self.pause = pause
        self.poll = poll
        self.waits = 0
        self.waited_seconds = 0.0

    @classmethod
    def for_env(cls, max_lag: int | None, env) -> UtdPacer | None:
        """The pacer for ``env``'s backend, None when ``max_lag`` is None; PacingRefused on a
        real robot."""
        if max_lag is None:
            return None
        backend = getattr(env, "backend", None)
        if backend is None:
            backend = getattr(getattr(env, "unwrapped", None), "backend", None)
        if getattr(backend, "is_simulated", False):
            return cls(max_lag)
        if getattr(backend, "use_sim_time", False) and hasattr(backend, "pause_simulation"):
            return cls(max_lag, pause=backend.pause_simulation)
        raise PacingRefused(
            "--max-learner-lag: a real robot never waits for the learner (it keeps its control "
            "rate; the learner's lag is reported instead); pacing is for the twin"
        )

    def behind(self, client) -> bool:
        """Whether the learner is unreachable or further behind than ``max_lag``."""
        return not client.connected or client.estimated_lag() > self.max_lag

    @staticmethod
    def _stopped(client) -> bool:
        return client.refused_reason is not None or client.data_refused is not None

    def wait(self, client) -> float:
        """Between two steps: when the learner is behind, hold (the twin paused) until it has
        caught up; returns the seconds waited."""
        if self._stopped(client) or not self.behind(client):
            return 0.0
        started = time.monotonic()
        if self.pause is not None:
            self.pause(True)
        caught_up = False
        try:
            while not self._stopped(client) and (
                not client.connected or client.estimated_lag() > RESUME_LAG
            ):
                time.sleep(self.poll)
            caught_up = True
        finally:
            if self.pause is not None:
                if caught_up:
                    self.pause(False)
                else:
                    self._resume_while_stopping()
        waited = time.monotonic() - started
        self.waits += 1
        self.waited_seconds += waited
        return waited

    def _resume_while_stopping(self) -> None:
        """Interrupted while waiting (Ctrl-C reaches the whole stack): the twin node may be
        going down too, and its service would keep the actor waiting for the full service
        timeout. Ask it to resume, but give up after RESUME_WHILE_STOPPING_S."""

        def resume() -> None:
            with contextlib.suppress(Exception):
                self.pause(False)

        thread = threading.Thread(target=resume, name="twin-resume", daemon=True)
        thread.start()
        thread.join(RESUME_WHILE_STOPPING_S)

    def summary(self) -> dict:
        return {
            "learner_waits": self.waits,
            "learner_wait_seconds": round(self.waited_seconds, 3),
            "paused_twin": self.pause is not None,
        }
