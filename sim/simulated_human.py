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
from robot_rl.sim.experts import seen_speed


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


# --- An operator who records: varied behaviours, demonstrations, labels ------------------------

CARRY_ABOVE = 0.005
"""Lowest TCP target when carrying a picked cube, above the task's success height (m, at
pick_cube's scale: ``_scaled``), so a carried cube is seen both above and just below it."""
LOW_LIFT_BAND = (-0.035, 0.025)
"""A stopped lift's TCP height cap, from the task's success height (m, at pick_cube's scale)."""


def _scaled(task, offset: float) -> float:
    """A TCP height ``offset`` from the height at which the task's cube counts as lifted (its
    centre's), scaled from pick_cube's 6 cm lift to the task's."""
    lift = float(getattr(task, "lift_height", 0.06))
    success_height = float(getattr(task, "cube_half", 0.025)) + lift
    return success_height + offset * lift / 0.06


BEHAVIOURS = ("expert", "noisy", "open_gripper", "low_lift", "drop", "random", "wander", "carry")
"""What an operator (or the twin's label recorder) does in one episode: a clean pick held after
success, a noisy pick, a pick with the gripper left open, a lift stopped below or above the
success height, a pick that lets go, random actions (the frames an RL run explores first:
without them a classifier is never shown those failures, and the policy learns to fool it),
wandering to random points of the whole safety box with the cube left on the table (an
exploring policy reaches the box's corners and heights; a frozen-trunk classifier that never
saw them scores them at random), and carrying a picked cube around the box (success seen
wherever it happens, not only above the cube's start)."""


class VariedExpert:
    """The task's scripted expert, altered per episode by one of ``BEHAVIOURS``: successes,
    near misses, failures and wandering from one source. Reads only a reading (the arm's state
    and the object's pose), so the twin's label recorder and the cell's operator share it."""

    def __init__(self, task, expert=None):
        if expert is None:
            from robot_rl.sim.experts import make_expert

            expert = make_expert(task)
        self.task = task
        self.expert = expert
        self._step_size = float(getattr(task, "step_size", 0.02))
        self._shape = task.action_space().shape
        self.behaviour = "expert"
        self.reset(np.random.default_rng(), "expert")

    def reset(self, rng: np.random.Generator, behaviour: str) -> None:
        if behaviour not in BEHAVIOURS:
            raise ValueError(f"unknown behaviour {behaviour!r}; choose from {BEHAVIOURS}")
        self.behaviour = behaviour
        self._rng = rng
        self.expert.reset(rng)
        self.expert.noise = rng.uniform(0.3, 0.8) if behaviour == "noisy" else 0.0
        # TCP height cap: at pick_cube's scale the cube (grasped at its centre) stops 2.5-8.5 cm
        # above the table, around the 6 cm success height; a few millimetres either side of it
        # is below what a 64 px camera resolves, so a narrower band would mostly add
        # unresolvable frames
        band = [_scaled(self.task, offset) for offset in LOW_LIFT_BAND]
        self._cap = rng.uniform(*band) if behaviour == "low_lift" else np.inf
        self._release_after = int(rng.integers(2, 8))
        self._lift_steps = 0
        self._target: np.ndarray | None = None
        self._target_steps = 0
        self._grip = 1.0

    def act(self, reading: Reading) -> np.ndarray:
        if self.behaviour == "random":  # what an RL run's first, exploring episodes look like
            return self._rng.uniform(-1.0, 1.0, self._shape).astype(np.float32)
        if self.behaviour == "wander":
            if self._rng.random() < 0.1:  # now and then open or close the empty hand
                self._grip = -self._grip
            return self._wander(reading, self._grip)
        if self.behaviour == "carry" and (self._target is not None or self.task.success(reading)):
            # picked: take it anywhere in the box's upper part (mostly still a success), closed
            return self._wander(reading, 1.0, min_height=_scaled(self.task, CARRY_ABOVE))
        action = np.asarray(self.expert.act(reading), np.float32).copy()
        if self.behaviour == "open_gripper":
            action[3] = -1.0
        tcp_z = float(reading["tcp_pos"][2])
        if tcp_z + action[2] * self._step_size > self._cap:
            action[2] = np.clip((self._cap - tcp_z) / self._step_size, -1.0, 1.0)
        if self.behaviour == "drop" and action[3] > 0.5:
            self._lift_steps += 1
            if self._lift_steps > 4 + self._release_after:  # closed, lifted a while, let go
                action[3] = -1.0
        return action

    def _wander(self, reading: Reading, grip: float, min_height: float = -np.inf) -> np.ndarray:
        """Toward a random point of the task's safety box (at least ``min_height`` high), a new
        one every 5-15 steps."""
        low, high = np.asarray(self.task.safety_low), np.asarray(self.task.safety_high)
        low[2] = min(max(low[2], min_height), high[2])
        self._target_steps -= 1
        if self._target is None or self._target_steps <= 0:
            self._target = self._rng.uniform(low, high)
            self._target_steps = int(self._rng.integers(5, 16))
        delta = (self._target - reading["tcp_pos"]) / self._step_size
        return np.append(np.clip(delta, -1.0, 1.0), grip).astype(np.float32)


