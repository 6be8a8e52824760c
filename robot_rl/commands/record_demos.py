"""`robot-rl record-demos`: successful demonstration episodes as MCAP files (ROS 2 encoding).

Each successful episode becomes ``<out>/episode_NNN.mcap`` (see ``robot_rl.data.mcap_demos``);
failed attempts are dropped whole. ``robot-rl train --demo-path <out>`` loads them into the
demonstration buffer; ``ros2 bag info`` and Foxglove open them.

A *source* produces the actions (an entry of SOURCES, built from the env and the config; its
``reset(env, rng)`` is called once per episode, its ``act(env, observation)`` once per step);
``--source``, ``--teleop`` and ``--backend`` say which. ``--teleop ros`` takes any teleop node
(SpaceMouse, gamepad, ``robot-rl-keyboard-teleop``); ``sim`` is for tests and dry runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from rich.console import Console

from robot_rl.ros.config import RosBackendConfig
from robot_rl.runtime.observation_mode import ObservationMode


class ExpertSource:
    """The task's scripted expert, reading the twin's privileged state."""

    def __init__(self, env):
        from robot_rl.sim import make_expert

        self._expert = make_expert(env.task)

    def reset(self, env, rng: np.random.Generator) -> None:
        self._expert.reset(rng)

    def act(self, env, observation: dict) -> np.ndarray:
        return np.asarray(self._expert.act(env.reading), np.float32)


class TeleopDemoSource:
    """The operator drives every step through a ``TeleopSource`` (no hold-to-intervene button:
    the operator is always in charge). Without a fresh command the robot holds still (a zero
    action); a command older than ``max_age_s`` or with a non-finite entry counts as none."""

    def __init__(self, env, config: RecordDemosConfig | None = None, teleop=None):
        config = config or RecordDemosConfig(source="teleop")
        self.max_age_s = config.teleop_max_age
        # a person needs the in-process twin at the task's rate; the ROS 2 backend has its clock
        self.realtime = teleop is None and config.teleop == "ros" and config.backend == "twin"
        self.teleop = teleop if teleop is not None else _make_teleop(env, config)
        self._shape = env.action_space.shape

    def reset(self, env, rng: np.random.Generator) -> None:
        self.teleop.reset()

    def act(self, env, observation: dict) -> np.ndarray:
        command = self.teleop.poll(env.reading)
        if command is None or time.monotonic() - command.stamp > self.max_age_s:
            return np.zeros(self._shape, np.float32)
        action = np.asarray(command.action, np.float32)
        if action.shape != self._shape:
            raise ValueError(f"teleop action shape {action.shape}, expected {self._shape}")
        if not np.all(np.isfinite(action)):
            return np.zeros(self._shape, np.float32)
        return np.clip(action, -1.0, 1.0)

    def close(self) -> None:
        close = getattr(self.teleop, "close", None)
        if callable(close):
            close()


def _make_teleop(env, config: RecordDemosConfig):
    if config.teleop == "sim":
        from robot_rl.sim.simulated_human import ExpertTeleop

        return ExpertTeleop(env.task, rng=np.random.default_rng(config.seed))
    from robot_rl.runtime.interventions import make_ros_teleop

    return make_ros_teleop(env, max_age_s=config.teleop_max_age)


SOURCES = {
    "expert": lambda env, config=None, teleop=None: ExpertSource(env),
    "teleop": TeleopDemoSource,
}


@dataclass
class RecordDemosConfig(ObservationMode):
    task: str = "pick_cube"
    """Task to demonstrate (tasks/)."""
    episodes: int = 20
    """Successful episodes to record."""
    out: str | None = None
    """Directory for the .mcap files; default demos/<task>-<time>/."""
    source: Literal["expert", "teleop"] = "expert"
    """Who acts: 'expert' (the scripted expert in the twin) or 'teleop' (an operator, --teleop)."""
    teleop: Literal["ros", "sim"] = "ros"
    """Operator device for --source teleop: 'ros' the /teleop topics, 'sim' the twin's expert."""
    teleop_max_age: float = 0.3
    """Seconds after which an operator command counts as none (the robot holds still)."""
    backend: Literal["twin", "ros"] = "twin"
    """'twin': the in-process twin; 'ros': the task over the ROS 2 driver topics (teleop only)."""
    ros: RosBackendConfig = field(default_factory=RosBackendConfig)
    """The ROS 2 backend's namespaces, staleness bounds and timeouts (--backend ros only)."""
    seed: int = 0
    """Seed of the first episode's reset (attempt i uses seed + i)."""
    max_attempts: int | None = None
    """Give up after this many attempts; default 3 * episodes + 10."""


