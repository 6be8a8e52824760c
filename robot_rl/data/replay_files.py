"""A replay buffer's state in one ``.npz`` file: written atomically, read back exactly.

The buffer says what its state is (``ReplayBuffer.state_dict`` / ``from_state``); this module
only writes and reads it, in format ``SAVE_FORMAT_VERSION`` 1: the state's arrays by name and
its meta as JSON bytes in the array ``meta``.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np

SAVE_FORMAT_VERSION = 1


class ReplayFileError(ValueError):
    """A saved replay file that cannot be read (damaged, truncated, or not one); names it."""


def save_replay(buffer, path: str | os.PathLike) -> None:
    """Write ``buffer.state_dict()`` to one ``.npz`` file atomically (tmp file, fsync,
    rename)."""
    path = Path(path)
    meta, arrays = buffer.state_dict()
    meta = {"format_version": SAVE_FORMAT_VERSION, **meta}
    arrays = {"meta": np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as file:
        np.savez(file, **arrays)
        file.flush()
        os.fsync(file.fileno())
    os.replace(tmp, path)


def load_replay(cls, path: str | os.PathLike):
    """``cls.from_state`` of what ``save_replay`` wrote; ReplayFileError (one line naming the
    file) when the file is missing, truncated or damaged."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(data["meta"].tobytes().decode())
            if meta.get("format_version") != SAVE_FORMAT_VERSION:
                raise ReplayFileError(
                    f"{path}: replay format version {meta.get('format_version')!r}, "
                    f"expected {SAVE_FORMAT_VERSION}"
                )
            return cls.from_state(meta, data)
    except ReplayFileError:
        raise
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as err:
        raise ReplayFileError(
            f"{path}: cannot read this replay file ({type(err).__name__}: {err}); it is "
            "damaged or incomplete"
        ) from err
