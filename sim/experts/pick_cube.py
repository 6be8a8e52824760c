"""Scripted pick: hover above the cube, descend, close, lift. Reads the privileged cube pose."""

from __future__ import annotations

import numpy as np

from robot_rl.sim.experts import PhasedExpert, register_expert


@register_expert("pick_cube")
class PickCubeExpert(PhasedExpert):
    first_phase = "hover"

    def restart(self) -> None:
        super().restart()
        self._closing = 0

    def act(self, reading: dict[str, np.ndarray]) -> np.ndarray:
        tcp, cube = reading["tcp_pos"], reading["object/cube_pos"]
        grip = -1.0
        if self._phase == "hover":
            target = cube + np.array([0.0, 0.0, 0.05])
            if np.linalg.norm((target - tcp)[:2]) < 0.006 and abs(target[2] - tcp[2]) < 0.02:
                self._phase = "descend"
        if self._phase == "descend":
            target = cube.copy()
            if np.linalg.norm(target - tcp) < 0.008:
                self._phase = "close"
        if self._phase == "close":
            target, grip = cube.copy(), 1.0
            self._closing += 1
            if self._closing >= 4:  # let the fingers close before pulling
                self._phase = "lift"
        if self._phase == "lift":
            target, grip = np.array([cube[0], cube[1], 0.16]), 1.0
        return self.position_action(target, tcp, grip)
