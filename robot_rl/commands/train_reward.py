"""`robot-rl train-reward`: a success classifier on an image trunk, from labelled frames.

Reads a label file (robot-rl record-labels), holds out a share of its episodes (whole: frames
of one episode are near-copies of each other), trains the head with balanced batches and DrQ
random shifts (the head alone on a pretrained trunk, trunk and head together on a random one),
reports precision and recall of the success class and accuracy on the held-out
episodes, and writes the checkpoint that `robot-rl train --reward-classifier DIR` and `up robot
--reward-classifier DIR` use. The label file says where its frames come from (a robot's
camera with --hardware, or the twin's): a classifier judges only frames like those it was
trained on.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rich.console import Console

from robot_rl.errors import print_error
from robot_rl.runtime.progress import JobProgress, stderr_console


@dataclass
class TrainRewardConfig:
    labels: str
    """Label file (.npz) from robot-rl record-labels."""
    out: str | None = None
    """Checkpoint directory; default reward_classifiers/<label file name>/."""
    trunk: Literal["conv", "resnet10"] = "conv"
    """Image trunk: 'conv' (random weights) or 'resnet10' (best with --pretrained)."""
    train_trunk: bool | None = None
    """Train the trunk with the head; default: yes for a random trunk, no (frozen, as in
    SERL) for --pretrained weights."""
    pretrained: str | None = None
    """ResNet-10 weights (.pt/.pth/.safetensors, torchvision layout) for --trunk resnet10."""
    pooling: Literal["spatial_learned", "flatten", "avg"] = "spatial_learned"
    """How the head pools the trunk's feature map."""
    hidden_dim: int = 64
    """Width of the head's bottleneck."""
    threshold: float | None = None
    """Success probability at which the reward wrapper pays 1 and ends the episode; default:
    the one with the best F0.5 (precision weighted) on validation episodes (a share of the
    training episodes)."""
    task_gate: bool = True
    """Count a frame as success only where the task's check on the robot's own sensors allows
    it (pick_cube: the fingers stopped on something above the table), as HIL-SERL gates its
    classifiers on the gripper; --no-task-gate: the classifier alone."""
    steps: int = 3_000
    """Gradient steps."""
    batch_size: int = 64
    """Frames per step, half success and half failure."""
    learning_rate: float = 3e-4
    """Adam step size."""
    drq_pad: int = 4
    """DrQ random shift in pixels (0: no augmentation)."""
    held_out: float = 0.2
    """Share of the episodes kept out of training to measure accuracy."""
    seed: int = 0
    """Seed of the trunk's random weights, the split and the batches."""
    json_out: bool = False
    """Print the result as one JSON line."""


def train_reward(config: TrainRewardConfig, console: Console | None = None) -> dict:
    """Train, evaluate on held-out episodes, save; returns the figures (and the path)."""
    from robot_rl.rewards.classifier import ClassifierConfig, RewardClassifier, save_classifier
    from robot_rl.rewards.labels import load_labels
    from robot_rl.rewards.training import FitConfig, accuracy, choose_threshold, fit

    labels = load_labels(config.labels)
    train_set, test_set = labels.split_by_episode(config.held_out, config.seed)
    validation = None
    if config.threshold is None:
        train_set, validation = train_set.split_by_episode(config.held_out, config.seed + 1)
    size = labels.images.shape[1]
    if labels.images.shape[2] != size:
        raise ValueError(f"label frames must be square, got {labels.images.shape[1:3]}")
    classifier_config = ClassifierConfig(
        camera=labels.meta.get("camera", "front"),
        image_size=size,
        trunk=config.trunk,
        pooling=config.pooling,
        hidden_dim=config.hidden_dim,
        threshold=0.5 if config.threshold is None else config.threshold,
        task_gate=config.task_gate,
    )
    trunk_variables = None
    if config.pretrained:
        if config.trunk != "resnet10":
            raise ValueError("--pretrained weights are for --trunk resnet10")
        from robot_rl.agents.encoders.torch_import import load_resnet10_state_dict

        trunk_variables = load_resnet10_state_dict(config.pretrained)
    classifier = RewardClassifier.create(classifier_config, config.seed, trunk_variables)
    trunk_trained = config.pretrained is None if config.train_trunk is None else config.train_trunk
    if console:
        console.print(
            f"[bold]train-reward[/] frames from {frames_from(labels.meta)}: "
            f"{len(train_set)} for training ({train_set.positives} success), "
            f"{len(test_set)} held out ({test_set.positives} success) from "
            f"{len(set(test_set.episodes.tolist()))} episodes; "
            f"{'trained' if trunk_trained else 'frozen'} {config.trunk} trunk"
        )

    # stdout may be the result (--json-out): the bar, or a line every 10 s in a log, on stderr
    bar = JobProgress("train-reward", config.steps, console=stderr_console())

    def progress(step: int, loss: float) -> None:
        bar.update(step, note=f"loss {loss:.4f}")

    fit_config = FitConfig(
        steps=config.steps,
        batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        drq_pad=config.drq_pad,
        seed=config.seed,
        train_trunk=trunk_trained,
    )
    try:
        classifier = fit(classifier, train_set, fit_config, progress)
    finally:
        bar.close()
    if validation is not None:
        threshold = choose_threshold(classifier, validation)
        classifier = RewardClassifier(
            dataclasses.replace(classifier.config, threshold=threshold),
            classifier.trunk_variables,
            classifier.head_params,
        )
    metrics = {
        "held_out": accuracy(classifier, test_set),
        "train": accuracy(classifier, train_set),
        "threshold": classifier.config.threshold,
        "labels": str(Path(config.labels).resolve()),  # a relabelling run reads it again
        "frames_from": frames_from(labels.meta),
        "steps": config.steps,
        "trunk": "trained" if trunk_trained else "frozen",
    }
    out = Path(config.out or Path("reward_classifiers") / Path(config.labels).stem)
    save_classifier(out, classifier, metrics)
    return {"checkpoint": str(out), **metrics}


def frames_from(meta: dict) -> str:
    """Where a label file's frames come from, in words."""
    camera = meta.get("camera", "front")
    if meta.get("hardware"):
        return f"the robot of {meta['hardware']} ({camera} camera, labelled by the operator)"
    return f"the twin ({camera} camera, labelled by its {meta.get('labeler', 'ground-truth')})"


def _share(value) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def run(config: TrainRewardConfig) -> int:
    console = Console(soft_wrap=True)
    try:
        result = train_reward(config, console=None if config.json_out else console)
    except (ValueError, FileNotFoundError) as err:
        print_error(err)
        return 2
    if config.json_out:
        print(json.dumps(result))
        return 0
    held = result["held_out"]
    console.print(
        f"held-out ({held['frames']} frames of {held['episodes']} episodes, "
        f"{held['success_frames']} success): precision {_share(held['precision'])}, recall "
        f"{_share(held['recall'])}, accuracy {held['accuracy']:.1%} (failure frames "
        f"{_share(held['failure_recall'])}) at threshold {result['threshold']}; train accuracy "
        f"{result['train']['accuracy']:.1%}\n"
        f"checkpoint: {result['checkpoint']}; use it with: "
        f"robot-rl train --task <task> --reward-classifier {result['checkpoint']}"
    )
    return 0
