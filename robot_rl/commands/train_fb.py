"""`robot-rl train-fb`: forward-backward reset-free training on the twin (SERL); `--resume
--run-dir X` continues from the last pair of checkpoints."""

from __future__ import annotations

from robot_rl.commands.training_run import run_training
from robot_rl.runtime.forward_backward import ForwardBackwardConfig, train_forward_backward


def run(config: ForwardBackwardConfig) -> int:
    return run_training(
        train_forward_backward, config, lambda summary: summary["forward"]["final_eval"]
    )
