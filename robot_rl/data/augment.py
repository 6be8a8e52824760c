"""DrQ random shift in numpy, for augmenting frames before a frozen encoder embeds them."""

from __future__ import annotations

import numpy as np


def random_shift(rng: np.random.Generator, images: np.ndarray, pad: int) -> np.ndarray:
    """Pad each [n, H, W, C] image by ``pad`` replicated edge pixels, crop back at a random offset:
    each image its own, in [0, 2 * pad] along each axis (a shift of up to ``pad``)."""
    if images.ndim != 4:
        raise ValueError(f"random_shift expects [n, H, W, C] images, got shape {images.shape}")
    if pad == 0:
        return images.copy()
    count, height, width, _ = images.shape
    padded = np.pad(images, ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="edge")
    offsets = rng.integers(0, 2 * pad + 1, size=(count, 2))
    rows = offsets[:, :1] + np.arange(height)  # [n, H]
    cols = offsets[:, 1:] + np.arange(width)  # [n, W]
    return padded[np.arange(count)[:, None, None], rows[:, :, None], cols[:, None, :]]
