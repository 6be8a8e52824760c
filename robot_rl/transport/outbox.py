"""The actor's disk-backed outbox: every transition is on disk before the network sees it.

Transitions get consecutive sequence numbers and go into segment files (``seg-<first seq>.log``,
durable logs: a crash loses at most the record being written). The sender reads from any
sequence number on; the learner's acknowledgements move ``acked`` (everything below it is
durably stored by the learner), and segments that hold only acknowledged transitions are
deleted. An actor that restarts with the same outbox resumes its numbering and re-sends what
was never acknowledged, so nothing is lost and the learner's sequence check drops duplicates.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import numpy as np

from robot_rl.data.durable_log import DurableLog

SEGMENT_PREFIX = "seg-"
ACKED_FILE = "acked.json"
_METADATA = {"kind": "robot_rl actor outbox", "version": 1}


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
        self.segment_size = segment_size
        self._fsync = fsync
        self._lock = threading.Lock()
        self._ack_persist_interval = ack_persist_interval
        self._ack_persisted_at = 0.0
        self._segments: list[int] = sorted(
            int(p.name[len(SEGMENT_PREFIX) : -4])
            for p in self.directory.glob(f"{SEGMENT_PREFIX}*.log")
        )
        self._cache: tuple[int, list[bytes]] | None = None  # one closed segment, decoded
        self._active: DurableLog | None = None
        self._active_items: list[bytes] = []
        self._next_seq = 0
        if self._segments:
            last = self._segments[-1]
            self._active = self._open_segment(last)
            self._active_items = [rec["payload"].tobytes() for rec in self._active]
            self._next_seq = last + len(self._active_items)
        acked_path = self.directory / ACKED_FILE
        saved_ack = json.loads(acked_path.read_text())["acked"] if acked_path.exists() else 0
        first = self._segments[0] if self._segments else self._next_seq
        self._acked = max(saved_ack, first)

    def _open_segment(self, first_seq: int) -> DurableLog:
        return DurableLog(self.directory / _segment_name(first_seq), _METADATA, fsync=self._fsync)

    # ------------------------------------------------------------------------------ writing

    def append(self, payload: bytes) -> int:
        """Store one encoded transition; returns its sequence number."""
        with self._lock:
            if self._active is None or len(self._active_items) >= self.segment_size:
                self._start_segment(self._next_seq)
            seq = self._next_seq
            self._active.append({"seq": np.int64(seq), "payload": np.frombuffer(payload, np.uint8)})
            self._active_items.append(payload)
            self._next_seq += 1
            return seq

    def _start_segment(self, first_seq: int) -> None:
        if self._active is not None:
            self._active.close()
        self._active = self._open_segment(first_seq)
        self._active_items = []
        self._segments.append(first_seq)

    def skip_to(self, seq: int) -> None:
        """Continue numbering at ``seq`` (the learner already holds this actor's data below it,
        e.g. after the outbox directory was lost)."""
        with self._lock:
            if seq > self._next_seq:
                self._next_seq = seq
                self._start_segment(seq)
        self.ack(seq)

    # ------------------------------------------------------------------------------ reading

    def read(self, start: int, limit: int) -> list[bytes]:
        """Up to ``limit`` consecutive payloads from sequence number ``start`` on."""
        with self._lock:
            if start < self._acked:
                start = self._acked
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

    # ------------------------------------------------------------------------- acknowledging

    def ack(self, next_seq: int) -> None:
        """The learner holds everything below ``next_seq``: forget it (delete whole segments)."""
        with self._lock:
            next_seq = min(next_seq, self._next_seq)
            if next_seq <= self._acked:
                return
            self._acked = next_seq
            while len(self._segments) > 1 and self._segments[1] <= next_seq:
                first = self._segments.pop(0)
                (self.directory / _segment_name(first)).unlink(missing_ok=True)
                if self._cache is not None and self._cache[0] == first:
                    self._cache = None
            now = time.monotonic()
            if now - self._ack_persisted_at >= self._ack_persist_interval:
                self._persist_ack()
                self._ack_persisted_at = now

    def _persist_ack(self) -> None:
        # Losing this file only re-sends acknowledged data, which the learner drops as
        # duplicates; so it is written atomically but not on every acknowledgement.
        tmp = self.directory / (ACKED_FILE + ".tmp")
        tmp.write_text(json.dumps({"acked": self._acked}))
        os.replace(tmp, self.directory / ACKED_FILE)

    # ------------------------------------------------------------------------------- figures

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

    def disk_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.directory.glob(f"{SEGMENT_PREFIX}*.log"))

    def close(self) -> None:
        with self._lock:
            if self._active is not None:
                self._active.close()
                self._active = None
            self._persist_ack()
