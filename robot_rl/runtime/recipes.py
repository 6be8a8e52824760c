"""Per-task training defaults: what `robot-rl train --task T` uses for the fields left unset.

The figures are the budgets the project measures against (issue acceptance: pick_cube 90%
success within 20,000 environment steps with 20 demonstrations; peg_insert 80% within 30,000;
car_lap from its forward camera, a clean lap faster than the scripted expert's within 10,000:
benchmarks/car_pixels.py, with a frozen trunk, reaches it at 2,000 steps on 3 seeds of 3).

A run with cameras on the twin also takes ``PIXEL_RECIPE`` (see there for why) for the fields it
leaves at their defaults.
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

PIXEL_RECIPE = {"image_size": 32, "batch_size": 64}
"""Learning from cameras on a CPU: 32 px images and 64-transition batches, with the agent's
default trunk (the small conv, trained, with DrQ shifts). Why: every critic update runs the
trunk over the batch's images, so pixels x batch set the cost of a step. Measured on 2 shared CPU
cores, 400 steps each (benchmarks/results/pixel_learning/measure.jsonl; pick_cube, front + wrist,
no privileged state): about 6-7 env steps/s at UTD 2, against 4-5 for the other practical
candidate, a frozen random trunk with the embedding cache at 64 px and batch 256; and it learned
faster (issue 17: 100% vs 90% at 2,000 steps; here 90% at 1,500 steps on seeds 0 and 1). Taken
for the fields a run leaves at TrainConfig's defaults (``--image-size 48`` stays 48);
``--no-pixel-recipe`` keeps the defaults (64 px, batch 256)."""


def recipe_for(backend: str, task: str, cameras: tuple[str, ...] = (), pixels: bool = True) -> dict:
    if backend == "gym":
        return GYM_RECIPE
    recipe = RECIPES.get(task, FALLBACK)
    return {**recipe, **PIXEL_RECIPE} if cameras and pixels else recipe


def resolve(cfg):
    """A copy of a TrainConfig with every field still at its default (None for the budgets)
    taken from the task's recipe."""
    recipe = recipe_for(cfg.backend, cfg.task, tuple(cfg.cameras), cfg.pixel_recipe)
    defaults = {f.name: f.default for f in dataclasses.fields(cfg)}
    filled = {
        k: v for k, v in recipe.items() if getattr(cfg, k) is None or getattr(cfg, k) == defaults[k]
    }
    return dataclasses.replace(cfg, **filled)


def task_recipe(task: str, seed: int = 0, **overrides):
    """The full TrainConfig of a task's recipe (for benchmarks and tests)."""
    from robot_rl.runtime.train_loop import TrainConfig

    return resolve(TrainConfig(task=task, seed=seed, backend="twin", **overrides))
