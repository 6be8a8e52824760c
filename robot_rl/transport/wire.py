"""The wire format: typed msgpack messages with raw numpy buffers, LZ4-compressed. No pickle.

One ZeroMQ frame holds one message::

    MAGIC (4 bytes) | u32 little-endian uncompressed length | LZ4 block of msgpack(map)
    RAW_MAGIC (4 bytes) | u32 little-endian length | msgpack(map)

The raw form carries payloads already compressed (a batch of transitions). A numpy array is
msgpack extension type 1 holding [dtype, shape, raw bytes]: plain numeric dtypes only, the byte
count matching the shape. Decoding bounds everything before it allocates, so a hostile or broken
frame costs a ``WireError``: an LZ4 body expands to at most ``LZ4_FREE_BYTES`` or ``MAX_RATIO``
times its size (the encoder sends a body beyond that uncompressed), a container holds at most
``MAX_CONTAINER_LEN`` / ``MAX_MAP_LEN`` entries and a message ``MAX_ELEMENTS`` in all.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import lz4.block
import msgpack
import numpy as np

MAGIC = b"RRL1"
RAW_MAGIC = b"RRL0"
_HEADER = struct.Struct("<4sI")
ARRAY_EXT = 1
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""Largest uncompressed message (a ResNet's weights, a batch of image transitions)."""
MAX_ARRAY_DIMS = 8
LZ4_FREE_BYTES = 1024 * 1024
"""An LZ4 body may always expand to this (a transition of blank camera images compresses ~250x)."""
MAX_RATIO = 16
"""Beyond ``LZ4_FREE_BYTES``, the most an LZ4 body may expand (weights and camera images reach
~1-10x); ``encode`` sends a body that compresses better than this raw instead."""
MAX_CONTAINER_LEN = 4096
"""Entries of one msgpack array (a batch holds at most 4096 transitions)."""
MAX_MAP_LEN = 1024
"""Entries of one msgpack map (messages, observations, configurations have a few dozen)."""
MAX_ELEMENTS = 16384
"""Entries of all containers of one message together."""
MAX_STR_LEN = 65536
ALLOWED_DTYPES = frozenset(
    np.dtype(t).str for t in (np.bool_, np.uint8, np.int32, np.int64, np.float32, np.float64)
)


class WireError(ValueError):
    """A frame that is not a valid message of this protocol; says what is wrong."""


def _default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype.str not in ALLOWED_DTYPES:
            raise TypeError(f"arrays of dtype {value.dtype} cannot be sent")
        body = msgpack.packb(
            [value.dtype.str, list(value.shape), np.ascontiguousarray(value).tobytes()],
            use_bin_type=True,
        )
        return msgpack.ExtType(ARRAY_EXT, body)
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot send a {type(value).__name__}")


def _ext_hook(code: int, data: bytes) -> np.ndarray:
    if code != ARRAY_EXT:
        raise WireError(f"unknown extension type {code}")
    try:
        dtype, shape, raw = msgpack.unpackb(
            data,
            raw=False,
            use_list=True,
            max_bin_len=len(data),
            max_str_len=16,
            max_array_len=MAX_ARRAY_DIMS,
            max_map_len=0,
            max_ext_len=0,
        )
    except (ValueError, TypeError, msgpack.UnpackException) as err:
        raise WireError(f"malformed array: {err}") from err
    if not isinstance(dtype, str) or dtype not in ALLOWED_DTYPES:
        raise WireError(f"array dtype {dtype!r} is not allowed")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_ARRAY_DIMS
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
    ):
        raise WireError(f"array shape {shape!r} is not a list of non-negative integers")
    if not isinstance(raw, bytes) or math.prod(shape) * np.dtype(dtype).itemsize != len(raw):
        raise WireError(f"array of shape {shape} and dtype {dtype} does not match its bytes")
    # A copy: frombuffer would keep the whole frame alive and read-only.
    return np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape).copy()


class _ElementBudget:
    """msgpack hooks that count the entries of every finished container and stop the decoding
    once a message holds more than ``MAX_ELEMENTS``: memory stays bounded by the budget plus
    one container, whatever the nesting."""

    def __init__(self) -> None:
        self.left = MAX_ELEMENTS

    def _spend(self, container):
        self.left -= len(container)
        if self.left < 0:
            raise WireError(f"message holds more than {MAX_ELEMENTS} list or map entries")
        return container

    map_hook = list_hook = _spend


def max_body_bytes(compressed: int) -> int:
    """The largest body an LZ4 block of ``compressed`` bytes may expand to."""
    return min(MAX_MESSAGE_BYTES, max(LZ4_FREE_BYTES, MAX_RATIO * compressed))


def encode(message: dict, compress: bool = True) -> bytes:
    """One message (a dict with str keys; values: numbers, str, bytes, lists, dicts, arrays)."""
    if not isinstance(message, dict):
        raise TypeError("a message is a dict")
    body = msgpack.packb(message, default=_default, use_bin_type=True)
    if len(body) > MAX_MESSAGE_BYTES:
        raise ValueError(f"message of {len(body)} bytes exceeds {MAX_MESSAGE_BYTES}")
    if compress:
        packed = lz4.block.compress(body, store_size=False)
        if len(body) <= max_body_bytes(len(packed)):
            return _HEADER.pack(MAGIC, len(body)) + packed
    return _HEADER.pack(RAW_MAGIC, len(body)) + body


def decode(frame: bytes) -> dict:
    """The message in ``frame``; raises ``WireError`` on anything else."""
    if len(frame) < _HEADER.size:
        raise WireError(f"frame of {len(frame)} bytes is shorter than the header")
    magic, size = _HEADER.unpack_from(frame)
    if magic not in (MAGIC, RAW_MAGIC):
        raise WireError(f"bad magic {magic!r}: not a robot_rl transport frame (or another version)")
    if size > MAX_MESSAGE_BYTES:
        raise WireError(f"declared size {size} exceeds the limit {MAX_MESSAGE_BYTES}")
    if magic == RAW_MAGIC:
        body = frame[_HEADER.size :]
    else:
        limit = max_body_bytes(len(frame) - _HEADER.size)
        if size > limit:
            raise WireError(
                f"declared size {size} is more than {MAX_RATIO} times the "
                f"{len(frame) - _HEADER.size} compressed bytes (limit {limit})"
            )
        try:
            body = lz4.block.decompress(frame[_HEADER.size :], uncompressed_size=size)
        except (lz4.block.LZ4BlockError, ValueError) as err:
            raise WireError(f"corrupt compressed body: {err}") from err
    if len(body) != size:
        raise WireError(f"body is {len(body)} bytes, header says {size}")
    budget = _ElementBudget()
    try:
        message = msgpack.unpackb(
            body,
            raw=False,
            ext_hook=_ext_hook,
            strict_map_key=True,
            object_hook=budget.map_hook,
            list_hook=budget.list_hook,
            max_array_len=MAX_CONTAINER_LEN,
            max_map_len=MAX_MAP_LEN,
            max_str_len=MAX_STR_LEN,
        )
    except WireError:
        raise
    except (ValueError, TypeError, msgpack.UnpackException, RecursionError) as err:
        raise WireError(f"malformed msgpack body: {str(err) or type(err).__name__}") from err
    if not isinstance(message, dict):
        raise WireError(f"a message is a map, got {type(message).__name__}")
    return message
