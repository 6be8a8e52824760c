"""Scripted pick: hover above the cube, descend, close, lift. Reads the privileged cube pose."""

from __future__ import annotations

import numpy as np

from robot_rl.sim.experts import PhasedExpert, register_expert, seen_speed


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
    settled: float | None = None
    """Descend only once the TCP moves slower than this horizontally (m/s): its reading now,
    or its mean over the last 3 control periods (a position-servo arm's velocity reading
    jitters at rest); seen late, an arm still coasting over the cube comes down beside it
    (None: at once)."""
    realign: int | None = None
    """Back up to the hover point when a descent has not come 1 mm lower for this many control
    periods: a jaw resting on the cube's top, as a person lifts and lines up again (None:
    never)."""

    def restart(self) -> None:
        super().restart()
        self._closing = 0
        self._lowest, self._since_lower = np.inf, 0
        self._recent: list[np.ndarray] = []

    def act(self, reading: dict[str, np.ndarray]) -> np.ndarray:
        tcp, cube = reading["tcp_pos"], reading["object/cube_pos"]
        self._recent = [*self._recent[-3:], np.asarray(tcp[:2], np.float64)]
        grip = -1.0
        grasp = cube + np.array([0.0, 0.0, self.grasp_above])
        if self._phase == "hover":
            target = cube + np.array([0.0, 0.0, self.hover])
            near = np.linalg.norm((target - tcp)[:2]) < self.reached[0]
            if near and abs(target[2] - tcp[2]) < 0.4 * self.hover and self._still(reading):
                self._phase = "descend"
                self._lowest, self._since_lower = np.inf, 0
        if self._phase == "descend":
            target = grasp
            if self._descent_stalled(float(tcp[2])):
                self._phase = "hover"
                return self.position_action(cube + np.array([0.0, 0.0, self.hover]), tcp, grip)
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

    def _descent_stalled(self, height: float) -> bool:
        if self.realign is None:
            return False
        if height < self._lowest - 0.001:
            self._lowest, self._since_lower = height, 0
        else:
            self._since_lower += 1
        return self._since_lower >= self.realign

    def _still(self, reading: dict[str, np.ndarray]) -> bool:
        if self.settled is None:
            return True
        velocity = reading.get("tcp_vel")
        horizontal = None if velocity is None else np.asarray(velocity)[:2]
        period = 1.0 / float(getattr(self.task, "control_hz", 10.0))
        return seen_speed(horizontal, self._recent, period) < self.settled


@register_expert("so101_pick_cube")
class So101PickCubeExpert(PickCubeExpert):
    """The same pick at the SO-101's scale: its pads grip the cube's upper part."""

    hover = 0.04
    grasp_above = 0.003
    lift_to = 0.08
    reached = (0.004, 0.005)
    settled = 0.02
    realign = 5
