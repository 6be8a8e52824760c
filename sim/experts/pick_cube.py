"""Scripted pick: hover above the cube, descend, close, lift. Reads the privileged cube pose."""

from __future__ import annotations

import numpy as np

from robot_rl.sim.experts import PhasedExpert, register_expert


@register_expert("pick_cube")
class PickCubeExpert(PhasedExpert):
    first_phase = "hover"
    hover = 0.05
    """Above the cube's centre before descending (m)."""
    grasp_above = 0.0
    """The TCP this far above the cube's centre when the gripper closes (m)."""
    lift_to = 0.16
    """The height the cube is lifted to (m)."""
    reached = (0.006, 0.008)
    """Near enough to the hover point (horizontally) and to the grasp point (m)."""

    def restart(self) -> None:
        super().restart()
        self._closing = 0

    def act(self, reading: dict[str, np.ndarray]) -> np.ndarray:
        tcp, cube = reading["tcp_pos"], reading["object/cube_pos"]
        grip = -1.0
        grasp = cube + np.array([0.0, 0.0, self.grasp_above])
        if self._phase == "hover":
            target = cube + np.array([0.0, 0.0, self.hover])
            near = np.linalg.norm((target - tcp)[:2]) < self.reached[0]
            if near and abs(target[2] - tcp[2]) < 0.4 * self.hover:
                self._phase = "descend"
        if self._phase == "descend":
            target = grasp
            if np.linalg.norm(target - tcp) < self.reached[1]:
                self._phase = "close"
        if self._phase == "close":
            target, grip = grasp, 1.0
            self._closing += 1
            if self._closing >= 4:  # let the fingers close before pulling
                self._phase = "lift"
        if self._phase == "lift":
            target, grip = np.array([cube[0], cube[1], self.lift_to]), 1.0
        return self.position_action(target, tcp, grip)


@register_expert("so101_pick_cube")
class So101PickCubeExpert(PickCubeExpert):
    """The same pick at the SO-101's scale: its pads grip the cube's upper part."""

    hover = 0.04
    grasp_above = 0.003
    lift_to = 0.08
    reached = (0.004, 0.005)
