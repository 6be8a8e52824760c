"""A run's directory: config, TensorBoard events, JSON-lines metrics (each record with its step
and ``wall_time``, epoch seconds, as TensorBoard's events), curves PNG, summary.
The events file is written in the caller's thread and flushed every two minutes and at each
evaluation; ``close()`` (at the latest at interpreter exit) gives up quietly what a full disk
cannot take."""

from __future__ import annotations

import contextlib
import json
import math
import socket
import time
import weakref
from pathlib import Path

from robot_rl.runtime.plots import plot_curves
from robot_rl.runtime.progress import Every

EVAL_FILE = "eval.jsonl"
METRICS_FILE = "metrics.jsonl"


class RunLogger:
    def __init__(self, run_dir: str | Path, config: dict, resume: bool = False):
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.record_writer import RecordWriter

        self.run_dir = Path(run_dir)
        (self.run_dir / "tb").mkdir(parents=True, exist_ok=True)
        if not resume:
            (self.run_dir / "config.json").write_text(json.dumps(config, indent=2, default=str))
            for name in (EVAL_FILE, METRICS_FILE):
                (self.run_dir / name).unlink(missing_ok=True)
        name = f"events.out.tfevents.{time.time():.0f}.{socket.gethostname()}"
        self._events = RecordWriter(str(self.run_dir / "tb" / name))
        self._events.write(
            Event(wall_time=time.time(), file_version="brain.Event:2").SerializeToString()
        )
        self._flush_due = Every(120.0, -math.inf, grid=False)  # the first scalars at once
        self.close = weakref.finalize(self, _close_quietly, self._events)
        """Close the events file (at the latest at interpreter exit); once."""

    def _tensorboard(self, step: int, values: dict[str, float]) -> None:
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.summary import scalar

        for tag, value in values.items():
            event = Event(wall_time=time.time(), step=step, summary=scalar(tag, value))
            self._events.write(event.SerializeToString())

    def _append(self, name: str, record: dict) -> None:
        with open(self.run_dir / name, "a") as f:
            f.write(json.dumps(record) + "\n")

    def scalars(self, step: int, values: dict[str, float]) -> None:
        clean = {k: float(v) for k, v in values.items() if math.isfinite(float(v))}
        self._tensorboard(step, clean)
        self._append(METRICS_FILE, {"step": step, "wall_time": round(time.time(), 3), **clean})
        if self._flush_due.due(time.monotonic()):
            self._events.flush()

    def evaluation(self, step: int, result: dict) -> None:
        keys = ("return_mean", "success_rate", "length_mean")
        self._tensorboard(step, {f"eval/{key}": result[key] for key in keys})
        self._append(EVAL_FILE, {"step": step, **result})
        self._events.flush()
        plot_curves(self.run_dir)

    def finish(self, summary: dict) -> None:
        self._events.close()
        (self.run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        plot_curves(self.run_dir)


def _close_quietly(events) -> None:
    with contextlib.suppress(OSError):  # the file is closed all the same, its buffer dropped
        events.close()
