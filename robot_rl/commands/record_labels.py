"""`robot-rl record-labels`: success / failure camera frames for the reward classifier (.npz).

Two seams, each a registry entry:
- who acts (SOURCES): on the twin, ``expert-mix`` cycles the scripted expert through behaviours
  that give successes, failures and near-misses: clean picks held after success, noisy picks,
  picks with the gripper left open, lifts stopped below or above the success height, picks
  that let go, random actions (the frames an RL run explores first: without them the
  classifier is never shown those failures, and the policy learns to fool it), wandering to
  random points of the whole safety box with the cube left on the table (an exploring policy
  reaches the box's corners and heights; a frozen-trunk classifier that never saw them
  scores them at random), and carrying a picked cube around the box (success seen wherever it
  happens, not only above the cube's start). On a robot a teleop source goes here.
- who labels each frame (LABELERS): on the twin, ``ground-truth`` reads ``task.success``. On a
  robot a key-press labeler goes here (the operator holds a key while the frame shows success);
  it has the same ``label(env, obs) -> bool`` (robot_rl.rewards.labelers).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import numpy as np
from rich.console import Console

from robot_rl.rewards.labelers import LABELERS

CARRY_MIN_HEIGHT = 0.09
"""Lowest TCP target when carrying a picked cube (m): around pick_cube's success height, so a
carried cube is seen both above and just below it."""
BEHAVIOURS = ("expert", "noisy", "open_gripper", "low_lift", "drop", "random", "wander", "carry")


class ExpertMixSource:
    """The scripted expert, altered per episode by one of BEHAVIOURS (chosen in turn)."""

    def __init__(self, env):
        from robot_rl.sim import make_expert

        self._expert = make_expert(env.task)
        self._step_size = float(getattr(env.task, "step_size", 0.02))
        self.behaviour = "expert"

    def reset(self, env, rng: np.random.Generator, episode: int) -> None:
        self.behaviour = BEHAVIOURS[episode % len(BEHAVIOURS)]
        self._rng = rng
        self._expert.reset(rng)
        self._expert.noise = rng.uniform(0.3, 0.8) if self.behaviour == "noisy" else 0.0
        # TCP height cap: the cube (grasped at its centre) stops 2.5-8.5 cm above the table,
        # around the 6 cm success height; a few millimetres either side of it is below what a
        # 64 px camera resolves, so a narrower band would mostly add unresolvable frames
        self._cap = rng.uniform(0.05, 0.11) if self.behaviour == "low_lift" else np.inf
        self._release_after = int(rng.integers(2, 8))
        self._lift_steps = 0
        self._target: np.ndarray | None = None
        self._target_steps = 0
        self._grip = 1.0

    def act(self, env, obs: dict) -> np.ndarray:
        if self.behaviour == "random":  # what an RL run's first, exploring episodes look like
            return self._rng.uniform(-1.0, 1.0, env.action_space.shape).astype(np.float32)
        reading = env.reading
        if self.behaviour == "wander":
            if self._rng.random() < 0.1:  # now and then open or close the empty hand
                self._grip = -self._grip
            return self._wander(env, reading, self._grip)
        if self.behaviour == "carry" and (self._target is not None or env.task.success(reading)):
            # picked: take it anywhere in the box's upper part (mostly still a success), closed
            return self._wander(env, reading, 1.0, min_height=CARRY_MIN_HEIGHT)
        action = np.asarray(self._expert.act(reading), np.float32).copy()
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

    def _wander(self, env, reading, grip: float, min_height: float = -np.inf) -> np.ndarray:
        """Toward a random point of the task's safety box (at least ``min_height`` high), a new
        one every 5-15 steps."""
        low, high = np.asarray(env.task.safety_low), np.asarray(env.task.safety_high)
        low[2] = min(max(low[2], min_height), high[2])
        self._target_steps -= 1
        if self._target is None or self._target_steps <= 0:
            self._target = self._rng.uniform(low, high)
            self._target_steps = int(self._rng.integers(5, 16))
        delta = (self._target - reading["tcp_pos"]) / self._step_size
        return np.append(np.clip(delta, -1.0, 1.0), grip).astype(np.float32)


SOURCES = {"expert-mix": ExpertMixSource}


@dataclass
class RecordLabelsConfig:
    task: str = "pick_cube"
    """Task whose success the classifier learns (tasks/)."""
    episodes: int = 60
    """Episodes to record (behaviours cycle: expert, noisy, open_gripper, low_lift, drop,
    random, wander, carry)."""
    out: str | None = None
    """Output .npz; default labels/<task>-<camera><size>-<time>.npz."""
    camera: str = "front"
    """The camera whose frames are labelled (the classifier's input)."""
    image_size: int = 64
    """Frame side in pixels (the classifier's input size)."""
    max_steps: int = 40
    """Steps per episode at most (frames per episode: up to max_steps + 1)."""
    hold_steps: int = 15
    """Steps recorded after the first success (held, still-successful frames)."""
    source: Literal["expert-mix"] = "expert-mix"
    """Who acts: 'expert-mix' (the twin's scripted expert with varied behaviours)."""
    labeler: Literal["ground-truth"] = "ground-truth"
    """Who labels: 'ground-truth' (the twin's task.success; a key press on a robot, later)."""
    seed: int = 0
    """Seed of the first episode's reset."""


def record_labels(config: RecordLabelsConfig, env, console: Console | None = None):
    from robot_rl.rewards.labels import LabelSet

    source = SOURCES[config.source](env)
    labeler = LABELERS[config.labeler]()
    rng = np.random.default_rng(config.seed)
    images, labels, episodes = [], [], []
    started = time.perf_counter()
    for episode in range(config.episodes):
        obs, _ = env.reset(seed=config.seed + episode)
        source.reset(env, rng, episode)
        success_at = None
        for step in range(config.max_steps + 1):
            images.append(obs[config.camera])
            labels.append(labeler.label(env, obs))
            episodes.append(episode)
            if labels[-1] and success_at is None:
                success_at = step
            if step == config.max_steps or (
                success_at is not None and step - success_at >= config.hold_steps
            ):
                break
            # termination is ignored: frames after success (held, or dropped) are wanted too
            obs, *_ = env.step(source.act(env, obs))
        if console is not None and ((episode + 1) % 10 == 0 or episode + 1 == config.episodes):
            rate = len(labels) / (time.perf_counter() - started)
            console.print(
                f"  {episode + 1}/{config.episodes} episodes, {len(labels)} frames "
                f"({sum(labels)} success), {rate:.0f} frames/s"
            )
    meta = {k: getattr(config, k) for k in ("task", "camera", "image_size", "labeler", "source")}
    return LabelSet(np.stack(images), np.asarray(labels), np.asarray(episodes), meta)


def run(config: RecordLabelsConfig) -> int:
    console = Console(soft_wrap=True)
    if config.episodes < 2 or config.max_steps < 1 or config.hold_steps < 0:
        console.print("[red]error:[/] need --episodes >= 2, --max-steps >= 1, --hold-steps >= 0")
        return 2
    from robot_rl.rewards.labels import save_labels
    from robot_rl.runtime.environments import make_env
    from robot_rl.runtime.observation_mode import ObservationMode

    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = config.out or f"labels/{config.task}-{config.camera}{config.image_size}-{stamp}.npz"
    env = None
    try:
        # frames only: with a camera given, the state carries no privileged entries either
        mode = ObservationMode(cameras=(config.camera,), image_size=config.image_size)
        env = make_env("twin", config.task, "", config.seed, mode.task_options(config.task))
        labels = record_labels(config, env, console)
    except ValueError as err:
        console.print(f"[red]error:[/] {err}")
        return 2
    finally:
        if env is not None:
            env.close()
    path = save_labels(out, labels)
    console.print(
        f"[bold]labels[/]: {len(labels)} frames ({labels.positives} success, "
        f"{len(labels) - labels.positives} failure) from {config.episodes} episodes -> {path}\n"
        f"train the classifier with: robot-rl train-reward --labels {path}"
    )
    return 0
