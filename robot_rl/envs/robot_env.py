"""A gymnasium environment over any backend (the twin, the ROS 2 robot) driven by one task."""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym
import numpy as np

from robot_rl.envs.backend import Backend
from robot_rl.envs.task import Task


class RobotEnv(gym.Env):
    """``step`` = task.to_command -> backend.send -> backend.advance -> backend.read.

    The info dict carries ``success``, ``applied_action`` (the normalised action after the
    task's safety clipping, which is what replay must store) and the task's own figures.
    A non-finite action is refused before anything reaches the backend.
    """

    metadata: ClassVar[dict] = {"render_modes": ["rgb_array"]}

    def __init__(self, task: Task, backend: Backend):
        if task.robot == "arm" and not hasattr(backend, "move_to"):
            raise TypeError(f"task {task.name!r} needs an arm backend, got {type(backend)}")
        if task.robot == "car" and not hasattr(backend, "place_car"):
            raise TypeError(f"task {task.name!r} needs a car backend, got {type(backend)}")
        self.task = task
        self.backend = backend
        self.observation_space = task.observation_space()
        self.action_space = task.action_space()
        self._reading = None
        self._steps = 0
        self._rng = np.random.default_rng()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.task.reset(self.backend, self._rng)
        self._reading = self.backend.read()
        self._steps = 0
        return self.task.observe(self._reading), {"success": False}

    def step(self, action):
        if self._reading is None:
            raise RuntimeError("call reset() before step()")
        action = np.asarray(action, np.float32)
        if action.shape != self.action_space.shape:
            raise ValueError(f"action shape {action.shape}, expected {self.action_space.shape}")
        if not np.all(np.isfinite(action)):
            raise ValueError(f"non-finite action refused: {action}")
        command, applied = self.task.to_command(action, self._reading)
        self.backend.send(command)
        self.backend.advance()
        self._reading = reading = self.backend.read()
        self._steps += 1
        success = self.task.success(reading)
        terminated = self.task.terminated(reading)
        truncated = not terminated and self._steps >= self.task.max_episode_steps
        info = {"success": success, "applied_action": applied, **self.task.info(reading)}
        return self.task.observe(reading), self.task.reward(reading), terminated, truncated, info

    @property
    def reading(self):
        """The newest backend reading (privileged entries included on the twin)."""
        return self._reading

    def close(self) -> None:
        self.backend.close()
