"""Training the classifier: balanced batches, DrQ random shifts, binary cross-entropy; the head
alone on a frozen (pretrained) trunk, or trunk and head together (``train_trunk``)."""

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
    train_trunk: bool = False
    """Train the trunk with the head. A random trunk has nothing worth keeping frozen: on 1,660
    frames of the FR3 cell (32 px) a trained one held out precision 0.78-0.96 and recall
    0.56-0.89 (three splits, 3,000 steps) where a frozen one gave 0.61-0.70 and 0.39-0.66."""

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
    """Train the head on ``train`` (and the trunk, with ``config.train_trunk``).
    ``progress(step, loss)`` is called every 100 steps and at the end."""
    config.validate()
    size = classifier.config.image_size
    if train.images.shape[1:3] != (size, size):
        raise ValueError(
            f"label frames are {train.images.shape[1]}x{train.images.shape[2]}, "
            f"the classifier reads {size}x{size}"
        )
    optimizer = optax.adam(config.learning_rate)
    pad = config.drq_pad
    trained = {"head": classifier.head_params}
    if config.train_trunk:
        trained["trunk"] = classifier.trunk_variables

    def loss_fn(params, images, targets, key):
        trunk = params.get("trunk", classifier.trunk_variables)
        logits = classifier.head.apply(
            params["head"], classifier.trunk.apply(trunk, random_shift(key, images, pad))
        )
        return optax.sigmoid_binary_cross_entropy(logits, targets).mean()

    @jax.jit
    def step(params, opt_state, images, targets, key):
        loss, grads = jax.value_and_grad(loss_fn)(params, images, targets, key)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    opt_state = optimizer.init(trained)
    rng = np.random.default_rng(config.seed)
    key = jax.random.PRNGKey(config.seed)
    for i in range(config.steps):
        idx = balanced_indices(train.labels, rng, config.batch_size)
        key, sub = jax.random.split(key)
        targets = jnp.asarray(train.labels[idx], jnp.float32)
        trained, opt_state, loss = step(trained, opt_state, train.images[idx], targets, sub)
        if progress is not None and ((i + 1) % 100 == 0 or i + 1 == config.steps):
            progress(i + 1, float(loss))
    trunk = trained.get("trunk", classifier.trunk_variables)
    return RewardClassifier(classifier.config, trunk, trained["head"])


def choose_threshold(classifier: RewardClassifier, validation: LabelSet) -> float:
    """The threshold in [0.5, 0.95] with the best F0.5 score of the success class on
    ``validation`` (precision counts twice recall's weight: a false success ends an episode
    with a reward it did not earn, a missed one only delays it; ties: the higher). Accuracy
    would not do: with one success frame in ten, a classifier that never fires scores 90%.
    Without success frames to judge by, the highest candidate."""
    probs = _probabilities(classifier, validation, 256)
    truth = validation.labels.astype(bool)
    candidates = np.round(np.arange(0.5, 0.951, 0.05), 2)
    scores = [f_score(probs >= t, truth, beta=0.5) for t in candidates]
    best = max(scores)
    return float(max(t for t, s in zip(candidates, scores, strict=True) if s == best))


def f_score(predicted: np.ndarray, truth: np.ndarray, beta: float) -> float:
    """F-beta of the success class (0 where nothing is predicted or nothing is true)."""
    hits = float(np.sum(predicted & truth))
    if hits == 0:
        return 0.0
    precision, recall = hits / predicted.sum(), hits / truth.sum()
    return (1 + beta**2) * precision * recall / (beta**2 * precision + recall)
