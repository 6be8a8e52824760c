"""The pixel recipe of a whole stack (`robot-rl up`), chosen for the device its learner runs on.

On a robot the actor never waits for the learner, so a learner that cannot keep up only lowers
the update-to-data ratio: the recipe must fit the device. Every critic update runs the trunk
over the batch's images, so image side x batch size set the cost of an update:

- ``cpu``: ``recipes.PIXEL_RECIPE`` (32 px, batch 64), what `robot-rl train` uses from cameras on
  the CPU: its pixel learner runs about 6-7 env steps/s at ratio 2 on 2 cores;
- ``gpu``: 64 px and batch 256, SERL's and HIL-SERL's sizes (their learners run on a GPU).

A field the user gave keeps its value; only fields left unset (None) take the recipe's.
``learner_backend`` asks JAX in a child process (this process stays free of JAX: ``up`` starts
its children with fork + exec, which JAX's threads do not survive well).
"""

from __future__ import annotations

import os
import subprocess
import sys

from robot_rl.runtime.recipes import PIXEL_RECIPE

STACK_PIXEL_RECIPES = {
    "cpu": dict(PIXEL_RECIPE),
    "gpu": {"image_size": 64, "batch_size": 256},
}
STATE_RECIPE = {"image_size": 64, "batch_size": 256}
"""Without cameras (image_size is then unused)."""


def learner_backend(timeout: float = 120.0) -> str:
    """'gpu' when JAX here runs on a GPU (CUDA or ROCm), else 'cpu' (also when JAX cannot
    say within ``timeout``). ``JAX_PLATFORMS`` is honoured as JAX honours it."""
    probe = "import jax; print(jax.default_backend())"
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "cpu"
    lines = done.stdout.strip().splitlines()
    backend = lines[-1].strip() if done.returncode == 0 and lines else "cpu"
    return "gpu" if backend in ("gpu", "cuda", "rocm") else "cpu"


def stack_recipe(cameras: tuple[str, ...], backend: str) -> tuple[str, dict]:
    """(name, fields) of the recipe for a stack observing ``cameras`` with a learner on
    ``backend``."""
    if not cameras:
        return "state", dict(STATE_RECIPE)
    return "pixels", dict(STACK_PIXEL_RECIPES[backend])


def fill_recipe(values: dict, recipe: dict) -> dict:
    """The recipe's fields that ``values`` leaves unset (None)."""
    return {k: v for k, v in recipe.items() if values.get(k) is None}
