"""Scripted put-down: lower the held cube to the table, open, move clear (privileged cube pose)."""

from __future__ import annotations

import numpy as np

from robot_rl.sim.experts import PhasedExpert, register_expert
from robot_rl.tasks.pick_cube import CUBE_HALF, TABLE_Z


@register_expert("put_down_cube")
class PutDownCubeExpert(PhasedExpert):
    first_phase = "lower"

    def restart(self) -> None:
        super().restart()
        self._opening = 0

    def act(self, reading: dict[str, np.ndarray]) -> np.ndarray:
        tcp, cube = reading["tcp_pos"], reading["object/cube_pos"]
        grip = 0.0  # keep the fingers closed on the cube
        # the cube hangs where the fingers hold it: move the TCP by what the cube must move
        target = tcp.copy()
        if self._phase == "lower":
            target[2] += TABLE_Z + CUBE_HALF + 0.002 - cube[2]
            if cube[2] - CUBE_HALF - TABLE_Z < 0.004:
                self._phase = "open"
        if self._phase == "open":
            grip = -1.0
            self._opening += 1
            if self._opening >= 3:  # let the fingers open before pulling away
                self._phase = "clear"
        if self._phase == "clear":
            target[2] = cube[2] + self.task.release_clearance + 0.02
            grip = -1.0
        return self.position_action(target, tcp, grip)
