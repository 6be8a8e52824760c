"""A simulated human operator for the twin: the task's scripted expert takes over when the
policy is stuck or heading out of the safety box, corrects for a while, and hands back.

This is how HIL-SERL's operator behaves (watch, step in on trouble, let go), with the budget a
real operator has: a bounded share of each episode's steps and of all steps, and a per-episode
share that may decay over training so that the policy ends up acting on its own.

It is a ``TeleopSource``: plug it into ``InterventionWrapper``. It reads privileged twin readings
(through the expert and the task's dense reward), so it lives with the twin.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from robot_rl.envs.backend import Reading
from robot_rl.envs.intervention import OperatorCommand


@dataclass(frozen=True)
class SimulatedHumanConfig:
    stuck_window: int = 15
    """Control steps without a new best dense reward after which the policy counts as stuck."""
    min_progress: float = 0.02
    """Smallest rise of the episode's best dense reward that counts as progress."""
    takeover_steps: int = 15
    """Steps of one correction before control goes back to the policy."""
    box_margin: float = 0.005
    """The TCP predicted one control period ahead this far outside the safety box (m) counts
    as heading out of it."""
    episode_share: float = 0.3
    """Most intervened steps per episode, as a share of the task's episode length."""
    total_share: float = 0.2
    """Most intervened steps over all steps seen so far, as a share."""
    decay_steps: int | None = None
    """If set, the per-episode share falls linearly to zero over this many steps seen."""

    def __post_init__(self) -> None:
        for name in ("stuck_window", "takeover_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("episode_share", "total_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)}")
        if self.decay_steps is not None and self.decay_steps < 1:
            raise ValueError(f"decay_steps must be >= 1 or None, got {self.decay_steps}")
        if self.min_progress < 0 or self.box_margin < 0:
            raise ValueError("min_progress and box_margin must be >= 0")


class SimulatedHuman:
    """``poll`` returns the expert's action (button held) while correcting, else None."""

    def __init__(
        self,
        task,
        expert,
        config: SimulatedHumanConfig | None = None,
        rng: np.random.Generator | None = None,
    ):
        self.task = task
        self.expert = expert
        self.config = config or SimulatedHumanConfig()
        self.rng = rng or np.random.default_rng()
        self.total_steps = 0
        self.total_intervened = 0
        self.takeovers = 0
        self.reset()

    def episode_budget(self) -> int:
        """Intervened steps allowed in the current episode."""
        share = self.config.episode_share
        if self.config.decay_steps is not None:
            share *= max(0.0, 1.0 - self.total_steps / self.config.decay_steps)
        return int(share * self.task.max_episode_steps)

    def _episode_budget_left(self) -> bool:
        return self.episode_intervened < self.episode_budget()

    def _may_start(self) -> bool:
        # The total share is checked when a correction starts, not during it: a correction cut
        # off after a step or two teaches nothing.
        total_cap = self.config.total_share * self.total_steps
        return self._episode_budget_left() and self.total_intervened < total_cap

    def _stuck(self) -> bool:
        window = self.config.stuck_window
        history = self._rewards
        if len(history) <= window:
            return False
        before = max(history[:-window])
        return max(history[-window:]) < before + self.config.min_progress

    def _heading_out(self, reading: Reading) -> bool:
        low = getattr(self.task, "safety_low", None)
        high = getattr(self.task, "safety_high", None)
        if low is None or high is None or "tcp_pos" not in reading or "tcp_vel" not in reading:
            return False
        ahead = reading["tcp_pos"] + reading["tcp_vel"][:3] / self.task.control_hz
        margin = self.config.box_margin
        return bool(
            np.any(ahead < np.asarray(low) - margin) or np.any(ahead > np.asarray(high) + margin)
        )

    def reset(self) -> None:
        self.episode_intervened = 0
        self._correcting_left = 0
        self._rewards: list[float] = []

    def poll(self, reading: Reading) -> OperatorCommand | None:
        self.total_steps += 1
        if self._correcting_left == 0:
            self._rewards.append(float(self.task.dense_reward(reading)))
            if (self._stuck() or self._heading_out(reading)) and self._may_start():
                self._correcting_left = self.config.takeover_steps
                self.takeovers += 1
                self.expert.reset(self.rng)
        if self._correcting_left == 0:
            return None
        if not self._episode_budget_left() or self.task.success(reading):
            self._hand_back()
            return None
        self._correcting_left -= 1
        if self._correcting_left == 0:
            self._hand_back()
        self.episode_intervened += 1
        self.total_intervened += 1
        action = np.asarray(self.expert.act(reading), np.float32)
        return OperatorCommand(action=action, button=True, stamp=time.monotonic())

    def _hand_back(self) -> None:
        # The policy gets a fresh window from here: judging it by the expert's progress would
        # either never trigger again or trigger at once.
        self._correcting_left = 0
        self._rewards = []


class SuccessPress:
    """When a watching operator holds the success button: once per success it sees.

    A person presses success when the task is done (on the FR3 cell: the cube held above the
    table, which the simulated operator sees in the world's ground truth), holds it for
    ``press_s`` (a real press, many messages of a teleop topic long), and presses again only
    once the task has stopped being done (the cube put down, the scene reset), so a success the
    robot keeps holding is one press, not one per look."""

    def __init__(self, press_s: float = 0.3):
        if not press_s > 0:
            raise ValueError(f"press_s must be > 0, got {press_s}")
        self.press_s = press_s
        self.presses = 0
        self._armed = True
        self._until = -np.inf

    def update(self, done: bool, now: float) -> None:
        """What the operator sees at ``now`` (monotonic seconds): the task done or not."""
        if done and self._armed:
            self._armed = False
            self._until = now + self.press_s
            self.presses += 1
        elif not done:
            self._armed = True

    def down(self, now: float) -> bool:
        """Whether the button is held at ``now``."""
        return now < self._until


class ExpertTeleop:
    """A ``TeleopSource`` that is always driving: the task's scripted expert, button held.

    The twin's stand-in for an operator who drives every step (``record-demos --source teleop
    --teleop sim``); ``SimulatedHuman`` is the one who only steps in on trouble.
    """

    def __init__(self, task, expert=None, rng: np.random.Generator | None = None):
        if expert is None:
            from robot_rl.sim.experts import make_expert

            expert = make_expert(task)
        self.expert = expert
        self.rng = rng or np.random.default_rng()

    def reset(self) -> None:
        self.expert.reset(self.rng)

    def poll(self, reading: Reading) -> OperatorCommand:
        action = np.asarray(self.expert.act(reading), np.float32)
        return OperatorCommand(action=action, button=True, stamp=time.monotonic())


def with_simulated_human(env, seed: int = 0, config: SimulatedHumanConfig | None = None):
    """``env`` (a twin ``RobotEnv``) wrapped so that the simulated human can take over."""
    from robot_rl.envs.intervention import InterventionConfig, InterventionWrapper
    from robot_rl.sim.experts import make_expert

    task = env.unwrapped.task
    human = SimulatedHuman(task, make_expert(task), config, rng=np.random.default_rng(seed))
    # The expert holds the button for exactly its correction: no deadband, no hold-over.
    return InterventionWrapper(env, human, InterventionConfig(mode="button"))
