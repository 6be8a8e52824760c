"""When the Franka's reset starts with a joint move: the null-space drift of Cartesian control.

The FR3 has seven joints for a six-dimensional pose. A Cartesian impedance controller (the
node's, as SERL's) commands the pose only, so over many episodes the arm's elbow wanders in the
remaining direction, the null space: the TCP arrives where it is sent while the joints drift
towards their limits. In the simulated FR3 cell the policy reached 60% success at 6,200 steps,
then the joints had drifted by 1.5 rad (joint 1 at 1.54, joint 3 at -1.49 for a TCP straight
ahead of the base); the arm no longer reached the poses it was sent to, every reset timed out
and success fell to 0%. SERL's remedy is a periodic joint reset; here it happens when needed:
a reset that reaches its pose compares the joints with where the first reset left them at that
same pose (any difference is pure drift), and past ``drift_bound`` the arm moves to its home
configuration in joint space and the reset runs again from there. The first reset of a
connection and the one after a failed reset start with the joint move too.

Pure logic: the link (``franka_link``) runs the motions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class JointResetPolicy:
    drift_bound: float
    """Radians any joint may lie from the reference at the reset pose; 0: never move joints."""
    reference: np.ndarray | None = None
    """The joints at the reset pose after the last joint move (None until one was made)."""
    due: bool = True
    """The next reset starts with a joint move."""

    def __post_init__(self) -> None:
        if self.drift_bound < 0:
            raise ValueError(f"drift_bound must be >= 0, got {self.drift_bound}")
        self.due = self.due and self.enabled

    @property
    def enabled(self) -> bool:
        return self.drift_bound > 0

    def take(self) -> bool:
        """Whether this reset starts with a joint move (and it is then no longer due)."""
        due, self.due = self.due, False
        return due

    def at_reset_pose(self, joints: np.ndarray, after_joint_move: bool) -> float | None:
        """A reset reached its pose with ``joints``: the drift (rad) when it calls for a joint
        move now, else None. After a joint move the joints become the new reference."""
        joints = np.asarray(joints, np.float64)
        if after_joint_move or self.reference is None:
            self.reference = joints.copy()
            return None
        drift = float(np.max(np.abs(joints - self.reference)))
        return drift if self.enabled and drift > self.drift_bound else None

    def failed(self) -> None:
        """A reset failed (the pose not reached, a fault, an e-stop) or the connection was
        renewed: the next reset starts with the joint move."""
        self.due = self.enabled
