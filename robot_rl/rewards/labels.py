"""Labelled camera frames for the reward classifier: one ``.npz`` file, read without pickle.

Arrays: ``images`` (N, H, W, C) uint8, ``labels`` (N,) uint8 (1 success, 0 not), ``episodes``
(N,) int32 (which recorded episode a frame came from: frames of one episode are near-copies of
each other, so held-out frames must come from held-out episodes), and ``meta``, UTF-8 JSON
(camera, image size, task, labeler) as a uint8 array.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

FORMAT = "robot_rl.labels/1"


@dataclass
class LabelSet:
    images: np.ndarray
    labels: np.ndarray
    episodes: np.ndarray
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.images = np.asarray(self.images)
        self.labels = np.asarray(self.labels, np.uint8)
        self.episodes = np.asarray(self.episodes, np.int32)
        if self.images.dtype != np.uint8 or self.images.ndim != 4:
            raise ValueError(
                f"images must be uint8 (N, H, W, C), got {self.images.dtype} {self.images.shape}"
            )
        n = len(self.images)
        if self.labels.shape != (n,) or self.episodes.shape != (n,):
            raise ValueError(
                f"labels and episodes must be ({n},), got {self.labels.shape} and "
                f"{self.episodes.shape}"
            )
        if np.any(self.labels > 1):
            raise ValueError("labels must be 0 (failure) or 1 (success)")

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def positives(self) -> int:
        return int(self.labels.sum())

    def subset(self, mask: np.ndarray) -> LabelSet:
        return LabelSet(self.images[mask], self.labels[mask], self.episodes[mask], dict(self.meta))

    def split_by_episode(self, held_out: float, seed: int) -> tuple[LabelSet, LabelSet]:
        """(train, held-out): a random ``held_out`` share of the episodes, whole, drawn apart
        from the episodes that show success and from those that do not, so that precision and
        recall are measured on both classes (each group of two or more gives at least one)."""
        if not 0.0 < held_out < 1.0:
            raise ValueError(f"held_out must be in (0, 1), got {held_out}")
        episodes = np.unique(self.episodes)
        if len(episodes) < 2:
            raise ValueError("need frames from at least 2 episodes to hold some out")
        rng = np.random.default_rng(seed)
        successful = np.unique(self.episodes[self.labels.astype(bool)])
        groups = [successful, np.setdiff1d(episodes, successful)]
        chosen = []
        for group in groups:
            if len(group) >= 2:
                count = min(len(group) - 1, max(1, round(held_out * len(group))))
                chosen.append(rng.choice(group, count, replace=False))
        if not chosen:  # two episodes, one of each kind: hold out the one without success
            chosen.append(groups[1] if len(groups[1]) else groups[0][:1])
        test = np.isin(self.episodes, np.concatenate(chosen))
        return self.subset(~test), self.subset(test)


def save_labels(path: str | os.PathLike, labels: LabelSet) -> Path:
    """Write atomically (temporary file, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = json.dumps({"format": FORMAT, **labels.meta}).encode()
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as stream:
        np.savez_compressed(
            stream,
            images=labels.images,
            labels=labels.labels,
            episodes=labels.episodes,
            meta=np.frombuffer(meta, np.uint8),
        )
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(tmp, path)
    return path


def load_labels(path: str | os.PathLike) -> LabelSet:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no label file at {path} (robot-rl record-labels writes one)")
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(data["meta"].tobytes().decode())
            if meta.get("format") != FORMAT:
                raise ValueError(f"{path}: format {meta.get('format')!r}, expected {FORMAT}")
            return LabelSet(data["images"], data["labels"], data["episodes"], meta)
    except (KeyError, OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a label file ({err})") from err


def balanced_indices(labels: np.ndarray, rng: np.random.Generator, batch_size: int) -> np.ndarray:
    """``batch_size`` indices, half of them positives and half negatives (with replacement),
    so that a rare class still drives half of every gradient step."""
    positives = np.flatnonzero(labels == 1)
    negatives = np.flatnonzero(labels == 0)
    if len(positives) == 0 or len(negatives) == 0:
        raise ValueError(
            f"need both classes to train: {len(positives)} success and {len(negatives)} "
            f"failure frames"
        )
    half = batch_size // 2
    return np.concatenate([rng.choice(positives, half), rng.choice(negatives, batch_size - half)])
