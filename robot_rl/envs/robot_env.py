"""A gymnasium environment over any backend (the twin, the ROS 2 robot) driven by one task."""

from __future__ import annotations

import logging
from typing import ClassVar

import gymnasium as gym
import numpy as np

from robot_rl.envs.backend import Backend, StaleReadingError
from robot_rl.envs.task import Task
from robot_rl.robot_kinds import robot_kind

logger = logging.getLogger(__name__)


class RobotEnv(gym.Env):
    """``step`` = task.to_command -> backend.send -> backend.advance -> backend.read.

    The info dict carries ``success``, ``applied_action`` (the normalised action after the
    task's safety clipping, which is what replay must store) and the task's own figures. A
    non-finite action is refused before anything reaches the backend. A stale sensor (the
    backend raises ``StaleReadingError``) truncates the step, never terminates it: the robot
    holds (nothing new is sent; the driver's watchdog holds it), the reason is logged and
    returned in ``info["stale"]``, and the observation is the last good one. Until a fresh
    reading arrives, further steps send nothing either: no command is ever built from stale data.
    """

    metadata: ClassVar[dict] = {"render_modes": ["rgb_array"]}

    def __init__(self, task: Task, backend: Backend):
        if not hasattr(backend, robot_kind(task.robot).backend_method):
            raise TypeError(f"task {task.name!r} needs a {task.robot} backend, got {type(backend)}")
        self.task = task
        self.backend = backend
        self.observation_space = task.observation_space()
        self.action_space = task.action_space()
        self._reading = None
        self._stale = False
        self._steps = 0
        self._rng = np.random.default_rng()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.task.reset(self.backend, self._rng)
        self._reading = self.backend.read()
        self._stale = False
        self._steps = 0
        return self.task.observe(self._reading), {"success": False}

    def start_in_place(self):
        """Begin an episode from wherever the robot and the scene are now, without the task's
        reset procedure: forward-backward training hands the robot from one task's policy to
        the other's this way (SERL), so that neither needs a reset. Returns like ``reset``."""
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
        if self._stale:
            # the last read failed: act only once a fresh reading says where the robot is
            try:
                self._reading = self.backend.read()
                self._stale = False
            except StaleReadingError as error:
                self.backend.advance()
                return self._stale_step(error, np.zeros_like(action))
        command, applied = self.task.to_command(action, self._reading)
        self.backend.send(command)
        self.backend.advance()
        try:
            reading = self.backend.read()
        except StaleReadingError as error:
            return self._stale_step(error, applied)
        self._reading = reading
        self._steps += 1
        reward, terminated, info = self._score(reading)
        truncated = not terminated and self._steps >= self.task.max_episode_steps
        info = {**info, "applied_action": applied}
        return self.task.observe(reading), reward, terminated, truncated, info

    def _score(self, reading) -> tuple[float, bool, dict]:
        """(reward, terminated, info with ``success``) from the task; in robot mode, for a task
        whose scoring reads the twin, none is computed: nothing here touches a twin-only
        reading, and a reward classifier or the operator (wrappers) scores the step."""
        if not self.task.scores_itself:
            return 0.0, False, {"success": False}
        info = {"success": self.task.success(reading), **self.task.info(reading)}
        return self.task.reward(reading), self.task.terminated(reading), info

    def _stale_step(self, error: StaleReadingError, applied: np.ndarray):
        """A truncated step on the last good reading; ``applied`` is what reached the robot
        this step (zeros when nothing was sent)."""
        self._stale = True
        self._steps += 1
        reason = str(error) or type(error).__name__
        logger.warning("stale reading, step truncated and robot holding: %s", reason)
        reading = self._reading
        reward, _, info = self._score(reading)
        info = {**info, "success": False, "applied_action": applied, "stale": reason}
        return self.task.observe(reading), reward, False, True, info

    @property
    def reading(self):
        """The newest backend reading (privileged entries included on the twin)."""
        return self._reading

    def close(self) -> None:
        self.backend.close()


class RobotEnvWrapper(gym.Wrapper):
    """A wrapper that keeps ``RobotEnv``'s attributes in reach: loops, experts and status
    reporting read ``task``, ``reading`` and ``backend``, which gymnasium wrappers do not
    forward."""

    @property
    def task(self):
        return self.env.task

    @property
    def reading(self):
        return self.env.reading

    @property
    def backend(self):
        return self.env.backend
