"""The messages of the actor <-> learner protocol and the checks a received one must pass.

Actor -> learner: ``hello`` (identity, task, spaces, outbox, the learner run it last fed, its
first held sequence number), ``transitions`` (a contiguous run of sequence-numbered transitions,
each encoded on its own), ``stats`` (an episode's figures, not durable), ``heartbeat``. Learner ->
actor: ``welcome`` (run, next expected sequence number, agent config), ``refused`` (why, ``of``
which message), ``ack`` (all below ``next_seq`` durably stored), ``weights`` (versioned acting
parameters), ``status`` (updates owed, lag and, optional so the protocol version stays,
``updates``), ``hello_first`` (an unknown connection). Every value is checked in the dtype it is
stored in and against ``value_bound`` before it is acknowledged, logged or trained on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from robot_rl.data.transition import Transition
from robot_rl.transport.wire import WireError, decode, encode

PROTOCOL_VERSION = 2
ACTOR_KINDS = ("hello", "transitions", "stats", "heartbeat")
LEARNER_KINDS = ("welcome", "refused", "ack", "weights", "status", "hello_first")
MAX_ACTOR_ID = 64
MAX_BATCH = 4096
MAX_NAME = 128
DEFAULT_VALUE_BOUND = 1e6
"""Largest magnitude of a reward or an observation entry the learner stores (configurable)."""
EPISODE_FIGURES = ("return", "length", "success", "intervention_rate")
MAX_EPISODE_LENGTH = 10_000_000
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


def optional_name(message: Mapping, field: str) -> str | None:
    """``message[field]``: None, or a short printable string (a run or outbox identity)."""
    value = message.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= MAX_NAME or not value.isprintable():
        raise WireError(f"field {field!r} must be 1-{MAX_NAME} printable characters or nil")
    return value


def non_negative(message: Mapping, field: str) -> int:
    value = require(message, field, int)
    if value < 0:
        raise WireError(f"field {field!r} must be >= 0, got {value}")
    return value


def json_like(value: Any, field: str, depth: int = 0) -> Any:
    """``value`` if it is plain JSON (what a space or a configuration is), else WireError: an
    array or bytes where a comparison expects JSON would raise deep inside the comparison."""
    if depth > 16:
        raise WireError(f"field {field!r} is nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        for item in value:
            json_like(item, field, depth + 1)
        return value
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise WireError(f"field {field!r} has a key of type {type(key).__name__}")
            json_like(item, field, depth + 1)
        return value
    raise WireError(f"field {field!r} must be plain JSON, holds a {type(value).__name__}")


def check_episode(episode: Any, value_bound: float = DEFAULT_VALUE_BOUND) -> dict[str, float]:
    """An actor's episode figures, each a finite number in its range, or WireError."""
    if not isinstance(episode, dict):
        raise WireError(f"episode figures must be a map, got {type(episode).__name__}")
    unknown = [key for key in episode if key not in EPISODE_FIGURES]
    if unknown:
        raise WireError(f"unknown episode figures {[repr(k)[:40] for k in unknown[:5]]}")
    clean = {}
    for key, value in episode.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise WireError(f"episode figure {key!r} must be a number, got {type(value).__name__}")
        value = float(value)
        if not np.isfinite(value):
            raise WireError(f"episode figure {key!r} is not finite: {value}")
        clean[key] = value
    for key in ("return", "length", "success"):
        if key not in clean:
            raise WireError(f"episode figures lack {key!r}")
    length = clean["length"]
    if length != int(length) or not 1 <= length <= MAX_EPISODE_LENGTH:
        raise WireError(f"episode length must be a whole number 1-{MAX_EPISODE_LENGTH}: {length}")
    if abs(clean["return"]) > value_bound * length:
        raise WireError(f"episode return {clean['return']:g} exceeds {value_bound:g} per step")
    for key in ("success", "intervention_rate"):
        if key in clean and not 0.0 <= clean[key] <= 1.0:
            raise WireError(f"episode figure {key!r} must lie in [0, 1], got {clean[key]}")
    return clean


