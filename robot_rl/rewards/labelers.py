"""Who says whether a frame shows success: the seam between the twin and the robot.

``record-labels`` asks a labeler about every frame; ``--relabel-false-positives`` asks it only
when the reward classifier fires. On the twin the task's privileged ``success`` answers (the
ground truth plays the operator); on a robot the operator answers with a key or a /teleop/joy
button, through the same ``label(env, obs) -> bool``: while recording labels by holding the
success button while the frame shows success (``ButtonLabeler``, HIL-SERL's success/failure
recording), and when the classifier fires by confirming or rejecting
(``robot_rl.rewards.operator.OperatorLabeler``). The ground truth is the twin's only: robot
mode refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from robot_rl.errors import UserError
from robot_rl.rewards.operator_input import REJECT, SUCCESS

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

    def __init__(self, operator=None):
        """``operator``: unused (the ground truth needs nobody); ``LABELERS`` builds every
        labeller alike."""

    def reset(self) -> None:
        """Nothing per episode."""

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


class ButtonLabeler:
    """The operator labels each frame as it is recorded: success while they say so.

    On a device that reports its buttons held (``/teleop/joy``: ``JoyOperator.held``), a frame
    is a success while the success button is held down: the operator holds it for as long as
    the frame shows the task done, and lets go when it stops being done. A keyboard on a
    terminal reports presses, not releases, so there it is a toggle: the success key turns
    success on, the reject key turns it off again. Each episode begins as a failure (the
    robot at its start, the task not done): presses made during the reset are dropped, and a
    button still held from before the episode counts only once it has been let go."""

    def __init__(self, operator):
        if operator is None:
            raise ValueError("the button labeller needs the operator's device (--operator)")
        self.operator = operator
        self._toggled = False
        self._released = True

    def reset(self) -> None:
        self.operator.poll()
        self._toggled = False
        self._released = False

    def label(self, env, obs: dict) -> bool:
        events = self.operator.poll()
        held = getattr(self.operator, "held", None)
        if held is not None:
            down = bool(held(SUCCESS))
            self._released = self._released or not down
            return down and self._released
        for event in events:
            self._toggled = event == SUCCESS
        return self._toggled

    def describe(self) -> str:
        success = self.operator.describe(SUCCESS)
        if getattr(self.operator, "held", None) is not None:
            return f"hold {success} while the frame shows success"
        return f"{success} when success begins, {self.operator.describe(REJECT)} when it ends"


LABELERS = {"ground-truth": GroundTruthLabeler, "button": ButtonLabeler}
"""The labellers of ``record-labels``, each built from the operator's device (None when the
run has none): 'ground-truth' the twin's success, 'button' the operator's success button."""
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
