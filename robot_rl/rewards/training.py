"""Training the classifier's head: balanced batches, DrQ random shifts, binary cross-entropy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax

from robot_rl.agents.augment import random_shift
from robot_rl.rewards.classifier import RewardClassifier
from robot_rl.rewards.labels import LabelSet, balanced_indices


@dataclass(frozen=True)
class FitConfig:
    steps: int = 1_000
    """Gradient steps on the head."""
    batch_size: int = 64
    """Frames per step, half success and half failure."""
    learning_rate: float = 3e-4
    drq_pad: int = 4
    """DrQ random shift of up to this many pixels (0: no augmentation)."""
    seed: int = 0

    def validate(self) -> None:
        if self.steps < 1 or self.batch_size < 2:
            raise ValueError("steps must be >= 1 and batch_size >= 2")
        if self.learning_rate <= 0 or self.drq_pad < 0:
            raise ValueError("learning_rate must be > 0 and drq_pad >= 0")


def _probabilities(classifier: RewardClassifier, labels: LabelSet, batch_size: int) -> np.ndarray:
    return np.concatenate(
        [
            classifier.probability(labels.images[i : i + batch_size])
            for i in range(0, len(labels), batch_size)
        ]
    )


def accuracy(classifier: RewardClassifier, labels: LabelSet, batch_size: int = 256) -> dict:
    """Accuracy at the config's threshold, overall and per class (success / failure frames),
    and the success class's precision (of the frames it calls a success, the share that are:
    what a false reward costs) and recall (of the success frames, the share it finds; the same
    as ``success_recall``). None where a share has nothing to count."""
    predicted = _probabilities(classifier, labels, batch_size) >= classifier.config.threshold
    truth = labels.labels.astype(bool)
    correct = predicted == truth
    return {
        "accuracy": float(correct.mean()),
        "precision": float(truth[predicted].mean()) if predicted.any() else None,
        "recall": float(predicted[truth].mean()) if truth.any() else None,
        "success_recall": float(correct[truth].mean()) if truth.any() else None,
        "failure_recall": float(correct[~truth].mean()) if (~truth).any() else None,
        "frames": len(labels),
        "success_frames": int(truth.sum()),
        "episodes": len(np.unique(labels.episodes)),
    }


def fit(
    classifier: RewardClassifier,
    train: LabelSet,
    config: FitConfig,
    progress: Callable[[int, float], None] | None = None,
) -> RewardClassifier:
    """Train the head on ``train``; the trunk stays as it is. ``progress(step, loss)`` is called
    every 100 steps and at the end."""
    config.validate()
    size = classifier.config.image_size
    if train.images.shape[1:3] != (size, size):
        raise ValueError(
            f"label frames are {train.images.shape[1]}x{train.images.shape[2]}, "
            f"the classifier reads {size}x{size}"
        )
    optimizer = optax.adam(config.learning_rate)
    trunk = classifier.trunk_variables
    pad = config.drq_pad

    def loss_fn(head, images, targets, key):
        logits = classifier.logits_fn(trunk, head, random_shift(key, images, pad))
        return optax.sigmoid_binary_cross_entropy(logits, targets).mean()

    @jax.jit
    def step(head, opt_state, images, targets, key):
        loss, grads = jax.value_and_grad(loss_fn)(head, images, targets, key)
        updates, opt_state = optimizer.update(grads, opt_state, head)
        return optax.apply_updates(head, updates), opt_state, loss

    head = classifier.head_params
    opt_state = optimizer.init(head)
    rng = np.random.default_rng(config.seed)
    key = jax.random.PRNGKey(config.seed)
    for i in range(config.steps):
        idx = balanced_indices(train.labels, rng, config.batch_size)
        key, sub = jax.random.split(key)
        targets = jnp.asarray(train.labels[idx], jnp.float32)
        head, opt_state, loss = step(head, opt_state, train.images[idx], targets, sub)
        if progress is not None and ((i + 1) % 100 == 0 or i + 1 == config.steps):
            progress(i + 1, float(loss))
    return classifier.with_head(head)


def choose_threshold(classifier: RewardClassifier, validation: LabelSet) -> float:
    """The threshold in [0.5, 0.95] with the best accuracy on ``validation`` (ties: the higher,
    since a false success ends an episode with a reward it did not earn). Balanced batches
    train the head as if half the frames were successes; this puts the cut back where the
    real mix of frames wants it."""
    probs = _probabilities(classifier, validation, 256)
    truth = validation.labels.astype(bool)
    candidates = np.round(np.arange(0.5, 0.951, 0.05), 2)
    scores = [((probs >= t) == truth).mean() for t in candidates]
    best = max(scores)
    return float(max(t for t, s in zip(candidates, scores, strict=True) if s == best))
