"""Replay buffer that stores each observation frame once.

Two rings: a frame store (``frame_capacity`` slots, one array per observation key) and a
transition ring (``capacity`` entries of obs slot, next-obs slot, action, reward, flags, extras).
An observation reuses the frame its stream stored as the previous next observation, so an episode
of T steps costs T + 1 frames rather than 2T. Transitions are addressed by *logical* index:
0 is the oldest valid transition, ``len(buffer) - 1`` the newest.

Frames and transitions both leave in FIFO order. When a frame slot is overwritten, every
transition that still refers to the old frame must go: the valid window's tail moves past the
newest transition that used it. With interleaved streams a reused frame can be a little older
than its neighbours, so this may drop a few (about two per stream) still-intact transitions
early; ``frame_capacity``'s default slack (capacity // 10 + 2) absorbs that.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from robot_rl.data.durable_log import DurableLog
from robot_rl.data.spaces_json import (
    box_from_json,
    box_to_json,
    dict_space_from_json,
    dict_space_to_json,
)

LOG_FILE_NAME = "replay.log"
SAVE_FORMAT_VERSION = 1


class ReplayFileError(ValueError):
    """A saved replay file that cannot be read (damaged, truncated, or not one); names it."""


ExtraFields = Mapping[str, tuple[tuple[int, ...], Any]]


class ReplayBuffer:
    def __init__(
        self,
        observation_space: gym.spaces.Dict,
        action_space: gym.spaces.Box,
        capacity: int,
        *,
        frame_capacity: int | None = None,
        extra_fields: ExtraFields | None = None,
        durable_dir: str | os.PathLike | None = None,
        fsync: str = "always",
    ):
        if not isinstance(observation_space, gym.spaces.Dict):
            raise ValueError(
                f"observation_space must be a gymnasium Dict space, got {observation_space}"
            )
        if not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
            raise ValueError(f"action_space must be a 1-d gymnasium Box, got {action_space}")
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        frame_capacity = capacity + capacity // 10 + 2 if frame_capacity is None else frame_capacity
        if frame_capacity < 2:
            raise ValueError(
                f"frame_capacity must be >= 2 (obs and next obs), got {frame_capacity}"
            )
        self._obs_spec = dict_space_to_json(observation_space)  # also rejects non-Box keys
        self.observation_space = observation_space
        self.action_space = action_space
        self.capacity = int(capacity)
        self.frame_capacity = int(frame_capacity)
        self.extra_fields = {
            name: (tuple(shape), np.dtype(dtype))
            for name, (shape, dtype) in (extra_fields or {}).items()
        }
        reserved = {
            "observations",
            "next_observations",
            "actions",
            "rewards",
            "terminated",
            "truncated",
        }
        clash = reserved & set(self.extra_fields)
        if clash:
            raise ValueError(f"extra field names {sorted(clash)} clash with batch keys")

        self._frames = {
            key: np.zeros((self.frame_capacity, *space.shape), space.dtype)
            for key, space in observation_space.spaces.items()
        }
        self._slot_serial = np.full(self.frame_capacity, -1, np.int64)
        # Newest transition (global count) that refers to each slot: its eviction point.
        self._slot_last_user = np.full(self.frame_capacity, -1, np.int64)
        self._frames_written = 0

        self._obs_slot = np.zeros(self.capacity, np.int64)
        self._next_slot = np.zeros(self.capacity, np.int64)
        self._actions = np.zeros((self.capacity, *action_space.shape), np.float32)
        self._rewards = np.zeros(self.capacity, np.float32)
        self._terminated = np.zeros(self.capacity, np.float32)
        self._truncated = np.zeros(self.capacity, np.float32)
        self._extras = {
            name: np.zeros((self.capacity, *shape), dtype)
            for name, (shape, dtype) in self.extra_fields.items()
        }
        self._head = 0  # transitions ever added
        self._tail = 0  # oldest valid transition (global count)
        # stream id -> (serial of its last next-obs frame, whether that transition ended)
        self._streams: dict[int, tuple[int, bool]] = {}

        self._log: DurableLog | None = None
        if durable_dir is not None:
            self._log = DurableLog(
                Path(durable_dir) / LOG_FILE_NAME, self._config_json(), fsync=fsync
            )
            # The log holds both frames of every transition; ``add`` dedups them again here.
            for record in self._log:
                self._insert(*self._record_to_transition(record))

    # ----------------------------------------------------------------------------------- adding

    def add(
        self,
        observation,
        action,
        reward,
        terminated,
        truncated,
        next_observation,
        *,
        stream=0,
        **extras,
    ) -> None:
        """Validate, copy and store one transition (and log it first in durable mode)."""
        obs = self._check_observation(observation, "observation")
        next_obs = self._check_observation(next_observation, "next_observation")
        action = np.array(action, dtype=np.float32)  # a copy: callers reuse their arrays
        if action.shape != self.action_space.shape:
            raise ValueError(
                f"action: expected shape {self.action_space.shape}, got {action.shape}"
            )
        if not np.all(np.isfinite(action)):
            raise ValueError(f"action contains NaN or inf: {action}")
        reward = np.float32(reward)
        if not np.isfinite(reward):
            raise ValueError(f"reward is not finite: {reward}")
        extras = self._check_extras(extras)
        stream = int(stream)
        if self._log is not None:
            record = {f"observation/{k}": v for k, v in obs.items()}
            record.update({f"next_observation/{k}": v for k, v in next_obs.items()})
            record.update({f"extra/{k}": v for k, v in extras.items()})
            record.update(
                action=action,
                reward=np.asarray(reward),
                terminated=np.asarray(bool(terminated)),
                truncated=np.asarray(bool(truncated)),
                stream=np.asarray(stream, np.int64),
            )
            self._log.append(record)
        self._insert(
            obs, action, reward, bool(terminated), bool(truncated), next_obs, stream, extras
        )

    def _check_observation(self, observation, what: str) -> dict[str, np.ndarray]:
        if not isinstance(observation, Mapping):
            raise ValueError(f"{what} must be a dict of arrays, got {type(observation).__name__}")
        unexpected = set(observation) - set(self.observation_space.spaces)
        if unexpected:
            raise ValueError(f"{what} has unexpected keys {sorted(unexpected)}")
        checked = {}
        for key, space in self.observation_space.spaces.items():
            if key not in observation:
                raise ValueError(
                    f"{what} is missing key {key!r} (shape {space.shape}, {space.dtype})"
                )
            value = np.asarray(observation[key])
            if value.shape != space.shape:
                raise ValueError(
                    f"{what}[{key!r}]: expected shape {space.shape}, got {value.shape}"
                )
            if np.issubdtype(space.dtype, np.floating):
                if not (
                    np.issubdtype(value.dtype, np.floating)
                    or np.issubdtype(value.dtype, np.integer)
                ):
                    raise ValueError(f"{what}[{key!r}]: expected {space.dtype}, got {value.dtype}")
                value = value.astype(space.dtype)  # always a copy
                if not np.all(np.isfinite(value)):
                    raise ValueError(f"{what}[{key!r}] contains NaN or inf")
            elif value.dtype != space.dtype:
                # Casting integers (pixels) could wrap silently, so they must match exactly.
                raise ValueError(
                    f"{what}[{key!r}]: expected dtype {space.dtype}, got {value.dtype}"
                )
            else:
                value = value.copy()
            checked[key] = value
        return checked

    def _check_extras(self, extras: Mapping[str, Any]) -> dict[str, np.ndarray]:
        unknown = set(extras) - set(self.extra_fields)
        if unknown:
            raise ValueError(
                f"unknown extra fields {sorted(unknown)}; declared: {sorted(self.extra_fields)}"
            )
        checked = {}
        for name, (shape, dtype) in self.extra_fields.items():
            # An extra field left out is zero (e.g. intervened=False).
            value = np.array(extras.get(name, np.zeros(shape, dtype)))
            if value.shape != shape:
                raise ValueError(f"extra field {name!r}: expected shape {shape}, got {value.shape}")
            if np.issubdtype(value.dtype, np.floating) and not np.all(np.isfinite(value)):
                raise ValueError(f"extra field {name!r} contains NaN or inf")
            checked[name] = value.astype(dtype)
        return checked

    def _record_to_transition(self, record: dict[str, np.ndarray]) -> tuple:
        obs = {k: record[f"observation/{k}"] for k in self._frames}
        next_obs = {k: record[f"next_observation/{k}"] for k in self._frames}
        extras = {k: record[f"extra/{k}"] for k in self.extra_fields}
        return (
            obs,
            record["action"],
            np.float32(record["reward"]),
            bool(record["terminated"]),
            bool(record["truncated"]),
            next_obs,
            int(record["stream"]),
            extras,
        )

    def _write_frame(self, frame: dict[str, np.ndarray]) -> int:
        slot = self._frames_written % self.frame_capacity
        if self._slot_serial[slot] >= 0:
            # The old frame dies: so does every transition that refers to it.
            self._tail = max(self._tail, int(self._slot_last_user[slot]) + 1)
            self._slot_last_user[slot] = -1
        for key, value in frame.items():
            self._frames[key][slot] = value
        self._slot_serial[slot] = self._frames_written
        self._frames_written += 1
        return slot

    def _insert(self, obs, action, reward, terminated, truncated, next_obs, stream, extras) -> None:
        obs_slot = self._reusable_slot(stream, obs)
        if obs_slot is None:
            obs_slot = self._write_frame(obs)
        next_slot = self._write_frame(next_obs)
        self._tail = max(self._tail, self._head + 1 - self.capacity)
        position = self._head % self.capacity
        self._obs_slot[position] = obs_slot
        self._next_slot[position] = next_slot
        self._actions[position] = action
        self._rewards[position] = reward
        self._terminated[position] = terminated
        self._truncated[position] = truncated
        for name, value in extras.items():
            self._extras[name][position] = value
        self._slot_last_user[obs_slot] = self._head
        self._slot_last_user[next_slot] = self._head
        self._head += 1
        self._streams[stream] = (int(self._slot_serial[next_slot]), terminated or truncated)

    def _reusable_slot(self, stream: int, obs: dict[str, np.ndarray]) -> int | None:
        """The stream's previous next-obs slot when it continues the episode with equal data."""
        if stream not in self._streams:
            return None
        serial, ended = self._streams[stream]
        # It must also survive the next-obs frame this add writes.
        if ended or serial < self._frames_written + 1 - self.frame_capacity:
            return None
        slot = serial % self.frame_capacity
        if all(np.array_equal(self._frames[k][slot], v) for k, v in obs.items()):
            return slot
        return None

    # --------------------------------------------------------------------------------- sampling

    def __len__(self) -> int:
        return self._head - self._tail

    @property
    def nbytes(self) -> int:
        """Bytes held by the stored arrays (frames, transitions, bookkeeping)."""
        arrays = [
            *self._frames.values(),
            *self._extras.values(),
            self._slot_serial,
            self._slot_last_user,
            self._obs_slot,
            self._next_slot,
            self._actions,
            self._rewards,
            self._terminated,
            self._truncated,
        ]
        return sum(a.nbytes for a in arrays)

    def sample_indices(self, rng: np.random.Generator, size: int) -> np.ndarray:
        if len(self) == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        return rng.integers(0, len(self), size=size)

    def _positions(self, indices) -> np.ndarray:
        indices = np.asarray(indices, dtype=np.int64)
        if indices.size and (indices.min() < 0 or indices.max() >= len(self)):
            raise ValueError(f"transition indices must lie in [0, {len(self)}), got {indices}")
        return (self._tail + indices) % self.capacity

    def gather(self, indices, *, skip_obs_keys: Sequence[str] = ()) -> dict:
        positions = self._positions(indices)
        obs_slot, next_slot = self._obs_slot[positions], self._next_slot[positions]
        keys = [k for k in self._frames if k not in skip_obs_keys]
        batch = {
            "observations": {k: self._frames[k][obs_slot] for k in keys},
            "next_observations": {k: self._frames[k][next_slot] for k in keys},
            "actions": self._actions[positions],
            "rewards": self._rewards[positions],
            "terminated": self._terminated[positions],
            "truncated": self._truncated[positions],
        }
        for name, values in self._extras.items():
            batch[name] = values[positions]
        return batch

    def sample(self, rng: np.random.Generator, size: int) -> dict:
        return self.gather(self.sample_indices(rng, size))

    def frame_slots(self, indices) -> tuple[np.ndarray, np.ndarray]:
        positions = self._positions(indices)
        return self._obs_slot[positions], self._next_slot[positions]

    def frame_serials(self, slots) -> np.ndarray:
        """Id of the frame in each slot (-1: never written); grows with every write."""
        return self._slot_serial[np.asarray(slots, dtype=np.int64)]

    def frames(self, key: str, slots) -> np.ndarray:
        return self._frames[key][np.asarray(slots, dtype=np.int64)]

    # ------------------------------------------------------------------------------ persistence

    def _config_json(self) -> dict:
        return {
            "observation_space": self._obs_spec,
            "action_space": box_to_json(self.action_space),
            "extra_fields": {
                name: {"shape": list(shape), "dtype": dtype.str}
                for name, (shape, dtype) in self.extra_fields.items()
            },
        }

    def close(self) -> None:
        """Flush and close the durable log (if any); the buffer stays usable for sampling."""
        if self._log is not None:
            self._log.close()
            self._log = None

    def save(self, path: str | os.PathLike) -> None:
        """Write the whole state to one ``.npz`` file atomically (tmp file, fsync, rename)."""
        path = Path(path)
        keys = list(self._frames)
        streams = sorted(self._streams)
        meta = {
            "format_version": SAVE_FORMAT_VERSION,
            **self._config_json(),
            "capacity": self.capacity,
            "frame_capacity": self.frame_capacity,
            "observation_keys": keys,
            "extra_names": list(self._extras),
            "frames_written": self._frames_written,
            "head": self._head,
            "tail": self._tail,
        }
        # Only the slots written so far: the arrays are preallocated for the whole capacity (a
        # pixel run's frame store is tens of GB of zeros until it fills), and load() fills the
        # same prefix of a fresh buffer.
        slots = min(self._frames_written, self.frame_capacity)
        entries = min(self._head, self.capacity)
        arrays = {
            "meta": np.frombuffer(json.dumps(meta).encode(), np.uint8),
            "slot_serial": self._slot_serial[:slots],
            "slot_last_user": self._slot_last_user[:slots],
            "obs_slot": self._obs_slot[:entries],
            "next_slot": self._next_slot[:entries],
            "actions": self._actions[:entries],
            "rewards": self._rewards[:entries],
            "terminated": self._terminated[:entries],
            "truncated": self._truncated[:entries],
            "stream_ids": np.asarray(streams, np.int64),
            "stream_serials": np.asarray([self._streams[s][0] for s in streams], np.int64),
            "stream_ended": np.asarray([self._streams[s][1] for s in streams], bool),
        }
        # Array names by position: observation keys may hold characters a zip name cannot.
        arrays.update({f"frames_{i}": self._frames[k][:slots] for i, k in enumerate(keys)})
        arrays.update({f"extra_{i}": self._extras[k][:entries] for i, k in enumerate(self._extras)})
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as file:
            np.savez(file, **arrays)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> ReplayBuffer:
        """A (non-durable) buffer in exactly the state that ``save`` wrote; ReplayFileError
        (one line naming the file) when the file is missing, truncated or damaged."""
        try:
            return cls._load(path)
        except ReplayFileError:
            raise
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as err:
            raise ReplayFileError(
                f"{path}: cannot read this replay file ({type(err).__name__}: {err}); it is "
                "damaged or incomplete"
            ) from err

    @classmethod
    def _load(cls, path: str | os.PathLike) -> ReplayBuffer:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(data["meta"].tobytes().decode())
            if meta.get("format_version") != SAVE_FORMAT_VERSION:
                raise ReplayFileError(
                    f"{path}: replay format version {meta.get('format_version')!r}, "
                    f"expected {SAVE_FORMAT_VERSION}"
                )
            extra_fields = {
                name: (tuple(spec["shape"]), np.dtype(spec["dtype"]))
                for name, spec in meta["extra_fields"].items()
            }
            buffer = cls(
                dict_space_from_json(meta["observation_space"]),
                box_from_json(meta["action_space"]),
                meta["capacity"],
                frame_capacity=meta["frame_capacity"],
                extra_fields=extra_fields,
            )
            # a prefix of each array (whole arrays in files written before saves were trimmed)
            for i, key in enumerate(meta["observation_keys"]):
                _fill_prefix(buffer._frames[key], data[f"frames_{i}"])
            for i, name in enumerate(meta["extra_names"]):
                _fill_prefix(buffer._extras[name], data[f"extra_{i}"])
            for name in (
                "slot_serial",
                "slot_last_user",
                "obs_slot",
                "next_slot",
                "actions",
                "rewards",
                "terminated",
                "truncated",
            ):
                _fill_prefix(getattr(buffer, f"_{name}"), data[name])
            buffer._streams = {
                int(s): (int(serial), bool(ended))
                for s, serial, ended in zip(
                    data["stream_ids"], data["stream_serials"], data["stream_ended"], strict=True
                )
            }
        buffer._frames_written = meta["frames_written"]
        buffer._head = meta["head"]
        buffer._tail = meta["tail"]
        return buffer


def _fill_prefix(target: np.ndarray, saved: np.ndarray) -> None:
    if len(saved) > len(target) or saved.shape[1:] != target.shape[1:]:
        raise ValueError(f"saved array of shape {saved.shape} does not fit {target.shape}")
    target[: len(saved)] = saved
