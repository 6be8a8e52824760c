"""The reward sources of a run on a robot, put together in one place: the reward classifier
(``--reward-classifier``), its false-positive relabelling (``--relabel-false-positives``, the
operator or, on the twin only, the ground truth answering) and the operator's success key or
button (``--operator``). The actor and ``eval --hardware`` build their env through this.

Order, inside out: the task env, ``ClassifierReward`` (with its relabeler), ``OperatorSuccess``.
So the operator's success pays on top of the classifier's, and a relabelling query and the
success key read the same device without taking each other's presses (while a question asked
without waiting is open, the device's presses answer it first).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from robot_rl.rewards.operator import OperatorOptions, OperatorSuccess


def with_reward_sources(
    build: Callable[[dict], object],
    options: dict,
    *,
    reward_classifier: str | None,
    operator: OperatorOptions,
    relabel=None,
    relabel_dir: str | Path | None = None,
    robot_mode: bool = False,
    log: Callable[[str], None] = print,
    defer_labels: bool = False,
    classifier_ends_episodes: bool = True,
):
    """``build(options)`` with the reward sources the options ask for (``relabel``: a
    ``RelabelOptions``, None for none). The env owns the operator's device and closes it.
    ``defer_labels``: the operator's answer to a relabelling query is not waited for (the
    actor's episode loop holds the step until it comes; robot_rl.runtime.episode_loop).
    ``classifier_ends_episodes=False``: the classifier is a witness (evaluation with another
    judge) and neither pays nor ends an episode."""
    device = operator.open_operator()
    env = None
    try:
        if reward_classifier:
            from robot_rl.rewards.wrapper import with_reward_classifier

            env = with_reward_classifier(
                reward_classifier, build, options, ends_episodes=classifier_ends_episodes
            )
        else:
            env = build(options)
        labeler = None
        if relabel is not None and relabel.relabel_false_positives:
            labeler = _attach_labeller(
                env, relabel, operator, device, relabel_dir, robot_mode, log, defer_labels
            )
        if device is not None:
            asked = labeler if defer_labels and hasattr(labeler, "open_questions") else None
            env = OperatorSuccess(env, device, labeler=asked)
            log(f"operator: {device.describe('success')} says success (reward 1, episode ends)")
        return env
    except BaseException:
        if env is not None:
            env.close()
        if device is not None:
            device.close()
        raise


def _attach_labeller(env, relabel, operator, device, relabel_dir, robot_mode, log, defer):
    from robot_rl.rewards.labelers import GroundTruthLabeler, check_labeler
    from robot_rl.rewards.operator import OperatorLabeler
    from robot_rl.rewards.relabel import RelabelConfig, attach_relabeler

    name = relabel.resolved_labeler(operator.operator)
    check_labeler(name, robot_mode)
    if name == "operator":
        labeler = OperatorLabeler(device, operator.label_timeout, log=log)
    else:
        labeler = GroundTruthLabeler()
    every = relabel.relabel_every
    config = None if every is None else RelabelConfig(update_every=every)
    if relabel_dir is None:
        raise ValueError("relabelling needs a directory for the fine-tuned classifier")
    attach_relabeler(env, labeler, relabel_dir, config=config, log=log, defer=defer)
    log(
        f"relabelling the classifier's successes: the {name} labeller answers"
        + (" (the robot goes on meanwhile)" if defer and name == "operator" else "")
        + f"; fine-tunes go to {relabel_dir}"
    )
    return labeler
