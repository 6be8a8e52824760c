"""`robot-rl record-demos`: successful demonstration episodes as MCAP files (ROS 2 encoding).

Each successful episode becomes ``<out>/episode_NNN.mcap`` (see ``robot_rl.data.mcap_demos``);
failed attempts are dropped whole. ``robot-rl train --demo-path <out>`` loads them into the
demonstration buffer; ``ros2 bag info`` and Foxglove open them.

A *source* produces the actions: ``expert`` is the task's scripted expert in the twin. A teleop
source (SpaceMouse, gamepad, on the twin or the robot) plugs in as another entry of SOURCES with
the same two methods.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import numpy as np
from rich.console import Console


class DemoSource(Protocol):
    """Who acts during a recording: called once per episode, then once per step."""

    def reset(self, env, rng: np.random.Generator) -> None: ...

    def act(self, env, observation: dict) -> np.ndarray: ...


class ExpertSource:
    """The task's scripted expert, reading the twin's privileged state."""

    def __init__(self, env):
        from robot_rl.sim import make_expert

        self._expert = make_expert(env.task)

    def reset(self, env, rng: np.random.Generator) -> None:
        self._expert.reset(rng)

    def act(self, env, observation: dict) -> np.ndarray:
        return np.asarray(self._expert.act(env.reading), np.float32)


SOURCES = {"expert": ExpertSource}


@dataclass
class RecordDemosConfig:
    task: str = "pick_cube"
    """Task to demonstrate (tasks/)."""
    episodes: int = 20
    """Successful episodes to record."""
    out: str | None = None
    """Directory for the .mcap files; default demos/<task>-<time>/."""
    source: Literal["expert"] = "expert"
    """Who acts: 'expert' (the scripted expert in the twin; teleop sources come later)."""
    cameras: tuple[str, ...] = ()
    """Camera observations to record (e.g. front wrist); empty: state only."""
    image_size: int = 64
    """Camera image side in pixels (must match the training run's)."""
    seed: int = 0
    """Seed of the first episode's reset (attempt i uses seed + i)."""
    max_attempts: int | None = None
    """Give up after this many attempts; default 3 * episodes + 10."""


def record_episode(env, source, rng: np.random.Generator, seed: int):
    """One episode from ``source``; returns (DemoEpisode, success)."""
    from robot_rl.data.mcap_demos import DemoEpisode
    from robot_rl.runtime.demos import applied_action
    from robot_rl.runtime.evaluation import episode_success

    def device_reading() -> dict:
        # images travel as observations; the rest of the reading gives the device topics
        return {k: v for k, v in env.reading.items() if not k.startswith("image/")}

    obs, _ = env.reset(seed=seed)
    source.reset(env, rng)
    observations, readings = [obs], [device_reading()]
    actions, rewards, terminated, truncated = [], [], [], []
    success = False
    while True:
        action = source.act(env, obs)
        obs, reward, term, trunc, info = env.step(action)
        observations.append(obs)
        readings.append(device_reading())
        actions.append(applied_action(info, action))  # what the robot executed
        rewards.append(reward)
        terminated.append(term)
        truncated.append(trunc)
        success = success or episode_success(info)
        if term or trunc:
            break
    episode = DemoEpisode(
        observations=observations,
        actions=np.stack(actions).astype(np.float32),
        rewards=np.asarray(rewards, np.float32),
        terminated=np.asarray(terminated, bool),
        truncated=np.asarray(truncated, bool),
        readings=readings,
    )
    return episode, success


def run(config: RecordDemosConfig) -> int:
    console = Console()
    if config.episodes < 1:
        console.print("[red]error:[/] --episodes must be >= 1")
        return 2
    out = Path(config.out or f"demos/{config.task}-{time.strftime('%Y%m%d-%H%M%S')}")
    if out.exists() and any(out.glob("*.mcap")):
        console.print(f"[red]error:[/] {out} already holds .mcap files; choose another --out")
        return 2
    from robot_rl.data.mcap_demos import write_episode
    from robot_rl.runtime.environments import make_env

    try:
        options = {"cameras": tuple(config.cameras), "image_size": config.image_size}
        env = make_env("twin", config.task, "", config.seed, options)
        source = SOURCES[config.source](env)
    except ValueError as err:
        console.print(f"[red]error:[/] {err}")
        return 2
    max_attempts = config.max_attempts or 3 * config.episodes + 10
    rng = np.random.default_rng(config.seed)
    stored, attempts, steps = 0, 0, 0
    try:
        while stored < config.episodes:
            if attempts >= max_attempts:
                console.print(
                    f"[red]error:[/] only {stored} successful episodes in {attempts} attempts"
                )
                return 1
            seed = config.seed + attempts
            attempts += 1
            episode, success = record_episode(env, source, rng, seed)
            if not success:
                console.print(f"  attempt {attempts}: no success, dropped")
                continue
            episode.info.update(task=config.task, source=config.source, seed=seed)
            path = write_episode(
                out / f"episode_{stored:03d}.mcap",
                episode,
                env.observation_space,
                env.action_space,
                control_hz=env.task.control_hz,
            )
            stored += 1
            steps += len(episode)
            console.print(f"  {stored}/{config.episodes}: {path} ({len(episode)} steps)")
    finally:
        env.close()
    console.print(
        f"[bold]recorded[/] {stored} successful episodes ({attempts} attempts, {steps} steps) "
        f"in {out}; train with: robot-rl train --task {config.task} --demo-path {out}"
    )
    return 0
