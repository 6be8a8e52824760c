"""`robot-rl train`: single-process training with progress output, checkpoints and curves."""

from __future__ import annotations

from robot_rl.commands.training_run import run_training
from robot_rl.runtime.recipes import resolve
from robot_rl.runtime.train_loop import TrainConfig, train

CONFIG_FILE = True
"""``--config FILE``: a whole TrainConfig as JSON (``--print-config`` prints one, recipe applied),
then the command line's flags on top."""


def resolve_config(config: TrainConfig) -> TrainConfig:
    """What --print-config prints: the config with the task's (and the pixel) recipe filled in."""
    return resolve(config)


def run(config: TrainConfig) -> int:
    return run_training(train, config, lambda summary: summary.get("final_eval"))
