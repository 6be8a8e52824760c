"""`robot-rl train`: single-process training with progress output, checkpoints and curves."""

from __future__ import annotations

from rich.console import Console

from robot_rl.agents.checkpoint import CheckpointError
from robot_rl.runtime.train_loop import TrainConfig, train

__all__ = ["TrainConfig", "run"]


def run(config: TrainConfig) -> int:
    console = Console(soft_wrap=True)
    try:
        summary = train(config, console=console)
    except (ValueError, TypeError, FileNotFoundError, CheckpointError) as err:
        console.print(f"[red]error:[/] {err}")
        return 2
    except KeyboardInterrupt:
        return 130
    return 0 if summary.get("final_eval") is not None else 1
