"""The task contract: one object that says what to observe, how to act, what counts as success
and how to reset, for the real robot and the twin alike.

A task is a frozen dataclass; its fields are the run's choices (cameras and image size, reward
type, episode length). ``tasks/<name>.py`` holds one subclass per task and registers it.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym
import numpy as np

from robot_rl.envs.backend import Backend, Command, Reading


@dataclass(frozen=True)
class Task(abc.ABC):
    """Base class. Subclasses set ``name`` and ``robot`` and implement the abstract methods."""

    name = "task"
    robot = "arm"  # which backend kind drives it: "arm" or "car"
    ends_on_success = True  # success is a real termination (no bootstrap past it)
    reward_needs_twin = False
    """True when reward, success and failure read readings only the twin has (object poses):
    on a robot such a task scores nothing itself (``ground_truth=False``)."""

    # What a task owns besides its loop, as class attributes (plain data: the core reads them
    # without MuJoCo or ROS 2; sim/ and runtime/ look them up here, never by task name).
    scene: ClassVar[str | None] = None
    """The twin's scene, by name (``robot_rl.sim.arm_scenes.SCENES`` resolves it); arm tasks
    only."""
    twin_objects: ClassVar[tuple[str, ...]] = ()
    """The twin objects (``object/<name>_pos`` readings, ``/sim/objects/<name>/pose`` topics)
    that the privileged state and the scoring read: what the ROS backend subscribes to."""
    teleop_axes: ClassVar[tuple[str, ...] | None] = None
    """Which teleop field drives each action entry (``robot_rl.ros.teleop.TeleopMapping``);
    None: the arm's default (xyz + gripper) for a 4-entry action."""
    recipe: ClassVar[Mapping[str, int] | None] = None
    """Training defaults (``total_steps``, ``demos``, ``start_steps``) for the fields a run
    leaves unset (``robot_rl.runtime.recipes``); None: the fallback recipe."""
    backward_task: ClassVar[str | None] = None
    """The task that undoes this one (forward-backward resets, SERL): pick_cube's is
    put_down_cube."""

    cameras: tuple[str, ...] = ()
    """Camera observations to use (empty: state only)."""
    image_size: int = 64
    """Square image side in pixels for every camera observation."""
    reward_type: str = "dense"
    """'dense' (shaped, for research) or 'sparse' (1 on success, the real-robot analogue)."""
    control_hz: float = 10.0
    """Policy rate in Hz."""
    max_episode_steps: int = 100
    """Steps before the episode is truncated (a truncation bootstraps)."""
    ground_truth: bool = True
    """Score steps with the task's own reward, success and failure. False in robot mode for a
    task whose scoring reads the twin (``reward_needs_twin``): the env then reads no such
    reading, pays 0 and ends episodes only on time; a reward classifier or the operator
    decides success (robot_rl.rewards)."""

    def __post_init__(self) -> None:
        if self.reward_type not in ("dense", "sparse"):
            raise ValueError(f"reward_type must be 'dense' or 'sparse', got {self.reward_type!r}")
        if self.image_size < 8:
            raise ValueError(f"image_size must be >= 8, got {self.image_size}")
        if self.control_hz <= 0 or self.max_episode_steps < 1:
            raise ValueError("control_hz must be > 0 and max_episode_steps >= 1")

    def replace(self, **changes) -> Task:
        return dataclasses.replace(self, **changes)

    @property
    def scores_itself(self) -> bool:
        """Whether the env computes reward, success and failure from this task."""
        return self.ground_truth or not self.reward_needs_twin

    def reads_twin(self) -> bool:
        """Whether any observation or score of this task reads a twin-only reading: what the
        ROS backend must subscribe to ``/sim/`` topics for."""
        return bool(getattr(self, "privileged_state", False)) or (
            self.reward_needs_twin and self.ground_truth
        )

    @abc.abstractmethod
    def state_space(self) -> gym.spaces.Box:
        """The proprioceptive (and, in sim-only research tasks, object) state vector."""

    @abc.abstractmethod
    def action_space(self) -> gym.spaces.Box:
        """Always [-1, 1]^n; ``to_command`` scales it to physical units."""

    def observation_space(self) -> gym.spaces.Dict:
        spaces: dict[str, gym.spaces.Space] = {"state": self.state_space()}
        for camera in self.cameras:
            spaces[camera] = gym.spaces.Box(0, 255, (self.image_size, self.image_size, 3), np.uint8)
        return gym.spaces.Dict(spaces)

    @abc.abstractmethod
    def observe(self, reading: Reading) -> dict[str, np.ndarray]:
        """Observation dict matching ``observation_space`` (fresh arrays, never shared)."""

    def observation(self, state: np.ndarray, reading: Reading) -> dict[str, np.ndarray]:
        """``observe``'s dict: ``state`` as float32 and a copy of each camera's image."""
        obs = {"state": state.astype(np.float32)}
        for camera in self.cameras:
            obs[camera] = np.array(reading[f"image/{camera}"], np.uint8)
        return obs

    @abc.abstractmethod
    def to_command(self, action: np.ndarray, reading: Reading) -> tuple[Command, np.ndarray]:
        """Scale a normalised action, clip it to the safety box and rate limits; return the
        command and the normalised action that was actually applied (what replay stores)."""

    @abc.abstractmethod
    def dense_reward(self, reading: Reading) -> float:
        """Shaped progress; for tasks that end on success, in [0, 1] (1 = done)."""

    @abc.abstractmethod
    def success(self, reading: Reading) -> bool: ...

    def failure(self, reading: Reading) -> bool:
        """A real end of the episode other than success (e.g. the object fell off the table)."""
        return False

    def success_possible(self, reading: Reading) -> bool:
        """A necessary condition for success that the robot's own sensors check (its
        proprioception, never a twin reading): a reward classifier's success counts only where
        this holds, as HIL-SERL gates its classifiers on the gripper's state. Whatever
        ``success`` says on the twin must imply it. Default: always possible."""
        return True

    def reward(self, reading: Reading) -> float:
        if self.reward_type == "sparse":
            return float(self.success(reading))
        if not self.ends_on_success:
            return self.dense_reward(reading)
        # An episode that ends on success must not pay more for lingering near the goal than for
        # reaching it, or the agent learns to hover: the shaped progress becomes a cost in
        # [-1, 0] that stops at success, and a real failure costs the most the rest of the
        # episode could have cost.
        if self.success(reading):
            return 0.0
        if self.failure(reading):
            return -float(self.max_episode_steps)
        return float(np.clip(self.dense_reward(reading), 0.0, 1.0)) - 1.0

    def terminated(self, reading: Reading) -> bool:
        if self.failure(reading):
            return True
        return self.ends_on_success and self.success(reading)

    def info(self, reading: Reading) -> dict:
        """Extra per-step figures for logging."""
        return {}

    @abc.abstractmethod
    def reset(self, backend: Backend, rng: np.random.Generator) -> None:
        """The reset procedure: robot to its randomised reset pose; on the twin also the scene."""


TASKS: dict[str, Callable[..., Task]] = {}


def register_task(cls: type[Task]) -> type[Task]:
    TASKS[cls.name] = cls
    return cls


def task_class(name: str) -> type[Task]:
    """The registered class of task ``name`` (its class attributes, without building it)."""
    import robot_rl.tasks  # noqa: F401  (registers the tasks)

    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}")
    return TASKS[name]


def make_task(name: str, **overrides) -> Task:
    return task_class(name)(**overrides)
