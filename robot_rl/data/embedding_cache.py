"""Features of a frozen image encoder, computed once per stored frame instead of every update.

DrQ's augmentation is kept: each replay frame is embedded in ``num_views`` views (view 0
unshifted, the others random shifts of up to ``pad`` pixels), and every gathered element picks a
random view for its observation and, independently, one for its next observation. On top, feature
maps of at least ``MIN_SHIFT_CELLS`` cells a side are shifted at gather time by a fresh random
offset of up to ``feature_shift`` cells (edges repeated), independently for both; smaller maps (a
ResNet's) keep their cached views only. Rows are computed lazily at gather time or eagerly by
``refresh()``; each remembers its frame's serial, so a replay slot overwritten with a new frame
is recomputed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from robot_rl.data.augment import random_shift
from robot_rl.data.replay import ReplayBuffer

MIN_SHIFT_CELLS = 8
"""Feature maps smaller than this (cells a side) are not shifted: a cell would be too coarse."""


class EmbeddingCache:
    def __init__(
        self,
        buffer: ReplayBuffer,
        image_keys: Sequence[str],
        embed_fn: Callable[[np.ndarray], np.ndarray],
        *,
        num_views: int = 4,
        pad: int = 4,
        chunk_size: int = 256,
        dtype=np.float16,
        seed: int = 0,
        bucket_sizes: bool = True,
        feature_shift: int = 0,
    ):
        """``bucket_sizes`` rounds each embed_fn call up to a power of two (at most
        ``chunk_size`` rows, padding by repeating a frame) so a jitted embed_fn compiles for a
        handful of batch shapes, not one per distinct number of new frames."""
        missing = [k for k in image_keys if k not in buffer.observation_space.spaces]
        if missing:
            raise ValueError(f"image keys {missing} are not observation keys of the buffer")
        if num_views < 1 or chunk_size < 1 or pad < 0 or feature_shift < 0:
            raise ValueError(
                "need num_views >= 1, chunk_size >= 1, pad >= 0, feature_shift >= 0; "
                f"got {num_views}, {chunk_size}, {pad}, {feature_shift}"
            )
        self.feature_shift = feature_shift
        self.buffer = buffer
        self.image_keys = tuple(image_keys)
        self.embed_fn = embed_fn
        self.num_views = num_views
        self.pad = pad
        self.chunk_size = chunk_size
        self.dtype = np.dtype(dtype)
        self.bucket_sizes = bucket_sizes
        self._augment_rng = np.random.default_rng(seed)
        self._features: dict[str, np.ndarray] = {}  # key -> [frame_capacity, views, *feature]
        # Serial of the frame each slot was embedded from (all image keys are embedded together).
        self._embedded_serial = np.full(buffer.frame_capacity, -1, np.int64)

    def __len__(self) -> int:
        return len(self.buffer)

    def refresh(self) -> int:
        """Embed every stored frame that is new since the last time; returns how many frames."""
        return self._ensure_embedded(np.arange(self.buffer.frame_capacity))

    def _ensure_embedded(self, slots: np.ndarray) -> int:
        slots = np.unique(slots)
        serials = self.buffer.frame_serials(slots)
        stale = (serials >= 0) & (serials != self._embedded_serial[slots])
        slots, serials = slots[stale], serials[stale]
        for start in range(0, len(slots), self.chunk_size):
            chunk = slots[start : start + self.chunk_size]
            for key in self.image_keys:
                self._embed_chunk(key, chunk)
            self._embedded_serial[chunk] = serials[start : start + self.chunk_size]
        return len(slots)

    def _embed_chunk(self, key: str, slots: np.ndarray) -> None:
        pixels = self.buffer.frames(key, slots)
        for view in range(self.num_views):
            images = pixels if view == 0 else random_shift(self._augment_rng, pixels, self.pad)
            features = self._call_embed(images)
            if key not in self._features:
                self._features[key] = np.zeros(
                    (self.buffer.frame_capacity, self.num_views, *features.shape[1:]), self.dtype
                )
            self._features[key][slots, view] = features

    def _call_embed(self, images: np.ndarray) -> np.ndarray:
        count = len(images)
        rows = count
        if self.bucket_sizes:
            rows = min(self.chunk_size, 1 << (count - 1).bit_length())
        if rows > count:
            filler = np.repeat(images[-1:], rows - count, axis=0)
            images = np.concatenate([images, filler])
        features = np.asarray(self.embed_fn(images))
        if features.shape[0] != rows:
            raise ValueError(
                f"embed_fn returned {features.shape[0]} rows for {rows} images "
                f"(feature shape {features.shape})"
            )
        return features[:count]

    def gather(self, indices, rng: np.random.Generator) -> dict:
        """Like ``buffer.gather``, with float32 features in place of pixels for ``image_keys``."""
        indices = np.asarray(indices, dtype=np.int64)
        batch = self.buffer.gather(indices, skip_obs_keys=self.image_keys)
        obs_slots, next_slots = self.buffer.frame_slots(indices)
        self._ensure_embedded(np.concatenate([obs_slots, next_slots]))
        if len(indices) == 0 and not self._features:
            self.refresh()  # to learn the feature shape for an empty batch
        for key in self.image_keys:
            features = self._features[key]
            obs_view = rng.integers(0, self.num_views, size=len(indices))
            next_view = rng.integers(0, self.num_views, size=len(indices))
            obs_features = features[obs_slots, obs_view].astype(np.float32)
            next_features = features[next_slots, next_view].astype(np.float32)
            batch["observations"][key] = self._shift(obs_features, rng)
            batch["next_observations"][key] = self._shift(next_features, rng)
        return batch

    def shift_cells(self, feature_shape: tuple[int, ...]) -> int:
        """The largest shift (cells) applied to feature maps of this shape (``[h, w, c]``)."""
        if len(feature_shape) != 3 or min(feature_shape[:2]) < MIN_SHIFT_CELLS:
            return 0
        return self.feature_shift

    def _shift(self, features: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Each map in ``[B, h, w, c]`` moved by its own random offset in [-s, s] cells per axis,
        edge cells repeated (DrQ's random shift, on the feature map)."""
        s = self.shift_cells(features.shape[1:])
        if s == 0 or len(features) == 0:
            return features
        count, height, width = features.shape[:3]
        padded = np.pad(features, ((0, 0), (s, s), (s, s), (0, 0)), mode="edge")
        dy = rng.integers(0, 2 * s + 1, count)
        dx = rng.integers(0, 2 * s + 1, count)
        rows = (dy[:, None] + np.arange(height))[:, :, None]
        cols = (dx[:, None] + np.arange(width))[:, None, :]
        return padded[np.arange(count)[:, None, None], rows, cols]

    def sample(self, rng: np.random.Generator, size: int) -> dict:
        return self.gather(self.buffer.sample_indices(rng, size), rng)
