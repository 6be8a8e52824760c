"""A camera frame at the task's image size: the one rule every source of images follows (the ROS
backend's camera topics, imported LeRobot videos and ROS 2 bags). Pure numpy."""

from __future__ import annotations

import numpy as np


def centre_square(height: int, width: int) -> tuple[int, int, int]:
    """The centred square crop of a ``height`` x ``width`` image: ``(top, left, side)``."""
    side = min(height, width)
    return (height - side) // 2, (width - side) // 2, side


def fit_image(image: np.ndarray, size: int) -> np.ndarray:
    """Centre-crop to a square and resample (nearest) to ``size`` x ``size``."""
    height, width = image.shape[:2]
    if height == width == size:
        return image
    top, left, side = centre_square(height, width)
    index = (np.arange(size) * side / size).astype(int)
    return image[top + index][:, left + index]