@dataclass(frozen=True)
class StartWatchConfig:
    settle_periods: int = 3
    """Control periods the arm must rest at its start pose before a new episode counts as
    begun (a person waits for the robot to stop before taking the device)."""
    still_speed: float = 0.01
    """TCP speed (m/s) under which the arm counts as resting: its reading now, or its mean over
    the last ``settle_periods`` (a position-servo arm that re-reads where it is at each command
    jitters by a tick or two, fast for an instant but going nowhere: a person sees it rest)."""
    margin: float = 0.015
    """How far outside the reset pose's random offsets (m) the start pose still counts."""
    open_gripper: float = 0.1
    """Gripper readings under this count as open (0 open .. 1 closed)."""
    lifted: float = 0.03
    """The object's bottom this far above the table counts as lifted (m; at most half the
    task's lift)."""
    min_periods: int = 10
    """Control periods an attempt lasts at least before a new start is looked for."""

    def __post_init__(self) -> None:
        if self.settle_periods < 1 or self.min_periods < 0:
            raise ValueError("settle_periods must be >= 1 and min_periods >= 0")
        if min(self.still_speed, self.margin, self.open_gripper, self.lifted) <= 0:
            raise ValueError("still_speed, margin, open_gripper and lifted must be > 0")


class StartWatch:
    """When a person at the robot sees a new episode begin: the arm has come back to the task's
    start pose (within its reset's random offsets) and rests there, the gripper open, the
    object on the table. That is what a reset leaves, whoever ran it: the watch reads only the
    arm's state and the object's pose, never the recorder, so the operator needs to know
    nothing of the command that records. An arm that merely passes through the start pose is
    not resting there; one that rests there during an attempt only makes the operator begin
    again from where it is (the scripted experts act on what they see, from anywhere)."""

    def __init__(self, task, config: StartWatchConfig | None = None):
        self.config = config or StartWatchConfig()
        pose = task.reset_pose()
        self._centre = np.asarray(pose.pos, np.float64)
        self._reach = np.asarray(pose.noise, np.float64) + self.config.margin
        self._half = float(getattr(task, "cube_half", 0.025))
        self._lifted = min(self.config.lifted, float(getattr(task, "lift_height", 0.06)) / 2.0)
        self._period = 1.0 / float(getattr(task, "control_hz", 10.0))
        self._recent: list[np.ndarray] = []
        self._resting = 0
        self.periods = 0
        """Control periods since the current attempt began."""

    def at_start(self, reading: Reading) -> bool:
        """The arm at rest at the start pose, gripper open, the object (if any) not lifted."""
        c = self.config
        tcp = np.asarray(reading["tcp_pos"], np.float64)
        speed = seen_speed(np.asarray(reading["tcp_vel"])[:3], self._recent, self._period)
        lifted = any(
            float(value[2]) - self._half > self._lifted
            for key, value in reading.items()
            if key.startswith("object/") and key.endswith("_pos")
        )
        return bool(
            np.all(np.abs(tcp - self._centre) <= self._reach)
            and speed < c.still_speed
            and float(reading["gripper_pos"][0]) < c.open_gripper
            and not lifted
        )

    def update(self, reading: Reading) -> bool:
        """One control period; True when a new episode is seen to begin (then the count of the
        attempt's periods starts again)."""
        self.periods += 1
        self._recent = [*self._recent, np.asarray(reading["tcp_pos"], np.float64)]
        self._recent = self._recent[-(self.config.settle_periods + 1) :]
        self._resting = self._resting + 1 if self.at_start(reading) else 0
        if self._resting >= self.config.settle_periods and self.periods >= self.config.min_periods:
            self.begin()
            return True
        return False

    def begin(self) -> None:
        self.periods = 0
        self._resting = 0


