"""A refused reset is retried, not fatal: ``reset_with_retry(env)``.

A robot reconnecting to its driver refuses resets for a while (``/arm/reset`` refused or not
answered, topics stale). The reset is tried again a bounded number of times with a growing wait,
one line each, then fails with one clear ``ResetFailed``. Only that is retried: a ``RuntimeError``
whose message says ``refused`` (``RosRobotBackend.reset_robot``), ``TimeoutError`` and
``StaleReadingError``; anything else is raised at once. No ROS 2 import.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from robot_rl.envs.backend import StaleReadingError


class ResetFailed(RuntimeError):
    """The robot refused every try of a reset (the message is one line, for the user)."""


@dataclass(frozen=True)
class ResetRetry:
    tries: int = 6
    """Resets tried in all before giving up (the first included)."""
    first_wait: float = 2.0
    """Seconds before the second try; each later wait doubles, up to ``max_wait``."""
    max_wait: float = 30.0
    """The longest wait between two tries (2+4+8+16+30: six tries span about a minute, long
    enough for a driver to reconnect to its robot)."""

    def __post_init__(self) -> None:
        if self.tries < 1:
            raise ValueError(f"tries must be >= 1, got {self.tries}")
        if self.first_wait < 0 or self.max_wait < self.first_wait:
            raise ValueError("reset waits must satisfy 0 <= first_wait <= max_wait")

    def wait(self, failed: int) -> float:
        """Seconds to wait after the ``failed``-th failed try (1-based)."""
        return min(self.first_wait * 2.0 ** (failed - 1), self.max_wait)


def is_refused_reset(error: BaseException) -> bool:
    """Whether ``error`` is a robot that cannot reset right now (worth another try)."""
    if isinstance(error, (TimeoutError, StaleReadingError)):
        return True
    return isinstance(error, RuntimeError) and "refused" in str(error)


def reset_with_retry(
    env,
    *,
    retry: ResetRetry | None = None,
    log: Callable[[str], None] = print,
    sleep: Callable[[float], None] = time.sleep,
    **reset_kwargs,
):
    """``env.reset(**reset_kwargs)``, tried again on a refused reset (``is_refused_reset``),
    with ``log`` saying so in one line per try; raises ``ResetFailed`` after the last."""
    retry = retry or ResetRetry()
    start = time.monotonic()
    for attempt in range(1, retry.tries + 1):
        try:
            result = env.reset(**reset_kwargs)
        except Exception as error:
            if not is_refused_reset(error):
                raise
            reason = _one_line(error)
            if attempt == retry.tries:
                raise ResetFailed(
                    f"the robot's reset failed {retry.tries} times over "
                    f"{time.monotonic() - start:.0f} s; the last: {reason}"
                ) from error
            wait = retry.wait(attempt)
            log(f"reset refused (try {attempt} of {retry.tries}): {reason}; retrying in {wait:g} s")
            sleep(wait)
            continue
        if attempt > 1:
            log(f"reset done on try {attempt} of {retry.tries}")
        return result
    raise AssertionError("unreachable")  # pragma: no cover


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
