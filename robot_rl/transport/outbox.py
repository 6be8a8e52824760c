"""The actor's disk-backed outbox: every transition is on disk before the network sees it.

Transitions get consecutive sequence numbers in durable segment files (``seg-<first seq>.log``);
the learner's acknowledgements move ``acked`` and wholly acknowledged segments are deleted. A
restarted actor resumes its numbering and re-sends what was never acknowledged (the learner drops
duplicates). One process owns an outbox at a time (a lock file); ``stream.json`` names it and the
learner run it last fed. An append fails whole (a full disk: acknowledged segments are deleted
for room) and may be retried. An impossible ``acked.json`` or byte damage in any segment stops
the opening with ``OutboxDamaged``; ``repair`` (``robot-rl actor --repair-outbox``) keeps intact
records, lists lost sequence numbers in ``dropped.json`` and resets an impossible ``acked``.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import threading
import time
import uuid
from pathlib import Path

import numpy as np

from robot_rl.data.durable_log import DurableLog, DurableLogError, rewrite, salvage

logger = logging.getLogger(__name__)

SEGMENT_PREFIX = "seg-"
ACKED_FILE = "acked.json"
STREAM_FILE = "stream.json"
LOCK_FILE = "lock"
DROPPED_FILE = "dropped.json"
ACKED_WIDTH = 64
_METADATA = {"kind": "robot_rl actor outbox", "version": 1}
NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class OutboxInUse(ValueError):
    """Another process holds this outbox."""


class OutboxDamaged(DurableLogError):
    """The outbox cannot be trusted as it is: one line naming the file and the way out."""


def _repair_hint(directory: Path) -> str:
    return (
        f"`robot-rl actor --repair-outbox --outbox-dir {directory}` keeps the intact records and "
        "says what it dropped"
    )


def is_disk_full(err: OSError) -> bool:
    return err.errno in NO_SPACE


def _segment_name(first_seq: int) -> str:
    return f"{SEGMENT_PREFIX}{first_seq:012d}.log"


class Outbox:
    def __init__(
        self,
        directory: str | os.PathLike,
        *,
        segment_size: int = 1000,
        fsync: str = "never",
        ack_persist_interval: float = 0.5,
    ):
        """``fsync='never'`` still survives a killed process (writes reach the OS at once);
        'always' also survives a power cut, at a disk flush per transition."""
        if segment_size < 1:
            raise ValueError(f"segment_size must be >= 1, got {segment_size}")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock_file = _take_lock(self.directory / LOCK_FILE)
        self.segment_size = segment_size
        self._fsync = fsync
        self._lock = threading.Lock()
        self._ack_persist_interval = ack_persist_interval
        self._ack_persisted_at = 0.0
        try:
            self._open_all()
        except BaseException:
            if getattr(self, "_active", None) is not None:
                self._active.close()
            self._lock_file.close()
            self._lock_file = None
            raise

    def _open_all(self) -> None:
        self._segments: list[int] = _segment_firsts(self.directory)
        self._cache: tuple[int, list[bytes]] | None = None  # one closed segment, decoded
        self._active: DurableLog | None = None
        self._active_items: list[bytes] = []
        self._next_seq = 0
        self._space_short = False
        if self._segments:
            last = self._segments[-1]
            try:
                for first in self._segments[:-1]:  # checked now, not when the sender meets it
                    DurableLog(self.directory / _segment_name(first), _METADATA).close()
                self._active = self._open_segment(last)
            except DurableLogError as err:
                raise OutboxDamaged(f"{err}; {_repair_hint(self.directory)}") from None
            self._active_items = [rec["payload"].tobytes() for rec in self._active]
            self._next_seq = last + len(self._active_items)
        self._dropped = _read_dropped(self.directory)
        saved_ack = self._saved_ack()
        if self._segments and saved_ack > self._next_seq:
            raise OutboxDamaged(
                f"{self.directory / ACKED_FILE} says {saved_ack} transitions are acknowledged, "
                f"but this outbox holds sequence numbers up to {self._next_seq - 1}: the record "
                f"is impossible, and believing it would skip all {self.backlog_on_disk} "
                f"transitions held here; {_repair_hint(self.directory)}"
            )
        first = self._segments[0] if self._segments else saved_ack
        self._acked = self._past_dropped(max(saved_ack, first))
        # Everything acknowledged and its segments deleted (to make room): go on from there.
        self._next_seq = max(self._next_seq, self._acked)
        stream = self._read_json(STREAM_FILE)
        self.id: str = stream.get("id") if isinstance(stream.get("id"), str) else uuid.uuid4().hex
        run = stream.get("learner_run")
        self.learner_run: str | None = run if isinstance(run, str) else None
        """The learner run this outbox's stream belongs to (None before any welcome)."""
        if stream.get("id") != self.id:
            self._write_json(STREAM_FILE, {"id": self.id, "learner_run": self.learner_run})
        if not (self.directory / ACKED_FILE).exists():
            self._persist_ack()  # from the start: on a full disk it is overwritten in place

    @property
    def backlog_on_disk(self) -> int:
        """Sequence numbers from the oldest segment on (what an impossible ack would skip)."""
        return self._next_seq - self._segments[0] if self._segments else 0

    def _saved_ack(self) -> int:
        """``acked.json``'s number (0 without the file); ``OutboxDamaged`` when unreadable."""
        path = self.directory / ACKED_FILE
        if not path.exists():
            return 0
        try:
            value = json.loads(path.read_text())
            saved = value["acked"] if isinstance(value, dict) else None
        except (OSError, ValueError, KeyError) as err:
            saved, why = None, str(err) or type(err).__name__
        else:
            why = f"'acked' is {saved!r}, not a sequence number"
        if not isinstance(saved, int) or isinstance(saved, bool) or saved < 0:
            raise OutboxDamaged(
                f"{path} is unreadable ({why}): which transitions the learner holds is unknown; "
                f"{_repair_hint(self.directory)}"
            )
        return saved

    def _past_dropped(self, seq: int) -> int:
        """``seq``, or the end of the dropped range it falls in (a repair lost those)."""
        for start, end in self._dropped:
            if start <= seq < end:
                seq = end
        return seq

    def _read_json(self, name: str) -> dict:
        path = self.directory / name
        if not path.exists():
            return {}
        try:
            value = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            # Losing these only re-sends acknowledged data (dropped as duplicates) or makes the
            # next welcome look like a new stream: not a reason to stop a robot.
            logger.warning("%s is damaged (%s): ignoring it", path, err)
            return {}
        return value if isinstance(value, dict) else {}

    def _write_json(self, name: str, value: dict | str) -> None:
        tmp = self.directory / (name + ".tmp")
        try:
            tmp.write_text(value if isinstance(value, str) else json.dumps(value))
            os.replace(tmp, self.directory / name)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise

    def set_learner_run(self, run: str | None) -> None:
        """Record that this outbox's stream now feeds learner run ``run``."""
        if run is None or run == self.learner_run:
            return
        self.learner_run = run
        try:
            self._write_json(STREAM_FILE, {"id": self.id, "learner_run": run})
        except OSError as err:  # a full disk: the next welcome records it again
            logger.warning("%s: cannot record the learner run (%s)", self.directory, err)

    def _open_segment(self, first_seq: int) -> DurableLog:
        return DurableLog(self.directory / _segment_name(first_seq), _METADATA, fsync=self._fsync)

    def append(self, payload: bytes) -> int:
        """Store one encoded transition; returns its sequence number. On a full disk raises
        OSError and stores nothing: call again later (acknowledgements free space)."""
        with self._lock:
            try:
                if self._active is None or len(self._active_items) >= self.segment_size:
                    self._start_segment(self._next_seq)
                seq = self._next_seq
                self._active.append(
                    {"seq": np.int64(seq), "payload": np.frombuffer(payload, np.uint8)}
                )
            except OSError as err:
                if is_disk_full(err):
                    self._space_short = True
                    self._release_acknowledged()
                raise
            self._space_short = False
            self._active_items.append(payload)
            self._next_seq += 1
            return seq

    def _start_segment(self, first_seq: int) -> None:
        # The new segment first: if it cannot be made, the outbox stays as it was.
        new = self._open_segment(first_seq)
        if self._active is not None:
            self._active.close()
        self._active = new
        self._active_items = []
        self._segments.append(first_seq)

    def _release_acknowledged(self) -> None:
        """With everything acknowledged, delete the active segment too (short of space)."""
        if self._acked < self._next_seq or self._active is None:
            return
        try:
            self._persist_ack()  # the numbering must survive the segment that carried it
        except OSError:
            return
        self._active.close()
        self._active, self._active_items = None, []
        for first in self._segments:
            (self.directory / _segment_name(first)).unlink(missing_ok=True)
        self._segments, self._cache = [], None

    def skip_to(self, seq: int) -> None:
        """Continue numbering at ``seq`` (the learner already holds this actor's data below it,
        e.g. after the outbox directory was lost)."""
        with self._lock:
            if seq > self._next_seq:
                self._start_segment(seq)
                self._next_seq = seq
        self.ack(seq)

    def read(self, start: int, limit: int) -> list[bytes]:
        """Up to ``limit`` consecutive payloads from sequence number ``start`` on."""
        with self._lock:
            start = max(start, self._acked)
            items: list[bytes] = []
            while len(items) < limit and start + len(items) < self._next_seq:
                seq = start + len(items)
                index = max(i for i, first in enumerate(self._segments) if first <= seq)
                first = self._segments[index]
                segment = self._segment_items(index)
                offset = seq - first
                if offset >= len(segment):  # a gap left by skip_to
                    break
                items.extend(segment[offset : offset + limit - len(items)])
            return items

    def _segment_items(self, index: int) -> list[bytes]:
        if index == len(self._segments) - 1:
            return self._active_items
        first = self._segments[index]
        if self._cache is None or self._cache[0] != first:
            log = DurableLog(self.directory / _segment_name(first), _METADATA)
            self._cache = (first, [rec["payload"].tobytes() for rec in log])
            log.close()
        return self._cache[1]

    def ack(self, next_seq: int) -> None:
        """The learner holds everything below ``next_seq``: forget it (delete whole segments)."""
        with self._lock:
            next_seq = min(next_seq, self._next_seq)
            if next_seq <= self._acked:
                if self._space_short:
                    self._release_acknowledged()
                return
            self._acked = self._past_dropped(next_seq)
            while len(self._segments) > 1 and self._segments[1] <= next_seq:
                first = self._segments.pop(0)
                (self.directory / _segment_name(first)).unlink(missing_ok=True)
                if self._cache is not None and self._cache[0] == first:
                    self._cache = None
            if self._space_short:
                self._release_acknowledged()
            now = time.monotonic()
            if now - self._ack_persisted_at >= self._ack_persist_interval:
                try:
                    self._persist_ack()
                except OSError as err:  # a full disk: the next acknowledgement tries again
                    logger.debug("%s: cannot record acknowledgements: %s", self.directory, err)
                else:
                    self._ack_persisted_at = now

    def _persist_ack(self) -> None:
        # Losing this file only re-sends acknowledged data, which the learner drops as
        # duplicates; so it is written atomically but not on every acknowledgement. On a full
        # disk (no room for the new copy) the old one is overwritten in place: the fixed width
        # needs no new block.
        text = json.dumps({"acked": self._acked}).ljust(ACKED_WIDTH)
        try:
            self._write_json(ACKED_FILE, text)
        except OSError:
            path = self.directory / ACKED_FILE
            if not path.exists() or path.stat().st_size < len(text):
                raise
            with open(path, "r+") as file:
                file.write(text)

    @property
    def next_seq(self) -> int:
        return self._next_seq

    @property
    def acked(self) -> int:
        return self._acked

    @property
    def backlog(self) -> int:
        """Transitions not yet acknowledged by the learner."""
        return self._next_seq - self._acked

    def close(self) -> None:
        with self._lock:
            if self._active is not None:
                self._active.close()
                self._active = None
            if self._lock_file is None:
                return
            try:
                self._persist_ack()
            except OSError as err:
                logger.warning("%s: cannot record acknowledgements: %s", self.directory, err)
            self._lock_file.close()  # releases the lock
            self._lock_file = None


