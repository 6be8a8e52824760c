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


class PhasedExpert:
    """An arm expert that walks through phases from ``first_phase``, asking each step for a
    ``gain`` fraction of the remaining error, plus ``integral`` times the error summed over the
    phase's steps; subclasses reset their counters in ``restart``."""

    first_phase: str
    INTEGRAL_BOUND = 0.03
    """The summed error is kept within this per axis (m): a blocked move does not wind it up."""

    def __init__(self, task, noise: float = 0.0, gain: float = 0.8, integral: float = 0.0):
        self.task = task
        self.noise = noise
        """Std of Gaussian noise on the action (demo diversity)."""
        self.gain = gain
        """Fraction of the remaining error asked for per step (below 1: no overshoot)."""
        self.integral = integral
        """Share of the error summed over the phase asked for on top, as a person pushes on
        when the arm stops short (an arm whose steps fall short by a steady offset, sagging
        or at its kinematics' limits, never arrives on ``gain`` alone; 0: none)."""
        self._rng = np.random.default_rng()
        self.restart()

    def restart(self) -> None:
        self._phase = self.first_phase
        self._summed = np.zeros(3)
        self._summed_in = self._phase

    def reset(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self.restart()

    def position_action(self, target: np.ndarray, tcp: np.ndarray, grip: float) -> np.ndarray:
        """The move of the TCP towards ``target`` (noisy for demos) and the gripper's ``grip``."""
        error = np.asarray(target, np.float64) - tcp
        if self._summed_in != self._phase:  # a new phase, a new goal: the sum starts again
            self._summed, self._summed_in = np.zeros(3), self._phase
        bound = self.INTEGRAL_BOUND
        self._summed = np.clip(self._summed + error, -bound, bound)
        delta = (self.gain * error + self.integral * self._summed) / self.task.step_size
        if self.noise > 0:
            delta = delta + self._rng.normal(0.0, self.noise, 3)
        return np.append(np.clip(delta, -1.0, 1.0), grip).astype(np.float32)


def seen_speed(velocity, recent: list[np.ndarray], period: float) -> float:
    """A TCP's speed as a person sees it: the lower of its velocity reading (None: none) and its
    mean over ``recent`` positions one control ``period`` apart (a position servo's velocity
    reading jitters at rest while the arm goes nowhere)."""
    speeds = [np.inf if velocity is None else float(np.linalg.norm(velocity))]
    if len(recent) > 1:
        moved = float(np.linalg.norm(recent[-1] - recent[0]))
        speeds.append(moved / (period * (len(recent) - 1)))
    return min(speeds)


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
