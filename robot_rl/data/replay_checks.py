"""What ``ReplayBuffer.add`` checks, without copying: shapes, dtypes, finite values.

Each check returns the caller's own arrays where they already have the stored dtype, so the
buffer's copy into its slot is the only copy of a frame. Float values are checked after the
cast to the stored dtype (a float64 that overflows float32 is infinite where it is stored);
integer arrays (pixels) must match the stored dtype exactly, since casting could wrap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

# (key, shape, dtype, is float) per observation key, in the space's order
Layout = tuple[tuple[str, tuple[int, ...], np.dtype, bool], ...]
_sum = np.add.reduce  # ndarray.sum without its Python wrapper: a third of a small sum's time


def all_finite(values: np.ndarray) -> bool:
    """No NaN or infinity in a float array: its sum is finite (one cheap reduction) unless
    something in it is not, or the finite values overflow (then it looks at each)."""
    return math.isfinite(_sum(values, axis=None)) or bool(np.isfinite(values).all())


def observation_layout(space) -> Layout:
    return tuple(
        (key, sub.shape, sub.dtype, bool(np.issubdtype(sub.dtype, np.floating)))
        for key, sub in space.spaces.items()
    )


def check_observation(layout: Layout, observation, what: str) -> dict[str, np.ndarray]:
    """The observation's arrays, checked, in the store's dtype: the caller's own arrays
    where they already are (no copy), small cast copies for float keys that are not."""
    if type(observation) is not dict and not isinstance(observation, Mapping):
        raise ValueError(f"{what} must be a dict of arrays, got {type(observation).__name__}")
    if len(observation) != len(layout):
        unexpected = set(observation) - {entry[0] for entry in layout}
        if unexpected:
            raise ValueError(f"{what} has unexpected keys {sorted(unexpected)}")
    checked = {}
    for key, shape, dtype, floating in layout:
        value = observation.get(key)
        if value is None:
            raise ValueError(f"{what} is missing key {key!r} (shape {shape}, {dtype})")
        if type(value) is not np.ndarray:
            value = np.asarray(value)
        if value.shape != shape:
            raise ValueError(f"{what}[{key!r}]: expected shape {shape}, got {value.shape}")
        if floating:
            if value.dtype.kind not in "fiu":
                raise ValueError(f"{what}[{key!r}]: expected {dtype}, got {value.dtype}")
            value = value.astype(dtype, copy=False)
            if not all_finite(value):
                raise ValueError(f"{what}[{key!r}] contains NaN or inf")
        elif value.dtype != dtype:
            raise ValueError(f"{what}[{key!r}]: expected dtype {dtype}, got {value.dtype}")
        checked[key] = value
    return checked


def check_action(shape: tuple[int, ...], action) -> np.ndarray:
    if type(action) is not np.ndarray or action.dtype != np.float32:
        action = np.asarray(action, dtype=np.float32)
    if action.shape != shape:
        raise ValueError(f"action: expected shape {shape}, got {action.shape}")
    if not all_finite(action):
        raise ValueError(f"action contains NaN or inf: {action}")
    return action


def check_extras(fields: Mapping[str, tuple], extras: Mapping[str, Any]) -> dict[str, np.ndarray]:
    unknown = set(extras) - set(fields)
    if unknown:
        raise ValueError(f"unknown extra fields {sorted(unknown)}; declared: {sorted(fields)}")
    checked = {}
    for name, (shape, dtype) in fields.items():
        # An extra field left out is zero (e.g. intervened=False).
        value = np.asarray(extras.get(name, 0 if not shape else np.zeros(shape, dtype)))
        if value.shape != shape:
            raise ValueError(f"extra field {name!r}: expected shape {shape}, got {value.shape}")
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            raise ValueError(f"extra field {name!r} contains NaN or inf")
        checked[name] = value.astype(dtype, copy=False)
    return checked
