"""When a ``move_to`` is over: the TCP within a tolerance of its target (settled), or standing
still short of it for a while (stalled: the target lies out of reach, beyond a joint limit or
the driver's workspace box, or the arm is held). A stalled move ends there, so an unreachable
target costs a second, not the whole reset timeout. Pure Python and numpy."""

from __future__ import annotations

import numpy as np

SETTLED, STALLED = "settled", "stalled"


class SettleWatch:
    """Fed the TCP's readings as they arrive (``update``, timed by their stamps: no reading is
    no evidence of standing still); says when the move is over."""

    def __init__(self, target, tolerance: float, stall_seconds: float):
        if not tolerance > 0 or not stall_seconds > 0:
            bounds = f"{tolerance}, {stall_seconds}"
            raise ValueError(f"tolerance and stall_seconds must be > 0, got {bounds}")
        self.target = np.asarray(target, np.float64)
        self.tolerance = tolerance
        self.stall_seconds = stall_seconds
        self.error = np.inf
        """The newest distance to the target (m)."""
        self._moved: tuple[float, np.ndarray] | None = None
        """(when, where) the TCP last moved by more than the tolerance."""

    def update(self, tcp_pos, now: float) -> str | None:
        """SETTLED, STALLED, or None while the move goes on; ``now``: the reading's stamp (s)."""
        pos = np.asarray(tcp_pos, np.float64)
        self.error = float(np.linalg.norm(pos - self.target))
        if self.error < self.tolerance:
            return SETTLED
        if self._moved is None or np.linalg.norm(pos - self._moved[1]) > self.tolerance:
            self._moved = (now, pos)
            return None
        return STALLED if now - self._moved[0] >= self.stall_seconds else None
