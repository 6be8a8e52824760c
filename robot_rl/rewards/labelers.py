"""Who says whether a frame shows success: the seam between the twin and the robot.

``record-labels`` asks a labeler about every frame; ``--relabel-false-positives`` asks it only
when the reward classifier fires. On the twin the task's privileged ``success`` answers (the
ground truth plays the operator); on a robot the operator answers with a key or a /teleop/joy
button (``robot_rl.rewards.operator.OperatorLabeler``), through the same
``label(env, obs) -> bool``. The ground truth is the twin's only: robot mode refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from robot_rl.errors import UserError

GROUND_TRUTH_ON_ROBOT = (
    "robot mode: the ground-truth labeller reads the twin's object poses, which a robot does "
    "not have; label with the operator (--operator keyboard or joy)"
)


class Labeler(Protocol):
    def label(self, env, obs: dict) -> bool:
        """True if the frame the env is at now (``obs``) shows the task done."""
        ...


class GroundTruthLabeler:
    """The twin's privileged success test (the task's own definition); twin only."""

    def label(self, env, obs: dict) -> bool:
        if not getattr(env.task, "scores_itself", True):  # robot mode: no twin reading
            raise UserError(GROUND_TRUTH_ON_ROBOT)
        return bool(env.task.success(env.reading))


def check_labeler(name: str, robot_mode: bool) -> None:
    """Refuse a labeller the run cannot have (the ground truth in robot mode)."""
    if name not in LABELER_NAMES:
        raise UserError(f"unknown labeller {name!r}; choose one of {', '.join(LABELER_NAMES)}")
    if name == "ground-truth" and robot_mode:
        raise UserError(GROUND_TRUTH_ON_ROBOT)


LABELERS = {"ground-truth": GroundTruthLabeler}
"""The labellers built from nothing but their name (``record-labels``)."""
LABELER_NAMES = ("operator", "ground-truth")
"""What ``--labeler`` takes; 'operator' is built from the operator's device (OperatorOptions)."""


@dataclass(kw_only=True)
class RelabelOptions:
    """The actor's relabelling options (``robot-rl actor``; ``robot_rl.rewards.relabel``)."""

    relabel_false_positives: bool = False
    """With --reward-classifier: every time it fires, the labeller confirms or rejects; a
    reject pays nothing and the classifier is fine-tuned on the answers (HIL-SERL)."""
    labeler: Literal["operator", "ground-truth"] | None = None
    """Who answers: 'operator' (--operator's key or button) or 'ground-truth' (the twin's
    privileged success, refused in robot mode); default: the operator when --operator is given,
    else the ground truth."""
    relabel_every: int | None = None
    """Labelled frames between fine-tunes; default: RelabelConfig's (50)."""

    def resolved_labeler(self, operator: str) -> str:
        return self.labeler or ("operator" if operator != "off" else "ground-truth")

    def check_relabel(self, reward_classifier: str | None, operator: str, robot_mode: bool):
        if not self.relabel_false_positives:
            if self.labeler is not None or self.relabel_every is not None:
                raise UserError("--labeler and --relabel-every need --relabel-false-positives")
            return
        if not reward_classifier:
            raise UserError("--relabel-false-positives needs --reward-classifier")
        labeler = self.resolved_labeler(operator)
        check_labeler(labeler, robot_mode)
        if labeler == "operator" and operator == "off":
            raise UserError("--labeler operator needs --operator keyboard or joy")
        if self.relabel_every is not None and self.relabel_every < 1:
            raise UserError(f"--relabel-every must be >= 1, got {self.relabel_every}")
