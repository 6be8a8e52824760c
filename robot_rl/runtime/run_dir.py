"""A run's directory: config, TensorBoard events, JSON-lines metrics, curves PNG, summary."""

from __future__ import annotations

import json
import math
from pathlib import Path

from robot_rl.runtime.plots import plot_curves

EVAL_FILE = "eval.jsonl"
METRICS_FILE = "metrics.jsonl"


class RunLogger:
    def __init__(self, run_dir: str | Path, config: dict, resume: bool = False):
        from tensorboardX import SummaryWriter

        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if not resume:
            (self.run_dir / "config.json").write_text(json.dumps(config, indent=2, default=str))
            for name in (EVAL_FILE, METRICS_FILE):
                (self.run_dir / name).unlink(missing_ok=True)
        self._writer = SummaryWriter(str(self.run_dir / "tb"))

    def _append(self, name: str, record: dict) -> None:
        with open(self.run_dir / name, "a") as f:
            f.write(json.dumps(record) + "\n")

    def scalars(self, step: int, values: dict[str, float]) -> None:
        clean = {k: float(v) for k, v in values.items() if math.isfinite(float(v))}
        for key, value in clean.items():
            self._writer.add_scalar(key, value, step)
        self._append(METRICS_FILE, {"step": step, **clean})

    def evaluation(self, step: int, result: dict) -> None:
        for key in ("return_mean", "success_rate", "length_mean"):
            self._writer.add_scalar(f"eval/{key}", result[key], step)
        self._append(EVAL_FILE, {"step": step, **result})
        self._writer.flush()
        plot_curves(self.run_dir)

    def finish(self, summary: dict) -> None:
        self._writer.close()
        (self.run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        plot_curves(self.run_dir)
