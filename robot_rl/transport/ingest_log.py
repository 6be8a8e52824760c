"""The learner's write-ahead log of received transitions: what makes an acknowledgement true.

The server appends every accepted batch (with fsync, to the disk) before acknowledging it. A
checkpoint rotates the log; older segments are deleted once the checkpoint holding them is
written. After a crash the learner restores its newest checkpoint and replays the log on top,
skipping what each actor's sequence cursor says it holds: a transition is stored exactly once.
The directory also names the learner run (``run_id``, kept by ``--resume``). Byte damage inside
a segment stops a resume naming the file; ``repair`` (``robot-rl learner --repair-ingest-log``)
keeps every intact batch and reports the dropped batches and their sequence numbers.
"""

from __future__ import annotations

import itertools
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from robot_rl.data.durable_log import DurableLog, DurableLogError, rewrite, salvage

_METADATA = {"kind": "robot_rl learner ingest log", "version": 1}
PREFIX = "ingest-"
RUN_FILE = "run_id"


class IngestLog:
    def __init__(self, directory: str | os.PathLike, fsync: str = "always"):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._fsync = fsync
        self.run_id = self._run_id()
        self.lock = threading.RLock()
        existing = sorted(
            int(p.name[len(PREFIX) : -4]) for p in self.directory.glob(f"{PREFIX}*.log")
        )
        self._segment = (existing[-1] + 1) if existing else 0
        self._log = self._open(self._segment)

    def _run_id(self) -> str:
        path = self.directory / RUN_FILE
        if path.exists():
            text = path.read_text().strip()
            if text.isalnum() and len(text) <= 64:
                return text
        run_id = uuid.uuid4().hex
        tmp = path.with_name(RUN_FILE + ".tmp")
        tmp.write_text(run_id)
        os.replace(tmp, path)
        return run_id

    def _open(self, segment: int) -> DurableLog:
        return DurableLog(
            self.directory / f"{PREFIX}{segment:08d}.log", _METADATA, fsync=self._fsync
        )

    def append(self, actor: str, first_seq: int, items: list[bytes]) -> None:
        with self.lock:
            self._log.append(
                {
                    "actor": np.frombuffer(actor.encode(), np.uint8),
                    "first_seq": np.int64(first_seq),
                    "lengths": np.asarray([len(i) for i in items], np.int64),
                    "blob": np.frombuffer(b"".join(items), np.uint8),
                }
            )

    def rotate(self) -> int:
        """Start a new segment; returns its number (older ones may be pruned after a checkpoint)."""
        with self.lock:
            new = self._open(self._segment + 1)  # first: on a full disk nothing changes
            self._log.close()
            self._segment += 1
            self._log = new
            return self._segment

    def prune(self, before: int) -> None:
        for path in self.directory.glob(f"{PREFIX}*.log"):
            if int(path.name[len(PREFIX) : -4]) < before:
                path.unlink(missing_ok=True)

    def batches(self) -> Iterator[tuple[str, int, list[bytes]]]:
        """Every logged batch, oldest first: (actor id, first sequence number, frames)."""
        with self.lock:
            self._log.sync()
            paths = sorted(self.directory.glob(f"{PREFIX}*.log"))
        for path in paths:
            try:
                log = DurableLog(path, _METADATA, fsync="never")
            except DurableLogError as err:
                raise DurableLogError(
                    f"{err}; `robot-rl learner --repair-ingest-log --run-dir "
                    f"{self.directory.parent}` keeps the intact batches and says what it dropped"
                ) from None
            try:
                for record in log:
                    blob = record["blob"].tobytes()
                    offsets = np.concatenate([[0], np.cumsum(record["lengths"])])
                    items = [blob[a:b] for a, b in itertools.pairwise(offsets)]
                    yield record["actor"].tobytes().decode(), int(record["first_seq"]), items
            finally:
                log.close()

    @staticmethod
    def holds_records(directory: str | os.PathLike) -> bool:
        """Whether ``directory`` holds an ingest log with at least one batch."""
        for path in sorted(Path(directory).glob(f"{PREFIX}*.log")):
            with DurableLog(path, _METADATA, fsync="never") as log:
                if next(iter(log), None) is not None:
                    return True
        return False

    def close(self) -> None:
        with self.lock:
            self._log.close()

    @staticmethod
    def repair(directory: str | os.PathLike) -> dict:
        """Keep the intact batches of every damaged segment in ``directory`` (rewritten in
        place); returns ``kept`` and ``dropped`` batches, ``damaged_segments`` and, per actor,
        the sequence ranges no kept batch holds any more (``lost``: [start, end) pairs)."""
        directory = Path(directory)
        if not directory.is_dir():
            raise ValueError(f"no ingest log at {directory}")
        kept = dropped = damaged = 0
        spans: dict[str, list[tuple[int, int]]] = {}
        for path in sorted(directory.glob(f"{PREFIX}*.log")):
            found = salvage(path)
            for record in found.records:
                actor = record["actor"].tobytes().decode(errors="replace")
                first = int(record["first_seq"])
                spans.setdefault(actor, []).append((first, first + len(record["lengths"])))
            kept += len(found.records)
            if found.damaged_regions:
                damaged += 1
                dropped += found.dropped_frames
                rewrite(path, found.metadata, found.records)
        lost = {}
        for actor, ranges in spans.items() if damaged else ():
            gaps, end = [], None
            for first, stop in sorted(ranges):
                if end is not None and first > end:
                    gaps.append([end, first])
                end = stop if end is None else max(end, stop)
            if gaps:
                lost[actor] = gaps
        return {
            "ingest_log": str(directory),
            "kept": kept,
            "dropped": dropped,
            "damaged_segments": damaged,
            "lost": lost,
        }
