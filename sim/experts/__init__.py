"""Scripted experts, one module per task: they generate demonstrations and play the simulated
human. They read privileged twin readings (object poses), so they live with the twin.

An expert has ``reset(rng)`` (start of an episode) and ``act(reading) -> action`` returning a
normalised action in the task's action space. Modules register with ``register_expert``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Protocol

import numpy as np


class ScriptedExpert(Protocol):
    def reset(self, rng: np.random.Generator) -> None: ...

    def act(self, reading: dict[str, np.ndarray]) -> np.ndarray: ...


EXPERTS: dict[str, Callable[..., ScriptedExpert]] = {}


def register_expert(task_name: str):
    def wrap(factory):
        EXPERTS[task_name] = factory
        return factory

    return wrap


def make_expert(task) -> ScriptedExpert:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    if task.name not in EXPERTS:
        raise ValueError(f"no scripted expert for task {task.name!r}; have {sorted(EXPERTS)}")
    return EXPERTS[task.name](task)
