"""Per-task training defaults: what `robot-rl train --task T` uses for the fields left unset.

The figures are the budgets the project measures against (issue acceptance: pick_cube 90%
success within 20,000 environment steps with 20 demonstrations; peg_insert 80% within 30,000).
"""

from __future__ import annotations

import dataclasses

RECIPES: dict[str, dict] = {
    "pick_cube": {"total_steps": 20_000, "demos": 20, "start_steps": 500},
    "peg_insert": {"total_steps": 30_000, "demos": 20, "start_steps": 500},
    "car_lap": {"total_steps": 30_000, "demos": 5, "start_steps": 500},
}
GYM_RECIPE = {"total_steps": 10_000, "demos": 0, "start_steps": 1_000}
FALLBACK = {"total_steps": 20_000, "demos": 0, "start_steps": 1_000}


def recipe_for(backend: str, task: str) -> dict:
    if backend == "gym":
        return GYM_RECIPE
    return RECIPES.get(task, FALLBACK)


def resolve(cfg):
    """A copy of a TrainConfig with every None field taken from the task's recipe."""
    recipe = recipe_for(cfg.backend, cfg.task)
    filled = {k: v for k, v in recipe.items() if getattr(cfg, k) is None}
    return dataclasses.replace(cfg, **filled)


def task_recipe(task: str, seed: int = 0, **overrides):
    """The full TrainConfig of a task's recipe (for benchmarks and tests)."""
    from robot_rl.runtime.train_loop import TrainConfig

    return resolve(TrainConfig(task=task, seed=seed, backend="twin", **overrides))
