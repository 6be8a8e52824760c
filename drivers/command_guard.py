"""Driver-side checks every command passes before it may reach a motor (shared by the real
drivers and the twin drivers): a command must be stamped, not older than the node's bound, not
from the future, and finite. Pure functions: no ROS 2, no device library.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

FUTURE_TOLERANCE_S = 0.05
"""How far ahead of the node's clock a stamp may be (clock skew between two processes)."""


def stale_reason(
    stamp: float, now: float, max_age: float, future_tolerance: float = FUTURE_TOLERANCE_S
) -> str | None:
    """Why a command stamped ``stamp`` (seconds) must not run at ``now``, or None if it may.

    A stamp of 0 (unstamped), one older than ``max_age`` and one more than
    ``future_tolerance`` ahead of ``now`` are all refused: a stamp from the future is a clock
    fault or a replayed message, and could make a stale command look fresh for ever.
    """
    if not math.isfinite(stamp) or stamp <= 0.0:
        return "unstamped command (stamp 0)"
    age = now - stamp
    if age > max_age:
        return f"stale command ({age:.3f} s old, bound {max_age:.3f} s)"
    if -age > future_tolerance:
        return f"command stamped {-age:.3f} s in the future"
    return None


def non_finite_reason(values: Iterable[float]) -> str | None:
    """Why a command with these values must not run (NaN or infinity), or None."""
    for value in values:
        if not math.isfinite(float(value)):
            return f"non-finite value in command ({value})"
    return None
