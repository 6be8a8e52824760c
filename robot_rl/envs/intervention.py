"""Human in the loop: an operator can take over from the policy at any step (HIL-SERL).

``InterventionWrapper`` is one step in the env pipeline. Before each step it polls a
``TeleopSource`` (a SpaceMouse, a gamepad or keyboard over ROS 2, the twin's simulated human);
while the operator is active (``InterventionConfig`` says when), the operator's action replaces
the policy's and the step's info says so (``info["intervened"] = True``). The env below clips
whatever it executes to the task's safety box, and its ``info["applied_action"]`` is what replay
stores: for an intervened step that is the operator's action after clipping, never the policy's
proposal. Operator translations in the tool frame (``frame="tool"``) are rotated into the base
frame, the policy's, with the reading's ``tcp_quat`` (w, x, y, z).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from robot_rl.envs.backend import Reading

INTERVENTION_RATE = "robot/intervention_rate"
INTERVENTION_SECONDS = "robot/intervention_seconds"


@dataclass(frozen=True)
class OperatorCommand:
    """What a teleop device says at one instant."""

    action: np.ndarray
    """Normalised action in the task's action space ([-1, 1]^n), in the source's frame."""
    button: bool = False
    """The hold-to-intervene button is held."""
    stamp: float = field(default_factory=time.monotonic)
    """``time.monotonic()`` when the device produced it."""


@runtime_checkable
class TeleopSource(Protocol):
    """Any operator device: the wrapper polls it once per control step."""

    def poll(self, reading: Reading) -> OperatorCommand | None:
        """The operator's newest command, or None when there is none (or it is stale)."""

    def reset(self) -> None:
        """A new episode starts (sources with per-episode state clear it)."""


@dataclass(frozen=True)
class InterventionConfig:
    mode: Literal["button", "motion"] = "motion"
    """'button': active while the hold-to-intervene button is held; 'motion': also while any
    action entry exceeds the deadband, plus the hold-over."""
    deadband: float = 0.05
    """Largest |action entry| that still counts as the operator's hand at rest (motion mode)."""
    hold_over_steps: int = 3
    """Control steps the operator stays in charge after the last motion (motion mode): a 6-DoF
    mouse passes through zero whenever the hand changes direction, and without the hold-over
    control would flicker back to the policy."""
    frame: Literal["base", "tool"] = "base"
    """Frame of the operator's translation: 'tool' rotates it into the base frame."""
    translation_dims: tuple[int, int, int] = (0, 1, 2)
    """Action entries holding the x, y, z translation (frame='tool' only)."""
    max_age_s: float = 0.5
    """Commands older than this are ignored (a dead link must not steer)."""

    def __post_init__(self) -> None:
        if self.mode not in ("button", "motion"):
            raise ValueError(f"mode must be 'button' or 'motion', got {self.mode!r}")
        if self.frame not in ("base", "tool"):
            raise ValueError(f"frame must be 'base' or 'tool', got {self.frame!r}")
        if not 0.0 <= self.deadband < 1.0:
            raise ValueError(f"deadband must lie in [0, 1), got {self.deadband}")
        if self.hold_over_steps < 0:
            raise ValueError(f"hold_over_steps must be >= 0, got {self.hold_over_steps}")
        if self.max_age_s <= 0:
            raise ValueError(f"max_age_s must be > 0, got {self.max_age_s}")
        if len(self.translation_dims) != 3 or len(set(self.translation_dims)) != 3:
            raise ValueError(
                f"translation_dims must be 3 distinct indices: {self.translation_dims}"
            )


def quat_to_matrix(quat: np.ndarray) -> np.ndarray:
    """Rotation matrix of a w-x-y-z quaternion (normalised here; the tool-to-base rotation for
    a ``tcp_quat``)."""
    q = np.asarray(quat, np.float64)
    norm = np.linalg.norm(q)
    if q.shape != (4,) or not np.isfinite(norm) or norm < 1e-9:
        raise ValueError(f"expected a finite non-zero w-x-y-z quaternion, got {quat}")
    w, x, y, z = q / norm
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def tool_to_base(action: np.ndarray, tcp_quat: np.ndarray, dims=(0, 1, 2)) -> np.ndarray:
    """``action`` with its translation rotated from the tool frame into the base frame.

    A rotated unit command can exceed 1 on one axis; it is scaled down as a whole (not clipped
    per axis) so that the direction the operator asked for is kept.
    """
    out = np.array(action, np.float32)
    dims = list(dims)
    xyz = quat_to_matrix(tcp_quat) @ out[dims].astype(np.float64)
    largest = float(np.max(np.abs(xyz)))
    if largest > 1.0:
        xyz /= largest
    out[dims] = xyz
    return out


def intervention_metrics(intervened_steps: int, steps: int, control_hz: float) -> dict[str, float]:
    """Per-episode figures: share of steps under intervention, and their time in seconds."""
    return {
        INTERVENTION_RATE: intervened_steps / steps if steps else 0.0,
        INTERVENTION_SECONDS: intervened_steps / control_hz,
    }


