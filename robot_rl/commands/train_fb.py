"""`robot-rl train-fb`: forward-backward reset-free training on the twin (SERL); `--resume
--run-dir X` continues from the last pair of checkpoints."""

from __future__ import annotations

from rich.console import Console

from robot_rl.agents.checkpoint import CheckpointError
from robot_rl.runtime.forward_backward import ForwardBackwardConfig, train_forward_backward

__all__ = ["ForwardBackwardConfig", "run"]


def run(config: ForwardBackwardConfig) -> int:
    console = Console(soft_wrap=True)
    try:
        summary = train_forward_backward(config, console=console)
    except (ValueError, TypeError, FileNotFoundError, CheckpointError) as err:
        console.print(f"[red]error:[/] {err}")
        return 2
    except KeyboardInterrupt:
        return 130
    return 0 if summary["forward"]["final_eval"] is not None else 1