def _segment_firsts(directory: Path) -> list[int]:
    return sorted(
        int(p.name[len(SEGMENT_PREFIX) : -4]) for p in directory.glob(f"{SEGMENT_PREFIX}*.log")
    )


def _read_dropped(directory: Path) -> list[tuple[int, int]]:
    path = directory / DROPPED_FILE
    if not path.exists():
        return []
    try:
        ranges = json.loads(path.read_text())["dropped"]
        return sorted((int(a), int(b)) for a, b in ranges if 0 <= int(a) < int(b))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise OutboxDamaged(
            f"{path} is unreadable ({err}): delete it only if no repair ever dropped records here"
        ) from None


def _ranges(seqs: list[int]) -> list[tuple[int, int]]:
    """Sorted integers as [start, end) runs."""
    runs: list[tuple[int, int]] = []
    for seq in seqs:
        if runs and runs[-1][1] == seq:
            runs[-1] = (runs[-1][0], seq + 1)
        else:
            runs.append((seq, seq + 1))
    return runs


def repair(directory: str | os.PathLike) -> dict:
    """Keep the intact records of every damaged segment of the outbox in ``directory``, record
    the sequence numbers lost, and reset an impossible acknowledgement record. Returns what it
    did (``kept``, ``dropped``, ``damaged_segments``, ``dropped_ranges``, ``acked``,
    ``ack_reset``). Undamaged segments are not touched; ``OutboxInUse`` while an actor runs."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"no outbox at {directory}")
    lock = _take_lock(directory / LOCK_FILE)
    try:
        firsts = _segment_firsts(directory)
        dropped = list(_read_dropped(directory))
        kept = lost = damaged = 0
        next_seq = 0
        for index, first in enumerate(firsts):
            path = directory / _segment_name(first)
            found = salvage(path)
            by_seq = {int(r["seq"]): r for r in found.records if "seq" in r and "payload" in r}
            kept += len(by_seq)
            if found.damaged_regions == 0 and len(by_seq) == len(found.records):
                next_seq = first + len(found.records)
                continue
            damaged += 1
            final = index == len(firsts) - 1
            end = max(by_seq, default=first - 1) + 1 if final else firsts[index + 1]
            missing = [seq for seq in range(first, end) if seq not in by_seq]
            lost += len(missing) + (found.tail_frames if final else 0)
            dropped.extend(_ranges(missing))
            runs = _ranges(sorted(s for s in by_seq if first <= s < (end if not final else s + 1)))
            path.unlink()
            for start, stop in runs or ([(first, first)] if final else []):
                records = [by_seq[seq] for seq in range(start, stop)]
                rewrite(directory / _segment_name(start), _METADATA, records)
            next_seq = runs[-1][1] if runs else first
        dropped = sorted(set(dropped))
        if dropped:
            tmp = directory / (DROPPED_FILE + ".tmp")
            tmp.write_text(json.dumps({"dropped": [list(r) for r in dropped]}))
            os.replace(tmp, directory / DROPPED_FILE)
        firsts = _segment_firsts(directory)
        ack_reset = False
        try:
            saved = json.loads((directory / ACKED_FILE).read_text())["acked"]
            possible = isinstance(saved, int) and saved >= 0 and (not firsts or saved <= next_seq)
        except (OSError, ValueError, KeyError, TypeError):
            saved, possible = None, not (directory / ACKED_FILE).exists()
        acked = saved if possible and saved is not None else (firsts[0] if firsts else 0)
        if not possible:
            ack_reset = True  # send everything held again: the learner drops what it has
            text = json.dumps({"acked": acked}).ljust(ACKED_WIDTH)
            tmp = directory / (ACKED_FILE + ".tmp")
            tmp.write_text(text)
            os.replace(tmp, directory / ACKED_FILE)
        return {
            "outbox": str(directory),
            "segments": len(firsts),
            "damaged_segments": damaged,
            "kept": kept,
            "dropped": lost,
            "dropped_ranges": [list(r) for r in dropped],
            "acked": acked,
            "ack_reset": ack_reset,
        }
    finally:
        lock.close()


def _take_lock(path: Path):
    file = open(path, "a+")  # noqa: SIM115 (held while the outbox is open)
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        file.close()
        raise OutboxInUse(
            f"outbox {path.parent} is in use by another actor process: give each actor its own "
            "--outbox-dir (and --actor-id)"
        ) from err
    return file
