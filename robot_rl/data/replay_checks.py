"""What ``ReplayBuffer.add`` checks, without copying: shapes, dtypes, finite values.

Each check returns the caller's own arrays where they already have the stored dtype, so the
buffer's copy into its slot is the only copy of a frame. Float values are checked after the
cast to the stored dtype (a float64 that overflows float32 is infinite where it is stored);
integer arrays (pixels) must match the stored dtype exactly, since casting could wrap.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

# (key, shape, dtype, its finiteness check: None for integer keys) per observation key, in
# the space's order
Layout = tuple[tuple[str, tuple[int, ...], np.dtype, Callable[[np.ndarray], bool] | None], ...]
_sum = np.add.reduce  # ndarray.sum without its Python wrapper: a third of a small sum's time
_FLOAT32 = np.dtype(np.float32)
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_SHORT = 64  # a 1-d float array up to this long is checked by ``short_all_finite``


def all_finite(values: np.ndarray) -> bool:
    """No NaN or infinity in a float array: its sum is finite (one cheap reduction) unless
    something in it is not, or the finite values overflow (then it looks at each)."""
    return math.isfinite(_sum(values, axis=None)) or bool(np.isfinite(values).all())


def short_all_finite(values: np.ndarray) -> bool:
    """``all_finite`` for a short vector (a state, an action): summed as a Python list, at
    half a ufunc call's overhead."""
    return math.isfinite(sum(values.tolist())) or bool(np.isfinite(values).all())


def finiteness_check(shape: tuple[int, ...], dtype: np.dtype):
    """The finiteness check for values of this shape and dtype; None for integers."""
    if not np.issubdtype(dtype, np.floating):
        return None
    return short_all_finite if len(shape) == 1 and shape[0] <= _SHORT else all_finite


def observation_layout(space) -> Layout:
    return tuple(
        (key, sub.shape, sub.dtype, finiteness_check(sub.shape, sub.dtype))
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
    for key, shape, dtype, finite in layout:
        value = observation.get(key)
        if type(value) is not np.ndarray or value.shape != shape or value.dtype is not dtype:
            value = _coerce(value, key, shape, dtype, finite is not None, what)
        if finite is not None and not finite(value):
            raise ValueError(f"{what}[{key!r}] contains NaN or inf")
        checked[key] = value
    return checked


def _coerce(value, key: str, shape: tuple[int, ...], dtype: np.dtype, floating: bool, what: str):
    """``value`` as an array of ``shape`` in ``dtype``, or a ValueError saying why not: float
    keys take any real number type (cast), integer keys (pixels) only their own dtype."""
    if value is None:
        raise ValueError(f"{what} is missing key {key!r} (shape {shape}, {dtype})")
    what = f"{what}[{key!r}]"
    value = np.asarray(value)
    if value.shape != shape:
        raise ValueError(f"{what}: expected shape {shape}, got {value.shape}")
    if floating:
        if value.dtype.kind not in "fiu":
            raise ValueError(f"{what}: expected {dtype}, got {value.dtype}")
        return value.astype(dtype, copy=False)
    if value.dtype != dtype:
        raise ValueError(f"{what}: expected dtype {dtype}, got {value.dtype}")
    return value


def check_action(shape: tuple[int, ...], action) -> np.ndarray:
    if type(action) is not np.ndarray or action.dtype is not _FLOAT32:
        action = np.asarray(action, dtype=_FLOAT32)
    if action.shape != shape:
        raise ValueError(f"action: expected shape {shape}, got {action.shape}")
    if not (short_all_finite if shape[0] <= _SHORT else all_finite)(action):
        raise ValueError(f"action contains NaN or inf: {action}")
    return action


def check_reward(reward) -> float:
    """The reward as a float that float32 holds: a NaN, an infinity or a float64 beyond
    float32's range (infinite where it is stored) is refused."""
    value = float(reward)
    if not abs(value) <= _FLOAT32_MAX:  # NaN compares false
        raise ValueError(f"reward is not finite in float32: {reward}")
    return value


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
