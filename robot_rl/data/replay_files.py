"""A replay buffer's state in one ``.npz`` file: written atomically, read back exactly.

Split from ``replay.py`` so that the buffer's hot paths (add, sample) read in one sitting; the
format is unchanged (``SAVE_FORMAT_VERSION`` 1), so files written before the split still load.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from robot_rl.data.spaces_json import box_from_json, dict_space_from_json

if TYPE_CHECKING:
    from robot_rl.data.replay import ReplayBuffer

SAVE_FORMAT_VERSION = 1

# bookkeeping arrays saved by name (each ``buffer._<name>``)
_BOOKKEEPING = (
    "slot_last_user",
    "obs_slot",
    "next_slot",
    "actions",
    "rewards",
    "terminated",
    "truncated",
)


class ReplayFileError(ValueError):
    """A saved replay file that cannot be read (damaged, truncated, or not one); names it."""


def save_replay(buffer: ReplayBuffer, path: str | os.PathLike) -> None:
    """Write the whole state to one ``.npz`` file atomically (tmp file, fsync, rename)."""
    path = Path(path)
    keys = list(buffer._frames)
    streams = sorted(buffer._streams)
    meta = {
        "format_version": SAVE_FORMAT_VERSION,
        **buffer._config_json(),
        "capacity": buffer.capacity,
        "frame_capacity": buffer.frame_capacity,
        "observation_keys": keys,
        "extra_names": list(buffer._extras),
        "frames_written": buffer._frames_written,
        "head": buffer._head,
        "tail": buffer._tail,
    }
    # Only the slots written so far: the arrays are preallocated for the whole capacity (a
    # pixel run's frame store is tens of GB of zeros until it fills), and load() fills the
    # same prefix of a fresh buffer.
    slots = min(buffer._frames_written, buffer.frame_capacity)
    entries = min(buffer._head, buffer.capacity)
    arrays = {"meta": np.frombuffer(json.dumps(meta).encode(), np.uint8)}
    for name in _BOOKKEEPING:
        prefix = slots if name.startswith("slot_") else entries
        arrays[name] = getattr(buffer, f"_{name}")[:prefix]
    arrays.update(
        stream_ids=np.asarray(streams, np.int64),
        stream_serials=np.asarray([buffer._streams[s][0] for s in streams], np.int64),
        stream_ended=np.asarray([buffer._streams[s][1] for s in streams], bool),
    )
    # Array names by position: observation keys may hold characters a zip name cannot.
    arrays.update({f"frames_{i}": buffer._frames[k][:slots] for i, k in enumerate(keys)})
    arrays.update({f"extra_{i}": buffer._extras[k][:entries] for i, k in enumerate(buffer._extras)})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as file:
        np.savez(file, **arrays)
        file.flush()
        os.fsync(file.fileno())
    os.replace(tmp, path)


def load_replay(cls: type[ReplayBuffer], path: str | os.PathLike) -> ReplayBuffer:
    """A buffer in exactly the state that ``save_replay`` wrote; ReplayFileError
    (one line naming the file) when the file is missing, truncated or damaged."""
    try:
        return _load(cls, path)
    except ReplayFileError:
        raise
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as err:
        raise ReplayFileError(
            f"{path}: cannot read this replay file ({type(err).__name__}: {err}); it is "
            "damaged or incomplete"
        ) from err


def _load(cls: type[ReplayBuffer], path: str | os.PathLike) -> ReplayBuffer:
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
        # frame_capacity comes from the file: a save made with the older default slack
        # (capacity + capacity // 10 + 2) loads with that slack.
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
        for name in _BOOKKEEPING:
            _fill_prefix(getattr(buffer, f"_{name}"), data[name])
        buffer._streams = {
            int(s): (int(serial), bool(ended), None)
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