@dataclass(frozen=True)
class DemonstratorConfig:
    fail_share: float = 0.15
    """Share of attempts that go wrong (a behaviour that fails) and are rejected."""
    fail_after: tuple[int, int] = (15, 40)
    """A failing attempt is given up and rejected after this many control periods (range)."""
    give_up: int = 300
    """Control periods after which an attempt that has not succeeded is given up (rejected):
    generous, since a robot held on stale camera frames does not move (a loaded machine)."""
    failures: tuple[str, ...] = ("open_gripper", "drop", "low_lift")
    """The behaviours (``BEHAVIOURS``) of a failing attempt."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.fail_share <= 1.0:
            raise ValueError(f"fail_share must lie in [0, 1], got {self.fail_share}")
        low, high = self.fail_after
        if not 1 <= low <= high or self.give_up < 1:
            raise ValueError("fail_after must be 1 <= low <= high and give_up >= 1")
        unknown = set(self.failures) - set(BEHAVIOURS)
        if unknown or not self.failures:
            raise ValueError(f"failures must be behaviours out of {BEHAVIOURS}, got {unknown}")


SUCCESS_PRESS, REJECT_PRESS = "success", "reject"


class Demonstrator:
    """An operator recording demonstrations (``record-demos``): it drives whole episodes with
    the scripted expert from wherever the arm is, presses success when it sees the task done,
    and now and then botches an attempt (``fail_share``), gives it up and presses reject, as a
    person does; an attempt that does not succeed within ``give_up`` periods is rejected too.
    Between attempts its hands are off until it sees the next episode begin (``StartWatch``).

    ``decide(reading)`` once per control period returns (action or None for hands off, the
    button to press now or None)."""

    def __init__(
        self,
        task,
        rng: np.random.Generator,
        config: DemonstratorConfig | None = None,
        watch: StartWatch | None = None,
        expert=None,
    ):
        self.task = task
        self.rng = rng
        self.config = config or DemonstratorConfig()
        self.watch = watch or StartWatch(task)
        self.varied = VariedExpert(task, expert)
        self.driving = False
        self.failing = False
        self._fail_at = 0
        self.attempts = 0
        self.successes = 0
        self.rejects = 0

    def begin(self) -> None:
        """Take the device for a new attempt."""
        config = self.config
        self.failing = bool(self.rng.random() < config.fail_share)
        behaviour = str(self.rng.choice(config.failures)) if self.failing else "expert"
        self.varied.reset(self.rng, behaviour)
        low, high = config.fail_after
        self._fail_at = int(self.rng.integers(low, high + 1))
        self.watch.begin()
        self.driving = True
        self.attempts += 1

    def decide(self, reading: Reading) -> tuple[np.ndarray | None, str | None]:
        # the first attempt begins at once, wherever the arm is; later ones when a reset is seen
        if self.watch.update(reading) or self.attempts == 0:
            self.begin()
        if not self.driving:
            return None, None
        if self.task.success(reading) and not self.failing:
            self.driving = False
            self.successes += 1
            return None, SUCCESS_PRESS
        limit = self._fail_at if self.failing else self.config.give_up
        if self.watch.periods >= limit:
            self.driving = False
            self.rejects += 1
            return None, REJECT_PRESS
        return self.varied.act(reading), None


@dataclass(frozen=True)
class LabellerConfig:
    periods: tuple[int, int] = (30, 60)
    """Control periods of an attempt that does not seek success (a failure, random moves,
    wandering), drawn in this range; then hands off until the next episode begins."""
    seeking_periods: int = 300
    """Control periods at most of an attempt that seeks success (a clean, noisy or carrying
    pick): it goes on until it succeeds, as a person does, within this bound (a robot held on
    stale camera frames does not move)."""
    after_success: int = 8
    """Control periods an attempt goes on once it has seen the task done (shorter than a
    recorder's hold after success, so the operator lets go before the episode ends)."""
    carry_after_success: int = 25
    """The same for carrying a picked cube around."""

    def __post_init__(self) -> None:
        low, high = self.periods
        if not 1 <= low <= high or self.seeking_periods < 1:
            raise ValueError("periods must be 1 <= low <= high and seeking_periods >= 1")
        if self.after_success < 0 or self.carry_after_success < 0:
            raise ValueError("after_success and carry_after_success must be >= 0")


SEEKING = ("expert", "noisy", "carry")
"""The behaviours that try to succeed."""


class Labeller:
    """An operator recording labelled frames (``record-labels``): it moves the arm through
    ``BEHAVIOURS`` in turn, one attempt per episode, and holds the success button exactly while
    it sees the task done. As a person does, it takes the device when it sees an episode begin
    (the arm resting at its start: ``StartWatch``), does one thing for a few seconds, and lets
    go (``LabellerConfig``); resting hands never move the arm, so the next reset is seen.

    ``decide(reading)`` once per control period returns (action or None for hands off,
    success button held)."""

    def __init__(
        self,
        task,
        rng: np.random.Generator,
        config: LabellerConfig | None = None,
        watch: StartWatch | None = None,
        expert=None,
    ):
        self.task = task
        self.rng = rng
        self.config = config or LabellerConfig()
        self.watch = watch or StartWatch(task)
        self.varied = VariedExpert(task, expert)
        self.episodes = 0
        self.driving = False
        self._left = 0
        self._success_seen: int | None = None

    def begin(self) -> None:
        behaviour = BEHAVIOURS[self.episodes % len(BEHAVIOURS)]
        self.varied.reset(self.rng, behaviour)
        low, high = self.config.periods
        seeking = behaviour in SEEKING
        periods = int(self.rng.integers(low, high + 1))
        self._left = self.config.seeking_periods if seeking else periods
        self._success_seen = None
        self.watch.begin()
        self.driving = True
        self.episodes += 1

    def decide(self, reading: Reading) -> tuple[np.ndarray | None, bool]:
        success = bool(self.task.success(reading))
        if self.watch.update(reading):
            self.begin()
        if self.driving:
            self._left -= 1
            if success and self._success_seen is None:
                carry = self.varied.behaviour == "carry"
                after = self.config.carry_after_success if carry else self.config.after_success
                self._left = min(self._left, after)
                self._success_seen = self.watch.periods
            if self._left < 0:
                self.driving = False
        action = self.varied.act(reading) if self.driving else None
        return action, success
