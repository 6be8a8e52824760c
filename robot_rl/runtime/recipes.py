"""Training defaults for the fields a run leaves unset: the one resolver behind `robot-rl train`
(``TrainConfig``) and `robot-rl learner` (``LearnerConfig``).

A task's recipe is its class's ``recipe`` (tasks/). The figures are the budgets the project
measures against (issue acceptance: pick_cube 90% success within 20,000 environment steps with
20 demonstrations; peg_insert 80% within 30,000; car_lap from its forward camera, a clean lap
faster than the scripted expert's within 10,000: benchmarks/car_pixels.py, with a frozen trunk,
reaches it at 2,000 steps on 3 seeds of 3).

A run with cameras on the twin also takes ``PIXEL_RECIPE`` (see there for why) for the fields it
leaves unset. Unset is a sentinel, not equality with the default: a budget's default is None, a
size's is an ``Unset`` int (the default's value, marked as not given), so ``--batch-size 256``
typed by the user stays 256 where the recipe would give 64.
"""

from __future__ import annotations

import dataclasses


class Unset(int):
    """A recipe field's default: an int like any other wherever it is read, which a recipe may
    replace because the user did not give it (a typed value, a config file's, or one set in
    code is a plain int)."""

    def __repr__(self) -> str:
        return int.__repr__(self)


GYM_RECIPE = {"total_steps": 10_000, "demos": 0, "start_steps": 1_000}
FALLBACK = {"total_steps": 20_000, "demos": 0, "start_steps": 1_000}
"""A task whose class names no recipe."""

PIXEL_RECIPE = {"image_size": 32, "batch_size": 64}
"""Learning from cameras on a CPU: 32 px images and 64-transition batches, with the agent's
default trunk (the small conv, trained, with DrQ shifts). Why: every critic update runs the
trunk over the batch's images, so pixels x batch set the cost of a step. Measured on 2 shared CPU
cores, 400 steps each (benchmarks/results/pixel_learning/measure.jsonl; pick_cube, front + wrist,
no privileged state): about 6-7 env steps/s at UTD 2, against 4-5 for the other practical
candidate, a frozen random trunk with the embedding cache at 64 px and batch 256; and it learned
faster (issue 17: 100% vs 90% at 2,000 steps; here 90% at 1,500 steps on seeds 0 and 1). Taken
for the fields a run leaves unset (``--image-size 48`` stays 48, and so does a typed
``--batch-size 256``); ``--no-pixel-recipe`` keeps the defaults (64 px, batch 256)."""


def task_recipe_of(task: str) -> dict:
    """The recipe a task's class names (``Task.recipe``), else ``FALLBACK`` (also for a name
    no task has: the config's own check names it)."""
    from robot_rl.envs.task import task_class

    try:
        recipe = task_class(task).recipe
    except ValueError:
        recipe = None
    return dict(recipe if recipe is not None else FALLBACK)


def recipe_for(backend: str, task: str, cameras: tuple[str, ...] = (), pixels: bool = True) -> dict:
    if backend == "gym":
        return dict(GYM_RECIPE)
    recipe = task_recipe_of(task)
    return {**recipe, **PIXEL_RECIPE} if cameras and pixels else recipe


def resolve(cfg, *, recorded_demos: bool = False):
    """A copy of ``cfg`` (a dataclass with ``task`` and ``cameras``: ``TrainConfig``,
    ``LearnerConfig``) with every recipe field it has still unset (None for the budgets, an
    ``Unset`` default for the sizes) taken from the task's recipe. A config without
    ``backend`` is a twin's or a robot's; one without ``pixel_recipe`` takes no pixel recipe.

    ``recorded_demos`` (the learner's rule): with ``demo_path`` or in robot mode the scripted
    demonstrations default to 0: recorded ones take their place, or a robot has none.
    """
    backend = getattr(cfg, "backend", "twin")
    pixels = getattr(cfg, "pixel_recipe", False)
    recipe = recipe_for(backend, cfg.task, tuple(cfg.cameras), pixels)
    fields = {f.name for f in dataclasses.fields(cfg)}
    if recorded_demos and (getattr(cfg, "demo_path", None) or getattr(cfg, "robot_mode", False)):
        recipe["demos"] = 0
    filled = {
        k: v
        for k, v in recipe.items()
        if k in fields and (getattr(cfg, k) is None or isinstance(getattr(cfg, k), Unset))
    }
    return dataclasses.replace(cfg, **filled)
