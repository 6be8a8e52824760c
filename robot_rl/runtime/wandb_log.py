"""Optional Weights & Biases logging beside TensorBoard (``robot-rl train --wandb``).

``wandb`` is imported only when asked for: without ``--wandb`` nothing of it loads, and asked
for without the package installed, the run stops before it starts with one line that says how to
install it (the ``wandb`` extra). ``WANDB_MODE=offline`` keeps the run on disk (``wandb sync``
uploads it later); the project and the run's name come from the options.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from robot_rl.errors import UserError

MISSING = (
    "--wandb: the wandb package is not installed: pip install 'robot-rl[wandb]' "
    "(or leave --wandb out; TensorBoard logs are always written)"
)


class WandbLogger:
    """A ``RunLogger`` (TensorBoard, metrics.jsonl, curves) that also logs to a wandb run."""

    def __init__(self, logger, *, project: str, name: str, config: dict, run_dir: Path):
        if importlib.util.find_spec("wandb") is None:
            raise UserError(MISSING)
        import wandb

        self._logger = logger
        self._run = wandb.init(
            project=project, name=name, config=config, dir=str(run_dir), resume="allow",
            id=_run_id(run_dir),
        )  # fmt: skip

    def scalars(self, step: int, values: dict[str, float]) -> None:
        self._logger.scalars(step, values)
        self._run.log({k: float(v) for k, v in values.items()}, step=step)

    def evaluation(self, step: int, result: dict) -> None:
        self._logger.evaluation(step, result)
        numbers = {
            f"eval/{k}": float(v)
            for k, v in result.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        self._run.log(numbers, step=step)

    def finish(self, summary: dict) -> None:
        self._logger.finish(summary)
        final = summary.get("final_eval") or {}
        for key, value in final.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self._run.summary[f"final/{key}"] = value
        self._run.finish()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logger, name)


def _run_id(run_dir: Path) -> str:
    """One wandb run per run folder, so --resume continues it."""
    import hashlib

    return hashlib.sha256(str(Path(run_dir).absolute()).encode()).hexdigest()[:16]
