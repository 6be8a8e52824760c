"""The messages of the actor <-> learner protocol and the checks a received one must pass.

Actor -> learner: ``hello`` (who it is, which task and spaces), ``transitions`` (a contiguous
run of sequence-numbered transitions, each an encoded frame of its own), ``stats`` (an
episode's figures, not durable). Learner -> actor: ``welcome`` (the next sequence number the
learner expects from this actor, the agent configuration), ``refused`` (why), ``ack``
(everything below ``next_seq`` is durably stored), ``weights`` (versioned acting parameters),
``status`` (how many received transitions training still owes updates: its lag),
``hello_first`` (the learner does not know this connection: after a learner restart).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from robot_rl.transport.wire import WireError, decode, encode

PROTOCOL_VERSION = 1
ACTOR_KINDS = ("hello", "transitions", "stats")
LEARNER_KINDS = ("welcome", "refused", "ack", "weights", "status", "hello_first")
MAX_ACTOR_ID = 64
MAX_BATCH = 4096
TRANSITION_FIELDS = ("obs", "next_obs", "action", "reward", "terminated", "truncated", "intervened")


def require(message: Mapping, field: str, kind: type | tuple[type, ...]) -> Any:
    """``message[field]`` if it has type ``kind`` (bool is not an int here), else WireError."""
    if field not in message:
        raise WireError(f"{message.get('kind', 'message')!r} lacks field {field!r}")
    value = message[field]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise WireError(f"field {field!r} must be {kind}, got bool")
    if not isinstance(value, kinds):
        raise WireError(f"field {field!r} must be {kind}, got {type(value).__name__}")
    return value


def message_kind(message: Mapping, allowed: tuple[str, ...]) -> str:
    kind = message.get("kind")
    if kind not in allowed:
        raise WireError(f"unknown message kind {kind!r}; expected one of {', '.join(allowed)}")
    return kind


def actor_id_of(message: Mapping) -> str:
    actor = require(message, "actor", str)
    if not 0 < len(actor) <= MAX_ACTOR_ID or not actor.isprintable():
        raise WireError(f"actor id must be 1-{MAX_ACTOR_ID} printable characters, got {actor!r}")
    return actor


# --------------------------------------------------------------------------- transitions


def encode_transition(
    obs: Mapping[str, np.ndarray],
    action: np.ndarray,
    reward: float,
    terminated: bool,
    truncated: bool,
    next_obs: Mapping[str, np.ndarray],
    intervened: bool = False,
) -> bytes:
    return encode(
        {
            "obs": {k: np.asarray(v) for k, v in obs.items()},
            "next_obs": {k: np.asarray(v) for k, v in next_obs.items()},
            "action": np.asarray(action, np.float32),
            "reward": float(reward),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "intervened": bool(intervened),
        }
    )


def _check_observation(value: Any, space: gym.spaces.Dict, what: str) -> dict[str, np.ndarray]:
    if not isinstance(value, dict) or set(value) != set(space.spaces):
        keys = sorted(value) if isinstance(value, dict) else type(value).__name__
        raise WireError(f"{what}: keys {keys}, expected {sorted(space.spaces)}")
    for key, sub in space.spaces.items():
        array = value[key]
        if not isinstance(array, np.ndarray):
            raise WireError(f"{what}[{key!r}] is not an array")
        if array.shape != sub.shape or array.dtype != sub.dtype:
            raise WireError(
                f"{what}[{key!r}]: {array.dtype}{list(array.shape)}, "
                f"expected {sub.dtype}{list(sub.shape)}"
            )
        if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
            raise WireError(f"{what}[{key!r}] contains NaN or inf")
    return value


def decode_transition(
    frame: bytes, observation_space: gym.spaces.Dict, action_space: gym.spaces.Box
) -> dict:
    """A transition dict that fits the spaces exactly, or WireError saying what does not."""
    if not isinstance(frame, bytes):
        raise WireError(f"a transition is an encoded frame, got {type(frame).__name__}")
    message = decode(frame)
    if set(message) != set(TRANSITION_FIELDS):
        raise WireError(
            f"transition fields {sorted(message)}, expected {sorted(TRANSITION_FIELDS)}"
        )
    _check_observation(message["obs"], observation_space, "obs")
    _check_observation(message["next_obs"], observation_space, "next_obs")
    action = message["action"]
    if (
        not isinstance(action, np.ndarray)
        or action.dtype != np.float32
        or action.shape != action_space.shape
    ):
        raise WireError(f"action must be float32{list(action_space.shape)}")
    if not np.all(np.isfinite(action)) or np.any(np.abs(action) > 1.0 + 1e-6):
        raise WireError(f"action must be finite and within [-1, 1], got {action}")
    reward = require(message, "reward", (float, int))
    if not np.isfinite(reward):
        raise WireError(f"reward is not finite: {reward}")
    for flag in ("terminated", "truncated", "intervened"):
        require(message, flag, bool)
    return message