def record_episode(env, source, rng: np.random.Generator, seed: int, rate=None):
    """One episode from ``source``; returns (DemoEpisode, success). ``rate``: a
    ``robot_rl.runtime.rate.Rate`` that paces the steps (a person at the controls)."""
    from robot_rl.data.mcap_demos import DemoEpisode
    from robot_rl.data.transition import applied_action
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
        if rate is not None:
            rate.sleep()
    episode = DemoEpisode(
        observations=observations,
        actions=np.stack(actions).astype(np.float32),
        rewards=np.asarray(rewards, np.float32),
        terminated=np.asarray(terminated, bool),
        truncated=np.asarray(truncated, bool),
        readings=readings,
    )
    return episode, success


def _config_error(config: RecordDemosConfig) -> str | None:
    if config.episodes < 1:
        return "--episodes must be >= 1"
    if config.source not in SOURCES:
        return f"unknown --source {config.source!r}; choose one of {', '.join(SOURCES)}"
    if config.teleop_max_age <= 0:
        return f"--teleop-max-age must be > 0, got {config.teleop_max_age}"
    if config.backend != "twin" and (config.source == "expert" or config.teleop == "sim"):
        return "the scripted expert needs the twin (--backend twin)"
    return None


def run(config: RecordDemosConfig, teleop=None) -> int:
    """Record; ``teleop``: a ``TeleopSource`` to use for --source teleop instead of --teleop's."""
    console = Console(soft_wrap=True)
    error = _config_error(config)
    if error:
        console.print(f"[red]error:[/] {error}")
        return 2
    out = Path(config.out or f"demos/{config.task}-{time.strftime('%Y%m%d-%H%M%S')}")
    if out.exists() and any(out.glob("*.mcap")):
        console.print(f"[red]error:[/] {out} already holds .mcap files; choose another --out")
        return 2
    from robot_rl.data.mcap_demos import write_episode
    from robot_rl.runtime.environments import make_env
    from robot_rl.runtime.rate import Rate

    env = None
    try:
        # demos are kept on the task's success: in robot mode that needs another judge
        config.check_reward_source(config.task, None)
        options = config.task_options(config.task)
        env = make_env(config.backend, config.task, "", config.seed, options, ros=config.ros)
        source = SOURCES[config.source](env, config, teleop=teleop)
    except ValueError as err:
        if env is not None:
            env.close()
        console.print(f"[red]error:[/] {err}")
        return 2
    max_attempts = config.max_attempts or 3 * config.episodes + 10
    rng = np.random.default_rng(config.seed)
    rate = Rate(env.task.control_hz) if getattr(source, "realtime", False) else None
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
            if rate is not None:
                console.print(f"episode {attempts}: the robot is yours (seed {seed})")
            episode, success = record_episode(env, source, rng, seed, rate=rate)
            if not success:
                console.print(
                    f"  episode {attempts}: no success, {len(episode)} steps, discarded "
                    f"({stored}/{config.episodes} kept)"
                )
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
            console.print(
                f"  episode {attempts}: success, {len(episode)} steps, kept as {path} "
                f"({stored}/{config.episodes} kept)"
            )
    finally:
        close = getattr(source, "close", None)
        if callable(close):
            close()
        env.close()
    console.print(
        f"[bold]recorded[/] {stored} successful episodes ({attempts} attempts, {steps} steps) "
        f"in {out}; train with: robot-rl train --task {config.task} --demo-path {out}"
    )
    return 0
