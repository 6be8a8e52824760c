"""A scripted policy's demonstrations on a gymnasium env (``train --backend gym --expert``).

``--expert`` names a factory as ``module:name`` or ``path/to/file.py:name``. It is called once
with the env as ``gym.make`` made it and returns the policy: a callable from the env's own
observation to an action in the env's own units (its action space's bounds), with an optional
``reset()`` called as each episode starts. Its successful episodes (the env's ``success``,
``is_success`` or ``succeed``) fill the demo buffer (``--demos N``), as the twin's scripted
experts do; failed attempts are discarded. Every way of naming it wrongly is a one-line
``UserError``.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path

import numpy as np

from robot_rl.errors import UserError


def load_factory(spec: str) -> Callable:
    """The object ``module:name`` or ``file.py:name`` names."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name.isidentifier():
        raise UserError(f"--expert: expected module:name or path/to/file.py:name, got {spec!r}")
    if where.endswith(".py"):
        module = _module_from_file(Path(where))
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as err:
            raise UserError(f"--expert: module {where!r} does not import ({err})") from None
    factory = getattr(module, name, None)
    if not callable(factory):
        raise UserError(f"--expert: {where} has no callable {name!r}")
    return factory


def _module_from_file(path: Path):
    if not path.is_file():
        raise UserError(f"--expert: no file {path}")
    module_spec = importlib.util.spec_from_file_location(f"robot_rl_expert_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


class GymExpert:
    """The user's policy as ``collect_demos`` drives an expert: ``reset(rng)``, then
    ``act(reading)`` on the env's own observation, answered in the agent's [-1, 1]."""

    def __init__(self, policy: Callable, adapter):
        self.policy, self.adapter = policy, adapter

    def reset(self, rng: np.random.Generator) -> None:
        reset = getattr(self.policy, "reset", None)
        if callable(reset):
            reset()

    def act(self, reading) -> np.ndarray:
        action = np.asarray(self.policy(reading), np.float64)
        if action.shape != self.adapter.action_space.shape:
            raise UserError(
                f"--expert: the policy answered an action of shape {action.shape}; the env "
                f"takes {self.adapter.action_space.shape}"
            )
        return self.adapter.to_unit(action)


def make_gym_expert(spec: str, adapter) -> GymExpert:
    """``spec``'s policy for ``adapter`` (a ``GymAdapter``)."""
    return GymExpert(load_factory(spec)(adapter.env), adapter)
