"""Scripted insertion: line the peg up over the hole (position and heading), then push down.
Reads the privileged hole and peg-tip poses."""

from __future__ import annotations

import numpy as np

from robot_rl.envs.arm_geometry import wrap, yaw_of
from robot_rl.sim.experts import PhasedExpert, register_expert
from robot_rl.tasks.peg_insert import SQUARE


@register_expert("peg_insert")
class PegInsertExpert(PhasedExpert):
    first_phase = "align"

    def act(self, reading: dict[str, np.ndarray]) -> np.ndarray:
        hole, tip = reading["object/hole_pos"], reading["object/peg_pos"]
        yaw_error = wrap(yaw_of(reading["object/hole_quat"]) - yaw_of(reading["tcp_quat"]), SQUARE)
        offset = hole - tip
        if self._phase == "align":
            offset = offset + np.array([0.0, 0.0, 0.015])  # hover just above the hole
            if np.linalg.norm(offset) < 0.002 and abs(yaw_error) < 0.015:
                self._phase = "insert"
        elif np.linalg.norm(offset[:2]) > 0.003 and offset[2] < 0:
            self._phase = "align"  # pushed off the hole before entering it: line up again
            offset = offset + np.array([0.0, 0.0, 0.015])
        if self._phase == "insert":
            offset = offset - np.array([0.0, 0.0, 0.03])  # aim below the success depth
        delta = self.gain * offset / self.task.step_size
        turn = self.gain * yaw_error / self.task.yaw_step
        action = np.append(delta, turn)
        if self.noise > 0:
            # careful near the hole, as a person would be: a clearance of 1 mm leaves no room
            scale = np.array([0.1, 0.1, 1.0, 0.1]) if self._phase == "insert" else 1.0
            action = action + scale * self._rng.normal(0.0, self.noise, 4)
        return np.clip(action, -1.0, 1.0).astype(np.float32)
