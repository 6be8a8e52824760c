"""The full ``TrainConfig`` of a task's recipe, for the benchmarks (run as scripts, so
``benchmarks/`` is on ``sys.path``). It lives here, not in ``robot_rl.runtime.recipes``: the
resolver must not import the training loop that imports it."""

from __future__ import annotations

from robot_rl.runtime.recipes import resolve
from robot_rl.runtime.train_loop import TrainConfig


def task_recipe(task: str, seed: int = 0, **overrides) -> TrainConfig:
    """``robot-rl train --task TASK --backend twin`` with the recipe's budgets filled in."""
    return resolve(TrainConfig(task=task, seed=seed, backend="twin", **overrides))
