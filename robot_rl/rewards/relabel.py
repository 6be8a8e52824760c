"""HIL-SERL's fix for a fooled reward classifier: label its false positives and fine-tune on them.

When the classifier fires, a ``Labeler`` (robot_rl.rewards.labelers: the twin's ground truth, or
the operator) says whether the frame shows success: a no pays nothing and the frame becomes a
negative, a yes a positive; every ``update_every`` new labels the head is fine-tuned. So that this
does not silence real successes, confirmed successes fill up to ``hard_share`` of each batch's
success frames, and after each fine-tune the threshold is lowered (never above the trained one)
until it passes ``keep_recall`` of the recorded and, separately, of the confirmed successes.
With ``defer=True`` (the actor's) a labeler with ``ask`` gives a ``PendingLabel`` at once, whose
``answer()`` is None until answered, and fine-tunes run on their own thread (``finish`` waits).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robot_rl.rewards.classifier import RewardClassifier, save_classifier
from robot_rl.rewards.labelers import Labeler
from robot_rl.rewards.labels import LabelSet, save_labels
from robot_rl.rewards.training import FitConfig, fit

logger = logging.getLogger(__name__)

CLASSIFIER_DIR = "reward_classifier"
"""Where a run keeps its fine-tuned classifier (under the run directory)."""
RELABELLED_FILE = "relabelled_labels.npz"
"""The frames the labeler answered for during the run (a label file for train-reward too)."""


@dataclass(frozen=True)
class RelabelConfig:
    update_every: int = 50
    """Newly labelled frames between fine-tunes of the classifier's head. Every fine-tune on
    near-miss negatives also lowers the probability of real successes a little, so fewer,
    larger fine-tunes keep the policy's successes paid (on the twin's pick_cube, with 10 one
    seed of three ended at 16% success; with 50 five seeds of five end at 100%)."""
    fine_tune_steps: int = 300
    """Gradient steps per fine-tune (continuing from the current head)."""
    hard_share: float = 0.25
    """Share of each batch's failure frames drawn from labelled false positives, and of its
    success frames from confirmed successes: a handful of them among thousands of recorded
    frames would otherwise barely move the head."""
    learning_rate: float = 3e-4
    batch_size: int = 64
    keep_recall: float = 0.9
    """Share of the known success frames the threshold must pass after a fine-tune."""
    min_threshold: float = 0.5
    """The threshold is never lowered below this."""
    seed: int = 0

    def validate(self) -> None:
        if self.update_every < 1 or self.fine_tune_steps < 1:
            raise ValueError("update_every and fine_tune_steps must be >= 1")
        if not 0.0 < self.hard_share < 1.0:
            raise ValueError(f"hard_share must be in (0, 1), got {self.hard_share}")
        if not 0.0 < self.keep_recall <= 1.0:
            raise ValueError(f"keep_recall must be in (0, 1], got {self.keep_recall}")
        if not 0.0 < self.min_threshold < 1.0:
            raise ValueError(f"min_threshold must be in (0, 1), got {self.min_threshold}")


class FalsePositiveRelabeler:
    """Asks ``labeler`` about every frame the classifier fires on; fine-tunes on the answers."""

    def __init__(
        self,
        classifier: RewardClassifier,
        base: LabelSet,
        labeler: Labeler,
        config: RelabelConfig | None = None,
        save_dir: str | os.PathLike | None = None,
        log: Callable[[str], None] | None = None,
        labelled: LabelSet | None = None,
        trained_threshold: float | None = None,
    ):
        self.config = config or RelabelConfig()
        self.config.validate()
        size = classifier.config.image_size
        if base.images.shape[1:3] != (size, size):
            raise ValueError(
                f"base label frames are {base.images.shape[1]}x{base.images.shape[2]}, the "
                f"classifier reads {size}x{size}"
            )
        self.classifier = classifier
        # the cap on re-set thresholds: train-reward's (a resumed run's classifier may carry a
        # lowered one)
        self.trained_threshold = trained_threshold or classifier.config.threshold
        self.base = base
        self.labeler = labeler
        self.save_dir = Path(save_dir) if save_dir is not None else None
        self.log = log
        self._images: list[np.ndarray] = []
        self._labels: list[int] = []
        if labelled is not None:  # a resumed run keeps what its labeler already answered
            self._images, self._labels = list(labelled.images), list(labelled.labels)
        self.queries = len(self._labels)
        self.false_positives = self._labels.count(0)
        self.updates = 0
        self._pending = 0
        self.defer = False
        """Ask without waiting where the labeler can (``ask``), and fine-tune on a thread; set
        by ``attach_relabeler``."""
        self._tuning: threading.Thread | None = None

    def check(self, env, obs: dict, image: np.ndarray) -> bool:
        """The labeler's verdict on a frame the classifier fired on (recorded for fine-tuning);
        waits for it."""
        truth = bool(self.labeler.label(env, obs))
        self.record(image, truth)
        return truth

    def ask(self, env, obs: dict, image: np.ndarray) -> PendingLabel:
        """The labeler's verdict on a frame the classifier fired on, without waiting for it
        where ``defer`` is set and the labeler can be asked (``ask``); else answered at once."""
        ask = getattr(self.labeler, "ask", None)
        if not self.defer or ask is None:
            return PendingLabel(self, None, image, verdict=self.check(env, obs, image))
        return PendingLabel(self, ask(env, obs), image)

    def record(self, image: np.ndarray, truth: bool) -> None:
        """One answer: the frame joins the fine-tuning set (a fine-tune every update_every)."""
        self._images.append(np.array(image, np.uint8))
        self._labels.append(int(truth))
        self.queries += 1
        self.false_positives += int(not truth)
        self._pending += 1
        if self._pending >= self.config.update_every:
            if self.defer:
                self._update_in_background()
            else:
                self.update()

    def _update_in_background(self) -> None:
        """``update`` on a thread, over a copy of the frames labelled so far; the classifier
        in use is swapped when it is done. One at a time: frames labelled meanwhile wait for
        the next (the answer after it is done starts it)."""
        if self._tuning is not None and self._tuning.is_alive():
            return
        self._pending = 0
        snapshot = copy.copy(self)
        snapshot._images, snapshot._labels = list(self._images), list(self._labels)
        snapshot._tuning = None

        def tune() -> None:
            try:
                classifier = snapshot.update()
            except Exception:  # the run goes on with the classifier it has
                logger.exception("reward classifier fine-tune failed; keeping the current one")
                return
            self.classifier = classifier
            self.updates = snapshot.updates

        self._tuning = threading.Thread(target=tune, name="classifier_fine_tune", daemon=True)
        self._tuning.start()

    def finish(self, timeout: float | None = 300.0) -> None:
        """Wait for a fine-tune under way (its classifier and labels are saved when done)."""
        if self._tuning is not None:
            self._tuning.join(timeout)

    def labelled(self) -> LabelSet:
        """The frames labelled so far (episode ids after the base set's, one per frame)."""
        n = len(self._labels)
        size = self.classifier.config.image_size
        images = np.stack(self._images) if n else np.zeros((0, size, size, 3), np.uint8)
        first = int(self.base.episodes.max()) + 1 if len(self.base) else 0
        meta = {**self.base.meta, "labeler": type(self.labeler).__name__, "source": "relabel"}
        return LabelSet(images, np.asarray(self._labels), first + np.arange(n), meta)

    def training_set(self) -> LabelSet:
        """Base labels plus the labelled frames, each class of them (false positives, confirmed
        successes) repeated up to ``hard_share`` of that class's frames (balanced batches then
        draw them that often)."""
        new = self.labelled()
        parts = [self.base, new]
        share = self.config.hard_share
        for label in (0, 1):
            labelled = new.labels == label
            if not labelled.any():
                continue
            recorded = int((self.base.labels == label).sum())
            copies = math.ceil(share / (1 - share) * recorded / labelled.sum()) - 1
            if copies > 0:
                parts.append(new.subset(np.tile(np.flatnonzero(labelled), copies)))
        return LabelSet(
            np.concatenate([p.images for p in parts]),
            np.concatenate([p.labels for p in parts]),
            np.concatenate([p.episodes for p in parts]),
            dict(self.base.meta),
        )

    def update(self) -> RewardClassifier:
        """Fine-tune the head on the training set; save the classifier and the labelled frames."""
        self._pending = 0
        hard = np.asarray(self._labels) == 0
        before = self._mean_probability(hard)
        fit_config = FitConfig(
            steps=self.config.fine_tune_steps,
            batch_size=self.config.batch_size,
            learning_rate=self.config.learning_rate,
            seed=self.config.seed + self.updates,
        )
        tuned = fit(self.classifier, self.training_set(), fit_config)
        self.classifier = self._keeping_recall(tuned)
        self.updates += 1
        after = self._mean_probability(hard)
        if self.save_dir is not None:
            save_labels(self.save_dir / RELABELLED_FILE, self.labelled())
            save_classifier(self.save_dir / CLASSIFIER_DIR, self.classifier, self.counts())
        if self.log is not None:
            self.log(
                f"reward classifier fine-tuned ({self.updates}): {self.false_positives} false "
                f"positives of {self.queries} labeller queries; their mean P(success) "
                f"{before:.2f} -> {after:.2f}; threshold {self.classifier.config.threshold:.3f}"
            )
        return self.classifier

    def _keeping_recall(self, classifier: RewardClassifier) -> RewardClassifier:
        """``classifier`` with the highest threshold (at most the trained one) that passes
        ``keep_recall`` of the recorded success frames and of the confirmed ones."""
        recorded = self.base.images[self.base.labels == 1]
        confirmed = [im for im, label in zip(self._images, self._labels, strict=True) if label]
        threshold = self.trained_threshold
        for images in (recorded, np.asarray(confirmed, np.uint8)):
            if not len(images):
                continue
            probs = np.sort(classifier.probability(images))
            # the k-th smallest probability, k = the share allowed to be missed
            kth = float(probs[math.floor((1.0 - self.config.keep_recall) * len(probs))])
            threshold = min(threshold, kth)
        threshold = max(threshold, self.config.min_threshold)
        config = dataclasses.replace(classifier.config, threshold=threshold)
        return RewardClassifier(config, classifier.trunk_variables, classifier.head_params)

    def _mean_probability(self, mask: np.ndarray) -> float:
        if not mask.any():
            return float("nan")
        images = np.stack([im for im, m in zip(self._images, mask, strict=True) if m])
        return float(np.mean(self.classifier.probability(images)))

    def counts(self) -> dict:
        return {
            "labeler_queries": self.queries,
            "false_positives": self.false_positives,
            "classifier_updates": self.updates,
        }


class PendingLabel:
    """The labeler's answer about one fired frame, which may come later.

    ``answer()``: None while the question is open, then the verdict (a reject where the labeler
    gave none in its time); the first answer read is recorded with the relabeler (fine-tuning).
    ``give_up()`` (a run that stops before the answer): withdraws the question and counts it
    as a reject of the step, but not as a label (nobody said so)."""

    def __init__(self, relabeler, question, image: np.ndarray, verdict: bool | None = None):
        self.relabeler, self.question = relabeler, question
        self.image = np.array(image, np.uint8) if verdict is None else None
        self._verdict = verdict

    def answer(self) -> bool | None:
        if self._verdict is None:
            verdict = self.question.poll()
            if verdict is not None:
                self._verdict = bool(verdict)
                self.relabeler.record(self.image, self._verdict)
                self.image = None
        return self._verdict

    def give_up(self) -> bool:
        if self.answer() is None:
            self.question.withdraw()
            self._verdict, self.image = False, None
        return bool(self._verdict)


def attach_relabeler(
    env,
    labeler: Labeler,
    run_dir: str | os.PathLike,
    labels: str | os.PathLike | None = None,
    config: RelabelConfig | None = None,
    log: Callable[[str], None] | None = None,
    defer: bool = False,
) -> FalsePositiveRelabeler:
    """Give ``env`` (a ClassifierReward) a relabeler whose fine-tunes go to ``run_dir``.

    The base labels are ``labels`` or the file the classifier was trained on (its checkpoint
    records the path). A run directory that already holds a fine-tuned classifier and its
    labelled frames (a resumed run) starts from those. ``defer``: ask without waiting (the
    actor, whose episode loop holds the step until the answer comes)."""
    from robot_rl.rewards.classifier import load_classifier, read_classifier_config
    from robot_rl.rewards.labels import load_labels
    from robot_rl.rewards.wrapper import ClassifierReward

    while not isinstance(env, ClassifierReward):  # it may sit under other wrappers
        if not hasattr(env, "env"):
            raise ValueError("relabelling false positives needs a reward classifier env")
        env = env.env
    classifier = env.classifier
    trained_threshold = classifier.config.threshold
    if labels is None:
        _, metrics = read_classifier_config(env.checkpoint)
        labels = metrics.get("labels")
        if labels is None:
            raise ValueError(
                f"{env.checkpoint} does not record its label file: pass the labels explicitly"
            )
    base = load_labels(labels)
    run_dir = Path(run_dir)
    labelled = None
    if (run_dir / CLASSIFIER_DIR).is_dir() and (run_dir / RELABELLED_FILE).is_file():
        classifier = load_classifier(run_dir / CLASSIFIER_DIR)
        labelled = load_labels(run_dir / RELABELLED_FILE)
    relabeler = FalsePositiveRelabeler(
        classifier,
        base,
        labeler,
        config,
        save_dir=run_dir,
        log=log,
        labelled=labelled,
        trained_threshold=trained_threshold,
    )
    relabeler.defer = defer
    env.classifier = classifier
    env.relabeler = relabeler
    return relabeler