class OperatorGate:
    """Decides, step by step, whether the operator is in charge (button / deadband / hold-over)."""

    def __init__(self, config: InterventionConfig, clock: Callable[[], float] = time.monotonic):
        self.config = config
        self.clock = clock
        self._hold_left = 0

    def reset(self) -> None:
        self._hold_left = 0

    def fresh(self, command: OperatorCommand | None) -> OperatorCommand | None:
        if command is None or self.clock() - command.stamp > self.config.max_age_s:
            return None
        return command

    def update(self, command: OperatorCommand | None) -> bool:
        """Whether the operator acts this step, given the (fresh) command or None."""
        if self.config.mode == "button":
            return command is not None and command.button
        moving = command is not None and (
            command.button or float(np.max(np.abs(command.action))) > self.config.deadband
        )
        if moving:
            self._hold_left = self.config.hold_over_steps
            return True
        if self._hold_left > 0:
            self._hold_left -= 1
            return True
        return False


class InterventionWrapper(gym.Wrapper):
    """Replaces the policy's action by the operator's while the operator is active (flagged).

    The wrapped env must expose ``reading`` (``RobotEnv`` does): sources read it (the simulated
    human's expert, the tool-frame rotation). ``info`` gains ``intervened`` on every step, and on
    an episode's last step ``intervention_metrics`` (see ``intervention_metrics``). The wrapper
    owns ``source``: ``close()`` closes it (when it has a ``close``) after the env.
    """

    def __init__(
        self,
        env: gym.Env,
        source: TeleopSource,
        config: InterventionConfig | None = None,
        control_hz: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        super().__init__(env)
        if not isinstance(env.action_space, gym.spaces.Box) or len(env.action_space.shape) != 1:
            raise ValueError(f"intervention needs a 1-d Box action space, got {env.action_space}")
        if not isinstance(source, TeleopSource):
            raise TypeError(f"source must implement TeleopSource (poll, reset), got {source!r}")
        self.source = source
        self.config = config or InterventionConfig()
        # the translation's entries matter only when it is rotated (a car's 2 entries have none)
        tool = self.config.frame == "tool"
        if tool and max(self.config.translation_dims) >= env.action_space.shape[0]:
            raise ValueError(
                f"translation_dims {self.config.translation_dims} do not fit the action space "
                f"{env.action_space.shape}"
            )
        task = getattr(env.unwrapped, "task", None)
        self.control_hz = float(control_hz or getattr(task, "control_hz", 0.0) or 10.0)
        self.gate = OperatorGate(self.config, clock)
        self._last_operator_action: np.ndarray | None = None
        self.episode_steps = 0
        self.episode_intervened = 0

    @property
    def reading(self) -> Reading:
        return self.env.unwrapped.reading

    # Code written for ``RobotEnv`` (the actor loop, status reporting) works on the wrapped env.
    @property
    def task(self):
        return self.env.unwrapped.task

    @property
    def backend(self):
        return getattr(self.env.unwrapped, "backend", None)

    def close(self) -> None:
        """Closes the env, then the source (the wrapper owns it: a ROS node, a device)."""
        try:
            super().close()
        finally:
            close_source = getattr(self.source, "close", None)
            if callable(close_source):
                close_source()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.source.reset()
        self.gate.reset()
        self._last_operator_action = None
        self.episode_steps = self.episode_intervened = 0
        return obs, info

    def operator_action(self, command: OperatorCommand, reading: Reading) -> np.ndarray:
        """The operator's command as an action in the policy's (base) frame."""
        action = np.asarray(command.action, np.float32)
        if action.shape != self.action_space.shape:
            raise ValueError(
                f"operator action shape {action.shape}, expected {self.action_space.shape}"
            )
        if not np.all(np.isfinite(action)):
            raise ValueError(f"non-finite operator action refused: {action}")
        action = np.clip(action, -1.0, 1.0)
        if self.config.frame == "tool":
            if "tcp_quat" not in reading:
                raise ValueError("frame='tool' needs a 'tcp_quat' reading (an arm backend)")
            action = tool_to_base(action, reading["tcp_quat"], self.config.translation_dims)
        return action

    def step(self, action):
        reading = self.reading
        command = self.gate.fresh(self.source.poll(reading))
        if command is not None:
            self._last_operator_action = self.operator_action(command, reading)
        intervened = self.gate.update(command)
        if intervened:
            # During the hold-over without a fresh command the arm holds still: a zero action.
            proposed = np.asarray(action, np.float32)
            action = (
                self._last_operator_action
                if command is not None
                else np.zeros(self.action_space.shape, np.float32)
            )
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.episode_steps += 1
        self.episode_intervened += int(intervened)
        info["intervened"] = intervened
        if intervened:
            info["policy_action"] = proposed
        if terminated or truncated:
            info["intervention_metrics"] = intervention_metrics(
                self.episode_intervened, self.episode_steps, self.control_hz
            )
        return obs, reward, terminated, truncated, info
