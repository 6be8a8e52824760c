"""What `robot-rl train` and `robot-rl train-fb` share around their training function: a console,
bad input reported in one line on stderr with exit code 2, Ctrl-C as 130 (SIGTERM: 143, the
command line's robot_rl.runtime.stopping), and 1 when no final evaluation was reached."""

from __future__ import annotations

import sys
from collections.abc import Callable

from rich.console import Console

from robot_rl.agents.checkpoint import CheckpointError


def run_training(train: Callable, config, final_eval: Callable[[dict], object]) -> int:
    """``train(config, console=...)`` -> summary; 0 when ``final_eval(summary)`` is not None."""
    console = Console(soft_wrap=True)
    try:
        summary = train(config, console=console)
    except (ValueError, TypeError, FileNotFoundError, CheckpointError) as err:
        print(f"error: {err}", file=sys.stderr)  # errors on stderr, as every command's
        return 2
    except KeyboardInterrupt:
        return 130
    return 0 if final_eval(summary) is not None else 1
