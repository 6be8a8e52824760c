"""`robot-rl train`: single-process training with progress output, checkpoints and curves."""

from __future__ import annotations

from robot_rl.commands.training_run import run_training
from robot_rl.runtime.train_loop import TrainConfig, train


def run(config: TrainConfig) -> int:
    return run_training(train, config, lambda summary: summary.get("final_eval"))
