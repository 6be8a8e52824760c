"""An append-only, crash-tolerant record log: what makes a replay buffer lose nothing on a crash.

File layout (no pickle)::

    MAGIC (8 bytes)  frame(header)  frame(record)  frame(record)  ...
    frame   = SYNC (4 bytes) | u32 little-endian payload length | u32 CRC32 of payload | payload
    header  = msgpack {"format_version": 1, "metadata": {...}}
    record  = msgpack {name: [dtype string, shape, raw bytes]}

A bad last frame (a crash mid-write) is cut away with a warning; a bad frame followed by a valid
one (found by SYNC) raises. A failed write (a full disk) is cut back off before the error is
raised, so the record can be appended again. ``salvage`` reads a damaged log anyway: every frame
whose CRC holds, and how many were lost.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgpack
import numpy as np

from robot_rl.data.spaces_json import describe_differences

logger = logging.getLogger(__name__)

MAGIC = b"RRLDLOG\x00"
FORMAT_VERSION = 1
SYNC = b"RRL\x1e"
_FRAME_HEADER = struct.Struct("<4sII")


class DurableLogError(RuntimeError):
    """The log is damaged somewhere other than its tail, or is not a log of this format."""


def parse_fsync_policy(policy: str) -> int:
    """``"always"`` → 1, ``"never"`` → 0, ``"every:N"`` → N (fsync after every N appends)."""
    if policy == "always":
        return 1
    if policy == "never":
        return 0
    if policy.startswith("every:"):
        try:
            every = int(policy.split(":", 1)[1])
        except ValueError:
            every = 0
        if every >= 1:
            return every
    raise ValueError(f"fsync must be 'always', 'never' or 'every:N' with N >= 1, got {policy!r}")


def encode_record(record: Mapping[str, np.ndarray]) -> bytes:
    fields = {}
    for name, value in record.items():
        array = np.asarray(value)  # tobytes() writes C order whatever the layout
        if array.dtype.hasobject:
            raise ValueError(f"record field {name!r}: object arrays cannot be logged")
        fields[name] = [array.dtype.str, list(array.shape), array.tobytes()]
    return msgpack.packb(fields, use_bin_type=True)


def decode_record(payload: bytes) -> dict[str, np.ndarray]:
    fields = msgpack.unpackb(payload, raw=False)
    return {
        name: np.frombuffer(data, dtype=np.dtype(dtype)).reshape(tuple(shape)).copy()
        for name, (dtype, shape, data) in fields.items()
    }


def _frame(payload: bytes) -> bytes:
    return _FRAME_HEADER.pack(SYNC, len(payload), zlib.crc32(payload)) + payload


def _read_frame(file: BinaryIO, end: int) -> bytes | None:
    """The next frame's payload, or None when it is incomplete or fails its CRC."""
    start = file.tell()
    if end - start < _FRAME_HEADER.size:
        return None
    sync, length, crc = _FRAME_HEADER.unpack(file.read(_FRAME_HEADER.size))
    if sync != SYNC or length > end - file.tell():
        return None
    payload = file.read(length)
    if zlib.crc32(payload) != crc:
        return None
    return payload


