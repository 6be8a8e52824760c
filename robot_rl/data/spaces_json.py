"""Observation/action spaces as plain JSON, so replay files and logs need no pickle.

Bounds are stored as one number when every element is equal (the usual case for images and
normalised actions) and as a nested list otherwise; ``inf`` round-trips through Python's JSON.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


def _bound_to_json(bound: np.ndarray) -> Any:
    flat = bound.reshape(-1)
    if flat.size and np.all(flat == flat[0]):
        return flat[0].item()
    return bound.tolist()


def box_to_json(space: gym.spaces.Box) -> dict:
    return {
        "shape": list(space.shape),
        "dtype": np.dtype(space.dtype).str,
        "low": _bound_to_json(np.asarray(space.low)),
        "high": _bound_to_json(np.asarray(space.high)),
    }


def box_from_json(spec: dict) -> gym.spaces.Box:
    dtype = np.dtype(spec["dtype"])
    shape = tuple(spec["shape"])
    low = np.broadcast_to(np.asarray(spec["low"], dtype=dtype), shape)
    high = np.broadcast_to(np.asarray(spec["high"], dtype=dtype), shape)
    return gym.spaces.Box(low=low, high=high, shape=shape, dtype=dtype)


def dict_space_to_json(space: gym.spaces.Dict) -> dict:
    for key, sub in space.spaces.items():
        if not isinstance(sub, gym.spaces.Box):
            raise ValueError(
                f"observation key {key!r}: only Box sub-spaces are supported, got {sub}"
            )
    return {key: box_to_json(sub) for key, sub in space.spaces.items()}


def dict_space_from_json(spec: dict) -> gym.spaces.Dict:
    return gym.spaces.Dict({key: box_from_json(sub) for key, sub in spec.items()})


def describe_differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Human-readable list of where two JSON-like values differ (``path: a != b``)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        lines = []
        for key in sorted(set(ours) | set(theirs), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in ours:
                lines.append(f"{sub}: only in the log ({theirs[key]!r})")
            elif key not in theirs:
                lines.append(f"{sub}: missing from the log (expected {ours[key]!r})")
            else:
                lines.extend(describe_differences(ours[key], theirs[key], sub))
        return lines
    if ours != theirs:
        return [f"{path or 'value'}: expected {ours!r}, log has {theirs!r}"]
    return []
