"""Replay buffer that stores each observation frame once.

Two FIFO rings: a frame store (``frame_capacity`` preallocated slots per observation key) and a
transition ring (``capacity`` entries of obs slot, next-obs slot, action, reward, flags, extras).
An observation reuses its stream's previous next-observation frame, so T steps cost T + 1 frames;
overwriting a frame drops every transition that refers to it (default ``frame_capacity`` is
``capacity + 1``: a full buffer holds about ``capacity * T / (T + 1)`` transitions). Transitions
are addressed by logical index: 0 the oldest, ``len(buffer) - 1`` the newest. An observation
whose arrays are the very ones last given as its stream's next observation is not compared, so a
caller that refills those arrays in place with other data must give copies. ``add`` copies each
array once; ``sample`` gathers a batch's frames with one ``np.take`` per key.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from robot_rl.data.replay_checks import (
    check_action,
    check_extras,
    check_observation,
    check_reward,
    observation_layout,
)
from robot_rl.data.replay_files import (
    SAVE_FORMAT_VERSION,
    ReplayFileError,
    load_replay,
    save_replay,
)
from robot_rl.data.spaces_json import (
    box_from_json,
    box_to_json,
    dict_space_from_json,
    dict_space_to_json,
)

__all__ = ["SAVE_FORMAT_VERSION", "ReplayBuffer", "ReplayFileError"]

_BOOKKEEPING = (
    "slot_last_user",
    "obs_slot",
    "next_slot",
    "actions",
    "rewards",
    "terminated",
    "truncated",
)
"""The transition ring's and frame store's bookkeeping arrays (each ``self._<name>``)."""


def _fill_prefix(target: np.ndarray, saved: np.ndarray) -> None:
    if len(saved) > len(target) or saved.shape[1:] != target.shape[1:]:
        raise ValueError(f"saved array of shape {saved.shape} does not fit {target.shape}")
    target[: len(saved)] = saved


def _probe_refcount() -> int:
    """``sys.getrefcount`` of an array held only by a dict and a local, as in ``_output``."""
    outputs = {"probe": np.empty(1)}
    array = outputs.get("probe")
    return sys.getrefcount(array)


_UNREFERENCED = _probe_refcount()


def _is_same(observation, last: dict[str, np.ndarray] | None) -> bool:
    """Whether ``observation`` holds the very arrays of ``last`` (not equal ones: the same)."""
    if last is None or type(observation) is not dict or len(observation) != len(last):
        return False
    for key, value in last.items():  # noqa: SIM110 (a generator costs twice as much here)
        if observation.get(key) is not value:
            return False
    return True


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
    ):
        if not isinstance(observation_space, gym.spaces.Dict):
            raise ValueError(
                f"observation_space must be a gymnasium Dict space, got {observation_space}"
            )
        if not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
            raise ValueError(f"action_space must be a 1-d gymnasium Box, got {action_space}")
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        frame_capacity = max(capacity + 1, 2) if frame_capacity is None else frame_capacity
        if frame_capacity < 2:
            raise ValueError(
                f"frame_capacity must be >= 2 (obs and next obs), got {frame_capacity}"
            )
        self._obs_spec = dict_space_to_json(observation_space)  # also rejects non-Box keys
        self.observation_space = observation_space
        self.action_space = action_space
        self._action_shape = action_space.shape
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

        # np.empty, not np.zeros: only slots already written are ever read (through a
        # transition or a serial >= 0), and numpy backs large empty arrays with transparent huge
        # pages, where zeros' calloc takes a page fault per 4 KiB on first touch (measured 5-15x
        # slower filling on this project's VMs).
        self._frames = {
            key: np.empty((self.frame_capacity, *space.shape), space.dtype)
            for key, space in observation_space.spaces.items()
        }
        # Each frame slot as whole 8-byte words where it can be: comparing an observation with
        # the stored frame then looks at 8 times fewer elements.
        self._frame_words = {
            key: store.reshape(self.frame_capacity, -1).view(np.uint64)
            for key, store in self._frames.items()
            if store[0].nbytes % 8 == 0 and store.dtype.itemsize <= 8
        }
        self._outputs: dict[str, np.ndarray] = {}  # sample's frame arrays, see _output
        self._layout = observation_layout(observation_space)  # what ``add`` checks per key
        self._compare_order = sorted(self._frames, key=lambda k: self._frames[k][0].nbytes)
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
        # stream id -> (serial of its last next-obs frame, whether that transition ended, the
        # arrays given as that next observation: references, not copies; not saved, None after
        # a load, when every observation is compared)
        self._streams: dict[int, tuple[int, bool, dict[str, np.ndarray] | None]] = {}

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
    ) -> int:
        """Validate, then copy and store one transition; its index (the count of transitions
        added before it: ``add_to_reward`` takes it).

        Validation reads the caller's arrays without copying them; the only copy of a frame is
        the one into its slot, so a caller may reuse its arrays as soon as this returns."""
        stream = int(stream)
        previous = self._streams.get(stream)
        # The arrays given as this stream's last next observation were checked then.
        continued = previous is not None and _is_same(observation, previous[2])
        obs = observation
        if not continued:
            obs = check_observation(self._layout, observation, "observation")
        next_obs = check_observation(self._layout, next_observation, "next_observation")
        action = check_action(self._action_shape, action)
        reward = check_reward(reward)
        extras = check_extras(self.extra_fields, extras) if (extras or self._extras) else {}
        terminated, truncated = bool(terminated), bool(truncated)

        obs_slot = None if previous is None else self._reusable_slot(previous, obs, continued)
        if obs_slot is None:
            obs_slot = self._write_frame(obs)
        next_slot = self._write_frame(next_obs)
        head = self._head
        if head + 1 - self.capacity > self._tail:
            self._tail = head + 1 - self.capacity
        position = head % self.capacity
        self._obs_slot[position] = obs_slot
        self._next_slot[position] = next_slot
        self._actions[position] = action
        self._rewards[position] = reward
        self._terminated[position] = terminated
        self._truncated[position] = truncated
        for name, value in extras.items():
            self._extras[name][position] = value
        self._slot_last_user[obs_slot] = head
        self._slot_last_user[next_slot] = head
        self._head = head + 1
        self._streams[stream] = (self._frames_written - 1, terminated or truncated, next_obs)
        return head

    def add_to_reward(self, index: int, amount: float) -> bool:
        """Add ``amount`` to the reward of transition ``index`` (what ``add`` returned); False
        when it is no longer held (overwritten)."""
        if not self._tail <= index < self._head:
            return False
        position = index % self.capacity
        self._rewards[position] = check_reward(float(self._rewards[position]) + amount)
        return True

    def _write_frame(self, frame: dict[str, np.ndarray]) -> int:
        written = self._frames_written
        slot = written % self.frame_capacity
        if written >= self.frame_capacity:
            # The old frame dies: so does every transition that refers to it.
            # (its new last user is set by the caller, add)
            last_user = self._slot_last_user.item(slot)
            if last_user >= self._tail:
                self._tail = last_user + 1
        for key, store in self._frames.items():
            store[slot] = frame[key]  # the one copy of this frame
        self._frames_written = written + 1
        return slot

    def _reusable_slot(self, previous: tuple, obs: dict[str, np.ndarray], continued: bool):
        """The stream's previous next-obs slot (``previous``: its ``_streams`` entry) when this
        observation continues the episode: with the very arrays given as that next observation
        (``continued``), or with equal data. None when it must be stored anew."""
        serial, ended, last_next = previous
        # It must also survive the next-obs frame this add writes.
        if ended or serial < self._frames_written + 1 - self.frame_capacity:
            return None
        slot = serial % self.frame_capacity
        if continued:
            return slot
        # An array that *is* the one given as this stream's last next observation is that
        # observation: ``obs = next_obs`` in the caller's loop, the trajectory continuing. Only
        # arrays that are not (decoded from the network, read back from the log, copies) are
        # compared with the stored frame, which costs as much memory traffic as storing it.
        last_next = last_next or {}
        # Small keys first: a different observation usually differs in its state already.
        # (shapes already match, values are finite: plain == is exact here)
        for key in self._compare_order:
            value, words = obs[key], self._frame_words.get(key)
            if value is last_next.get(key):
                continue
            if words is not None and value.flags.c_contiguous:
                if not (words[slot] == value.reshape(-1).view(np.uint64)).all():
                    return None
            elif not (self._frames[key][slot] == value).all():
                return None
        return slot

    def __len__(self) -> int:
        return self._head - self._tail

    @property
    def nbytes(self) -> int:
        """Bytes held by the stored arrays (frames, transitions, bookkeeping)."""
        arrays = [
            *self._frames.values(),
            *self._extras.values(),
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
        return self._gather(self._positions(indices), skip_obs_keys)

    def _gather(self, positions: np.ndarray, skip_obs_keys: Sequence[str] = ()) -> dict:
        size = len(positions)
        # obs and next-obs slots side by side: one gather per key, two contiguous halves
        slots = np.empty(2 * size, np.int64)
        np.take(self._obs_slot, positions, out=slots[:size])
        np.take(self._next_slot, positions, out=slots[size:])
        observations, next_observations = {}, {}
        for key, store in self._frames.items():
            if key in skip_obs_keys:
                continue
            both = self._output(key, (2 * size, *store.shape[1:]), store.dtype)
            # mode="clip": slots are in range by construction, and "raise" buffers ``out``
            np.take(store, slots, axis=0, out=both, mode="clip")
            observations[key], next_observations[key] = both[:size], both[size:]
        batch = {
            "observations": observations,
            "next_observations": next_observations,
            "actions": self._actions.take(positions, axis=0),
            "rewards": self._rewards.take(positions),
            "terminated": self._terminated.take(positions),
            "truncated": self._truncated.take(positions),
        }
        for name, values in self._extras.items():
            batch[name] = values.take(positions, axis=0)
        return batch

    def _output(self, key: str, shape: tuple, dtype) -> np.ndarray:
        """An array for a batch's frames: the previous batch's, when nothing outside this
        buffer refers to it any more (its batch and every view of it were dropped), else a new
        one. A learner that samples in a loop then copies frames into memory it already has,
        instead of page-faulting tens of MB of fresh memory per batch (half of sample's time
        on this project's VMs). A batch the caller still holds is never written to."""
        array = self._outputs.get(key)
        if array is None or array.shape != shape or sys.getrefcount(array) != _UNREFERENCED:
            array = np.empty(shape, dtype)
            self._outputs[key] = array
        return array

    def sample(self, rng: np.random.Generator, size: int) -> dict:
        indices = self.sample_indices(rng, size)  # in range by construction: no check
        return self._gather((self._tail + indices) % self.capacity)

    def frame_slots(self, indices) -> tuple[np.ndarray, np.ndarray]:
        positions = self._positions(indices)
        return self._obs_slot[positions], self._next_slot[positions]

    def frame_serials(self, slots) -> np.ndarray:
        """Id of the frame in each slot (-1: never written); grows with every write."""
        # Frames are written in ring order, so a slot's serial follows from the count written.
        slots = np.asarray(slots, dtype=np.int64)
        written, ring = self._frames_written, self.frame_capacity
        serials = slots + ring * ((written - 1 - slots) // ring)
        return np.where(slots < written, serials, -1)

    def frames(self, key: str, slots) -> np.ndarray:
        return self._frames[key][np.asarray(slots, dtype=np.int64)]

    def _config_json(self) -> dict:
        return {
            "observation_space": self._obs_spec,
            "action_space": box_to_json(self.action_space),
            "extra_fields": {
                name: {"shape": list(shape), "dtype": dtype.str}
                for name, (shape, dtype) in self.extra_fields.items()
            },
        }

    def state_dict(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(meta, arrays): the whole state, as plain JSON and named arrays (views, not copies),
        for ``from_state``. Only the slots written so far: the arrays are preallocated for the
        whole capacity (a pixel run's frame store is tens of GB of zeros until it fills)."""
        keys, streams = list(self._frames), sorted(self._streams)
        meta = {
            **self._config_json(),
            "capacity": self.capacity,
            "frame_capacity": self.frame_capacity,
            "observation_keys": keys,
            "extra_names": list(self._extras),
            "frames_written": self._frames_written,
            "head": self._head,
            "tail": self._tail,
        }
        slots = min(self._frames_written, self.frame_capacity)
        entries = min(self._head, self.capacity)
        arrays = {
            name: getattr(self, f"_{name}")[: slots if name.startswith("slot_") else entries]
            for name in _BOOKKEEPING
        }
        arrays.update(
            stream_ids=np.asarray(streams, np.int64),
            stream_serials=np.asarray([self._streams[s][0] for s in streams], np.int64),
            stream_ended=np.asarray([self._streams[s][1] for s in streams], bool),
        )
        # named by position: observation keys may hold characters a zip name cannot
        arrays.update({f"frames_{i}": self._frames[k][:slots] for i, k in enumerate(keys)})
        arrays.update({f"extra_{i}": self._extras[k][:entries] for i, k in enumerate(self._extras)})
        return meta, arrays

    @classmethod
    def from_state(cls, meta: dict, arrays: Mapping[str, np.ndarray]) -> ReplayBuffer:
        """A buffer in exactly the state ``state_dict`` described (``arrays`` may be a lazy
        mapping, an open ``.npz``); ValueError or KeyError when they do not fit together."""
        extra_fields = {
            name: (tuple(spec["shape"]), np.dtype(spec["dtype"]))
            for name, spec in meta["extra_fields"].items()
        }
        # frame_capacity comes from the state: one saved with the older default slack
        # (capacity + capacity // 10 + 2) loads with that slack
        buffer = cls(
            dict_space_from_json(meta["observation_space"]),
            box_from_json(meta["action_space"]),
            meta["capacity"],
            frame_capacity=meta["frame_capacity"],
            extra_fields=extra_fields,
        )
        # a prefix of each array (whole arrays in files written before saves were trimmed)
        for i, key in enumerate(meta["observation_keys"]):
            _fill_prefix(buffer._frames[key], arrays[f"frames_{i}"])
        for i, name in enumerate(meta["extra_names"]):
            _fill_prefix(buffer._extras[name], arrays[f"extra_{i}"])
        for name in _BOOKKEEPING:
            _fill_prefix(getattr(buffer, f"_{name}"), arrays[name])
        buffer._streams = {
            int(s): (int(serial), bool(ended), None)
            for s, serial, ended in zip(
                arrays["stream_ids"], arrays["stream_serials"], arrays["stream_ended"], strict=True
            )
        }
        buffer._frames_written = meta["frames_written"]
        buffer._head, buffer._tail = meta["head"], meta["tail"]
        return buffer

    def save(self, path: str | os.PathLike) -> None:
        """Write the whole state to one ``.npz`` file atomically (tmp file, fsync, rename)."""
        save_replay(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> ReplayBuffer:
        """A buffer in exactly the state that ``save`` wrote; ReplayFileError
        (one line naming the file) when the file is missing, truncated or damaged."""
        return load_replay(cls, path)