class DurableLog:
    """Append-only log of ``dict[str, np.ndarray]`` records with a JSON-like metadata header.

    Opening an existing log checks its metadata against ``metadata`` (when given) and cuts away a
    torn tail. ``append`` returns only after the record reached the OS (and the disk, per
    ``fsync``), so a record whose ``append`` returned survives a crash of this process.
    """

    def __init__(
        self, path: str | os.PathLike, metadata: dict | None = None, *, fsync: str = "always"
    ):
        self.path = Path(path)
        self._fsync_every = parse_fsync_policy(fsync)
        self._appends_since_sync = 0
        if not self.path.exists() or self.path.stat().st_size < len(MAGIC) + _FRAME_HEADER.size:
            # Missing, or a crash before the header was complete: nothing was ever appended.
            self._create(metadata or {})
        self.metadata, self._records_start, self._records_end = self._open_existing()
        if metadata is not None:
            differences = describe_differences(metadata, self.metadata)
            if differences:
                raise ValueError(
                    f"{self.path} was written for a different configuration: "
                    + "; ".join(differences)
                )
        # Unbuffered: a failed write is visible at once and is cut off again (see append).
        self._file: BinaryIO | None = open(self.path, "ab", buffering=0)  # noqa: SIM115
        self._end = self._records_end

    def _create(self, metadata: dict) -> None:
        header = msgpack.packb(
            {"format_version": FORMAT_VERSION, "metadata": metadata}, use_bin_type=True
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(tmp, "wb") as file:
                file.write(MAGIC + _frame(header))
                file.flush()
                os.fsync(file.fileno())
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)  # a full disk: leave nothing half-made behind
            raise
        _fsync_directory(self.path.parent)

    def _open_existing(self) -> tuple[dict, int, int]:
        size = self.path.stat().st_size
        with open(self.path, "rb") as file:
            if file.read(len(MAGIC)) != MAGIC:
                raise DurableLogError(f"{self.path} is not a robot_rl durable log (bad magic)")
            header_payload = _read_frame(file, size)
            if header_payload is None:
                raise DurableLogError(f"{self.path}: the header is damaged")
            header = msgpack.unpackb(header_payload, raw=False)
            if header.get("format_version") != FORMAT_VERSION:
                raise DurableLogError(
                    f"{self.path}: format version {header.get('format_version')!r}, "
                    f"this code reads version {FORMAT_VERSION}"
                )
            records_start = file.tell()
            valid_end = self._scan(file, size)
        if valid_end < size:
            logger.warning(
                "%s: cutting a torn tail of %d bytes (a record interrupted by a crash)",
                self.path,
                size - valid_end,
            )
            with open(self.path, "r+b") as file:
                file.truncate(valid_end)
                file.flush()
                os.fsync(file.fileno())
        return header["metadata"], records_start, valid_end

    def _scan(self, file: BinaryIO, size: int) -> int:
        """Offset just past the last good record; raises if a bad record has good ones after it."""
        while file.tell() < size:
            start = file.tell()
            if _read_frame(file, size) is None:
                if self._valid_frame_after(file, start, size):
                    raise DurableLogError(
                        f"{self.path}: record at byte {start} is corrupt but later records "
                        "are intact (damage in the middle of the log, not a torn tail)"
                    )
                return start
        return size

    @staticmethod
    def _valid_frame_after(file: BinaryIO, start: int, size: int) -> bool:
        with mmap.mmap(file.fileno(), size, access=mmap.ACCESS_READ) as view:
            candidate = view.find(SYNC, start + 1)
            while candidate != -1:
                file.seek(candidate)
                if _read_frame(file, size) is not None:
                    return True
                candidate = view.find(SYNC, candidate + 1)
        return False

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        """The records on disk, oldest first (including those appended through this object)."""
        end = self.path.stat().st_size
        with open(self.path, "rb") as file:
            file.seek(self._records_start)
            while file.tell() < end:
                payload = _read_frame(file, end)
                if payload is None:
                    raise DurableLogError(f"{self.path}: record at byte {file.tell()} is damaged")
                yield decode_record(payload)

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record whole, or raise (OSError on a full disk) and leave the log as it
        was: a partly written frame is cut off, so later appends never follow a torn one."""
        if self._file is None:
            raise ValueError(f"{self.path}: append to a closed log")
        data = memoryview(_frame(encode_record(record)))
        try:
            written = 0
            while written < len(data):
                written += self._file.write(data[written:])
        except OSError:
            try:
                os.ftruncate(self._file.fileno(), self._end)
            except OSError as err:  # cannot even cut it: refuse further appends
                self._file.close()
                self._file = None
                raise DurableLogError(f"{self.path}: a failed append could not be undone") from err
            raise
        self._end += len(data)
        if self._fsync_every:
            self._appends_since_sync += 1
            if self._appends_since_sync >= self._fsync_every:
                os.fsync(self._file.fileno())
                self._appends_since_sync = 0

    def sync(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())
            self._appends_since_sync = 0

    def close(self) -> None:
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None

    def __enter__(self) -> DurableLog:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


@dataclass
class Salvage:
    """What ``salvage`` found in a log: its metadata, the intact records in file order, and
    the damage."""

    metadata: dict
    records: list[dict[str, np.ndarray]] = field(default_factory=list)
    damaged_regions: int = 0
    """Stretches of bytes that held no intact frame (each lost one record or more)."""
    dropped_frames: int = 0
    """Frames lost: the SYNC markers inside the damaged stretches (at least one each)."""
    damaged_bytes: int = 0
    tail_frames: int = 0
    """Of ``dropped_frames``, those after the last intact record (their order is unknown)."""


def salvage(path: str | os.PathLike) -> Salvage:
    """Every intact record of the log at ``path``, damaged or not; raises ``DurableLogError``
    only when not even its header can be read (then nothing in it can be trusted)."""
    path = Path(path)
    data = path.read_bytes()
    if data[: len(MAGIC)] != MAGIC:
        raise DurableLogError(f"{path} is not a robot_rl durable log (bad magic)")
    size = len(data)

    def frame_at(offset: int) -> tuple[bytes, int] | None:
        if size - offset < _FRAME_HEADER.size:
            return None
        sync, length, crc = _FRAME_HEADER.unpack_from(data, offset)
        start = offset + _FRAME_HEADER.size
        if sync != SYNC or length > size - start:
            return None
        payload = data[start : start + length]
        return (payload, start + length) if zlib.crc32(payload) == crc else None

    header = frame_at(len(MAGIC))
    if header is None:
        raise DurableLogError(f"{path}: the header is damaged; nothing in it can be trusted")
    try:
        metadata = msgpack.unpackb(header[0], raw=False)["metadata"]
    except Exception as err:
        raise DurableLogError(f"{path}: the header does not decode ({err})") from None
    found = Salvage(metadata)
    offset = header[1]
    while offset < size:
        frame = frame_at(offset)
        if frame is not None:
            try:
                record = decode_record(frame[0])
            except Exception:  # an intact CRC over a record that does not decode
                frame = None
            else:
                found.records.append(record)
                offset = frame[1]
                continue
        # damage: the next SYNC that starts an intact frame, or the end of the file
        resume = data.find(SYNC, offset + 1)
        while resume != -1 and frame_at(resume) is None:
            resume = data.find(SYNC, resume + 1)
        end = size if resume == -1 else resume
        lost = max(1, data.count(SYNC, offset, end))
        found.damaged_regions += 1
        found.damaged_bytes += end - offset
        found.dropped_frames += lost
        if resume == -1:
            found.tail_frames = lost
        offset = end
    return found


def rewrite(path: str | os.PathLike, metadata: dict, records: list[Mapping[str, Any]]) -> None:
    """Replace the log at ``path`` by one holding ``records`` (written aside, then renamed into
    place: a crash leaves the old file or the new one, never half of one)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".repair")
    tmp.unlink(missing_ok=True)
    try:
        with DurableLog(tmp, metadata, fsync="never") as log:
            for record in records:
                log.append(record)
            log.sync()
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; not possible on every platform (e.g. Windows).
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