def encode_transition(t: Transition) -> bytes:
    return encode(
        {
            "obs": {k: np.asarray(v) for k, v in t.obs.items()},
            "next_obs": {k: np.asarray(v) for k, v in t.next_obs.items()},
            "action": np.asarray(t.action, np.float32),
            "reward": float(t.reward),
            "terminated": bool(t.terminated),
            "truncated": bool(t.truncated),
            "intervened": bool(t.intervened),
        }
    )


def _check_observation(
    value: Any, space: gym.spaces.Dict, what: str, value_bound: float
) -> dict[str, np.ndarray]:
    if not isinstance(value, dict) or set(value) != set(space.spaces):
        keys = sorted(map(repr, value)) if isinstance(value, dict) else type(value).__name__
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
        # the dtype is the stored one (checked above), so these checks hold for what is stored
        if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
            raise WireError(f"{what}[{key!r}] contains NaN or inf")
        # both ends, not abs(): abs() of the smallest integer overflows to itself
        inside = not array.size or (array.max() <= value_bound and array.min() >= -value_bound)
        if array.dtype.kind in "fiu" and not inside:
            raise WireError(f"{what}[{key!r}] holds a magnitude beyond {value_bound:g}")
    return value


def stored_reward(reward: Any, value_bound: float = DEFAULT_VALUE_BOUND) -> float:
    """``reward`` as the replay stores it (float32), if that is finite and within the bound."""
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        raise WireError(f"reward must be a number, got {type(reward).__name__}")
    with np.errstate(over="ignore"):
        stored = np.float32(reward)
    if not np.isfinite(stored):
        raise WireError(f"reward is not finite as float32: {reward!r}")
    if abs(stored) > value_bound:
        raise WireError(f"reward {reward!r} exceeds the bound {value_bound:g}")
    return float(stored)


def check_values(
    obs: Mapping[str, Any],
    reward: Any,
    next_obs: Mapping[str, Any],
    value_bound: float = DEFAULT_VALUE_BOUND,
) -> None:
    """The checks of ``decode_transition`` on the values an actor is about to store: the
    actor's own guard, so nothing the learner would refuse ever blocks its outbox."""
    stored_reward(float(reward), value_bound)
    for what, observation in (("obs", obs), ("next_obs", next_obs)):
        for key, value in observation.items():
            array = np.asarray(value)
            if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
                raise WireError(f"{what}[{key!r}] contains NaN or inf")
            inside = not array.size or (array.max() <= value_bound and array.min() >= -value_bound)
            if array.dtype.kind in "fi" and not inside:
                raise WireError(f"{what}[{key!r}] holds a magnitude beyond {value_bound:g}")


def decode_transition(
    frame: bytes,
    observation_space: gym.spaces.Dict,
    action_space: gym.spaces.Box,
    value_bound: float = DEFAULT_VALUE_BOUND,
) -> Transition:
    """A transition that fits the spaces exactly and is stored as it is, or WireError saying
    what does not."""
    if not isinstance(frame, bytes):
        raise WireError(f"a transition is an encoded frame, got {type(frame).__name__}")
    message = decode(frame)
    if set(message) != set(TRANSITION_FIELDS):
        raise WireError(
            f"transition fields {sorted(map(repr, message))}, expected {sorted(TRANSITION_FIELDS)}"
        )
    _check_observation(message["obs"], observation_space, "obs", value_bound)
    _check_observation(message["next_obs"], observation_space, "next_obs", value_bound)
    action = message["action"]
    if (
        not isinstance(action, np.ndarray)
        or action.dtype != np.float32
        or action.shape != action_space.shape
    ):
        raise WireError(f"action must be float32{list(action_space.shape)}")
    if not np.all(np.isfinite(action)) or np.any(np.abs(action) > 1.0 + 1e-6):
        raise WireError(f"action must be finite and within [-1, 1], got {action}")
    reward = stored_reward(message["reward"], value_bound)
    for flag in ("terminated", "truncated", "intervened"):
        require(message, flag, bool)
    return Transition(
        message["obs"],
        action,
        reward,
        message["terminated"],
        message["truncated"],
        message["next_obs"],
        message["intervened"],
    )
