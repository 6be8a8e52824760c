"""The Franka Hand as the driver sees it: ``cmd/gripper`` (0 open .. 1 closed) becomes a grasp
or an open, and its width becomes ``gripper/joint_states``. Used only from the link's thread.

A learned policy's gripper is binary (open, close, stay), so at or above ``gripper_threshold``
the hand grasps (width 0, bounded force, any width counts as grasped, so it holds whatever is
between the fingers) and below it opens fully. A command is sent only when the wanted state
changes, and only after the previous command finished: the hand runs one command at a time, and
franky-sim never answers one that a newer command replaced (libfranka would wait for ever).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

READ_HZ = 25.0
"""How often the width is read: each read waits for the hand's next state packet, and the
fingers move slowly."""


def first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


class Hand:
    def __init__(self, gripper, config, log: Callable[[str, str], None]):
        self._gripper = gripper
        self.config = config
        self._log = log
        self.max_width = gripper.max_width or 0.08
        self._every = max(1, round(config.state_hz / READ_HZ))
        self._cycle = 0
        self._width: float | None = None
        self._closed: bool | None = None  # the state last commanded
        self._wanted: bool | None = None
        self._future = None

    def closed_fraction(self) -> float:
        """0 open .. 1 closed, read from the hand every few calls."""
        if self._width is None or self._cycle % self._every == 0:
            self._width = self._gripper.width
        self._cycle += 1
        return float(np.clip(1.0 - self._width / self.max_width, 0.0, 1.0))

    def command(self, closed: float) -> None:
        self._wanted = closed >= self.config.gripper_threshold
        self.drive()

    def drive(self) -> None:
        """Send the wanted state once the previous command has finished (every cycle)."""
        wanted = self._wanted
        if wanted is None or wanted == self._closed:
            return
        future = self._future
        if future is not None:
            if not future.wait(0):
                return
            try:
                future.get()
            except Exception as error:  # a failed grasp is not a robot fault: say so
                self._log("warning", f"gripper command failed: {first_line(error)}")
        cfg = self.config
        if wanted:
            self._future = self._gripper.grasp_async(
                0.0, cfg.gripper_speed, cfg.gripper_force, epsilon_inner=0.0, epsilon_outer=1.0
            )
        else:
            self._future = self._gripper.move_async(self.max_width, cfg.gripper_speed)
        self._closed = wanted

    def close(self) -> None:
        """Let a running command end before the gripper object goes (bounded)."""
        future, self._future = self._future, None
        if future is not None:
            future.wait(2.0)
