"""Who says whether a frame shows success: the seam between the twin and the robot.

``record-labels`` asks a labeler about every frame; ``--relabel-false-positives`` asks it only
when the reward classifier fires. On the twin the task's privileged ``success`` answers (the
ground truth plays the operator); on a robot an operator answers with a key press, through the
same ``label(env, obs) -> bool``.
"""

from __future__ import annotations

from typing import Protocol


class Labeler(Protocol):
    def label(self, env, obs: dict) -> bool:
        """True if the frame the env is at now (``obs``) shows the task done."""
        ...


class GroundTruthLabeler:
    """The twin's privileged success test (the task's own definition)."""

    def label(self, env, obs: dict) -> bool:
        return bool(env.task.success(env.reading))


LABELERS = {"ground-truth": GroundTruthLabeler}
