"""`robot-rl record-demos`: successful demonstration episodes as MCAP files (ROS 2 encoding).

Each successful episode becomes ``<out>/episode_NNN.mcap`` (``robot_rl.data.mcap_demos``), failed
ones are dropped whole; ``train`` / ``up --demo-path <out>`` load them. On a robot (``--hardware
FILE``): robot mode over the file's drivers (started here unless ``--no-start-drivers``), the
teleop device drives, and the operator keeps an episode with success (``--operator joy``: button
3, ``keyboard``: 'y') and discards it with reject (4, 'n') or the time limit. A refused reset is
retried (``--reset-tries``); a stale camera holds the robot and that step is left out; nothing
reads ``/sim/``. Elsewhere a *source* (SOURCES: ``reset(env, rng)`` per episode, ``act(env,
observation)`` per step) acts and the task judges: ``--source``, ``--teleop``, ``--backend``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from rich.console import Console

from robot_rl.envs.robot_env import RobotEnvWrapper
from robot_rl.errors import UserError, print_error
from robot_rl.rewards.operator import OperatorOptions
from robot_rl.rewards.operator_input import REJECT, SUCCESS
from robot_rl.runtime.observation_mode import ObservationMode
from robot_rl.runtime.progress import JobProgress
from robot_rl.runtime.robot_session import RobotSessionOptions


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

    def __init__(self, env, config=None, teleop=None):
        config = config or RecordDemosConfig(source="teleop")
        self.max_age_s = config.teleop_max_age
        # a person needs the in-process twin at the task's rate; the ROS 2 backend has its clock
        backend = getattr(config, "backend", "ros")
        self.realtime = teleop is None and config.teleop == "ros" and backend == "twin"
        self.teleop = teleop if teleop is not None else _make_teleop(env, config)
        self._shape = env.action_space.shape
        self.fresh = False
        """Whether the last ``act`` had a fresh command from the device (else it held still)."""

    def reset(self, env, rng: np.random.Generator, episode: int = 0) -> None:
        self.teleop.reset()

    def act(self, env, observation: dict) -> np.ndarray:
        command = self.teleop.poll(env.reading)
        self.fresh = False
        if command is None or time.monotonic() - command.stamp > self.max_age_s:
            return np.zeros(self._shape, np.float32)
        action = np.asarray(command.action, np.float32)
        if action.shape != self._shape:
            raise ValueError(f"teleop action shape {action.shape}, expected {self._shape}")
        if not np.all(np.isfinite(action)):
            return np.zeros(self._shape, np.float32)
        self.fresh = True
        return np.clip(action, -1.0, 1.0)

    def close(self) -> None:
        close = getattr(self.teleop, "close", None)
        if callable(close):
            close()


def _make_teleop(env, config):
    if config.teleop == "sim":
        from robot_rl.sim.simulated_human import ExpertTeleop

        return ExpertTeleop(env.task, rng=np.random.default_rng(config.seed))
    from robot_rl.runtime.interventions import make_ros_teleop

    return make_ros_teleop(env, max_age_s=config.teleop_max_age)


SOURCES = {
    "expert": lambda env, config=None, teleop=None: ExpertSource(env),
    "teleop": TeleopDemoSource,
}


class OperatorJudge(RobotEnvWrapper):
    """The operator judges each demonstration on a robot, with ``--operator``'s device.

    Success (button or key): reward 1, the episode ends as terminated with ``info["success"]``
    (kept). Reject: the episode ends as truncated with ``info["rejected"]`` (discarded). Both in
    one step: reject wins (a person who takes a success back). A press during the reset belongs
    to no episode and is dropped. On a stale step (the robot held, the observation is the last
    good one) the presses wait for the next fresh step, so that a kept episode ends on a fresh
    frame."""

    def __init__(self, env, operator):
        super().__init__(env)
        self.operator = operator

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.operator.poll()
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if info.get("stale"):
            return obs, reward, terminated, truncated, info
        events = self.operator.poll()
        if REJECT in events:
            return obs, 0.0, False, True, {**info, "success": False, "rejected": True}
        if SUCCESS in events:
            return obs, 1.0, True, False, {**info, "success": True, "operator_success": True}
        return obs, reward, terminated, truncated, info

    def close(self):
        try:
            super().close()
        finally:
            self.operator.close()


@dataclass
class RecordDemosConfig(ObservationMode, OperatorOptions, RobotSessionOptions):
    task: str = "pick_cube"
    """Task to demonstrate (tasks/)."""
    episodes: int = 20
    """Successful episodes to record."""
    out: str | None = None
    """Directory for the .mcap files; default demos/<task>-<time>/."""
    source: Literal["expert", "teleop"] | None = None
    """Who acts: 'expert' (the scripted expert in the twin) or 'teleop' (an operator,
    --teleop); default: teleop with --hardware, else expert."""
    teleop: Literal["ros", "sim"] = "ros"
    """Operator device for --source teleop: 'ros' the /teleop topics, 'sim' the twin's expert."""
    backend: Literal["twin", "ros"] = "twin"
    """'twin': the in-process twin; 'ros': the task over the ROS 2 topics of twin nodes (teleop
    only, judged by the twin's success). --hardware records on a robot instead."""
    operator: Literal["keyboard", "joy"] = "joy"
    """With --hardware: who judges each episode: 'joy' the success and reject buttons on
    /teleop/joy (--success-button, --reject-button), 'keyboard' keys on this terminal
    (--success-key, --reject-key). On the twin the task's own success judges."""
    reward_classifier: str | None = None
    """With --hardware: a reward classifier checkpoint (robot-rl train-reward) that judges
    beside the operator: when it fires (once the operator has moved the robot in the episode)
    the episode ends as a success and is kept, unless the operator rejects it in that step."""
    seed: int = 0
    """Seed of the first episode's reset (attempt i uses seed + i)."""
    max_attempts: int | None = None
    """Give up after this many attempts; default 3 * episodes + 10."""

    def resolved_source(self) -> str:
        return self.source or ("teleop" if self.hardware else "expert")


STEP_BOUND = 3
"""An attempt takes at most this many times the task's episode length in steps, stale (left
out) steps included."""


def record_episode(
    env, source, rng: np.random.Generator, seed: int, rate=None, reset=None, on_start=None
):
    """One episode from ``source``; returns (DemoEpisode, success, figures). ``rate``: a
    ``robot_rl.runtime.rate.Rate`` that paces the steps (a person at the controls). ``reset``:
    how the episode's reset is made (``env`` and ``seed`` -> ``(obs, info)``; a robot
    session's retries), default ``env.reset``; ``on_start()`` is called once it is done.

    A stale step (``info["stale"]``: the robot held, the observation is the last good one) is
    left out of the episode and does not end it: the attempt's time is the task's episode
    length in kept steps (a loaded machine's late camera frames do not eat it), bounded at
    ``STEP_BOUND`` times that in steps (a camera that stays stale ends it). ``figures``:
    ``steps`` taken, ``stale`` steps left out, ``rejected`` by the operator, ``seconds``."""
    from robot_rl.data.camera_model import recorded_cameras
    from robot_rl.data.mcap_demos import DemoEpisode
    from robot_rl.data.transition import applied_action
    from robot_rl.runtime.evaluation import episode_success

    def device_reading() -> dict:
        # images travel as observations; the rest of the reading gives the device topics
        return {k: v for k, v in env.reading.items() if not k.startswith("image/")}

    obs, _ = reset(env, seed) if reset is not None else env.reset(seed=seed)
    if on_start is not None:
        on_start()
    started = time.monotonic()
    source.reset(env, rng)
    observations, readings = [obs], [device_reading()]
    actions, rewards, terminated, truncated = [], [], [], []
    success = rejected = False
    steps = stale = 0
    limit = env.task.max_episode_steps
    driven = False
    while True:
        action = source.act(env, obs)
        driven = driven or bool(np.any(action != 0))
        obs, reward, term, trunc, info = env.step(action)
        steps += 1
        if term and info.get("classifier_success") and not driven:
            # a scene that looks done before anyone acted (the reset still under way) is no
            # demonstration: the classifier's success counts once the operator has moved
            reward, term, info = 0.0, False, {**info, "success": False}
        if info.get("stale") and not term:
            stale += 1
            if steps >= STEP_BOUND * limit:  # the cameras stayed stale: the attempt ends
                if truncated:
                    truncated[-1] = True
                break
            continue
        observations.append(obs)
        readings.append(device_reading())
        actions.append(applied_action(info, action))  # what the robot executed
        rewards.append(reward)
        terminated.append(term)
        # the env's own time limit counts its stale steps too: only without any it is ours
        out_of_time = len(actions) >= limit or steps >= STEP_BOUND * limit
        ended = bool(info.get("rejected")) or (trunc and not stale) or out_of_time
        truncated.append(not term and ended)
        success = success or episode_success(info)
        rejected = rejected or bool(info.get("rejected"))
        if terminated[-1] or truncated[-1]:
            break
        if rate is not None:
            rate.sleep()
    figures = {
        "steps": steps,
        "stale": stale,
        "rejected": rejected,
        "operator_success": bool(info.get("operator_success")),
        "seconds": time.monotonic() - started,
    }
    if not actions:  # every step stale: nothing to keep
        return None, False, figures
    episode = DemoEpisode(
        observations=observations,
        actions=np.stack(actions).astype(np.float32),
        rewards=np.asarray(rewards, np.float32),
        terminated=np.asarray(terminated, bool),
        truncated=np.asarray(truncated, bool),
        readings=readings,
        cameras=recorded_cameras(env),  # the file's camera_info and /tf_static
    )
    return episode, success, figures


def _config_error(config: RecordDemosConfig) -> str | None:
    source = config.resolved_source()
    if config.episodes < 1:
        return "--episodes must be >= 1"
    if source not in SOURCES:
        return f"unknown --source {source!r}; choose one of {', '.join(SOURCES)}"
    if config.teleop_max_age <= 0:
        return f"--teleop-max-age must be > 0, got {config.teleop_max_age}"
    if config.hardware is not None:
        if source != "teleop" or config.teleop != "ros":
            return (
                "on a robot (--hardware) the operator drives with the teleop device: "
                "--source teleop --teleop ros (the defaults there)"
            )
        if config.backend != "twin":
            return "--hardware records over the hardware file's driver topics: leave out --backend"
        if config.privileged_state:
            return "--privileged-state is for the twin: a robot has no object poses"
        return None
    if config.reward_classifier:
        return "--reward-classifier judges demonstrations on a robot: give --hardware FILE"
    if config.backend != "twin" and (source == "expert" or config.teleop == "sim"):
        return "the scripted expert needs the twin (--backend twin)"
    return None


def _describe(figures: dict) -> str:
    stale = f", {figures['stale']} stale steps left out" if figures["stale"] else ""
    return f"{figures['steps']} steps in {figures['seconds']:.1f} s{stale}"


DEMO_MESSAGE_TYPES = (
    "sensor_msgs/msg/Image",
    "sensor_msgs/msg/CameraInfo",
    "tf2_msgs/msg/TFMessage",
    "sensor_msgs/msg/JointState",
    "geometry_msgs/msg/PoseStamped",
    "geometry_msgs/msg/TwistStamped",
    "geometry_msgs/msg/WrenchStamped",
    "std_msgs/msg/Bool",
)
"""The ROS 2 message types a demonstration file holds (robot_rl.data.mcap_demos)."""


def run(config: RecordDemosConfig, teleop=None) -> int:
    """Record; ``teleop``: a ``TeleopSource`` to use for --source teleop instead of --teleop's."""
    console = Console(soft_wrap=True)
    error = _config_error(config)
    if error:
        print_error(error)
        return 2
    # the files are ROS 2 MCAP: without the message definitions (the ros extra) say so in one
    # line now, not with a traceback after the first episode
    from robot_rl.data.ros_schemas import message_definition

    for type_name in DEMO_MESSAGE_TYPES:
        message_definition(type_name)
    out = Path(config.out or f"demos/{config.task}-{time.strftime('%Y%m%d-%H%M%S')}")
    if out.exists() and any(out.glob("*.mcap")):
        print_error(f"{out} already holds .mcap files; choose another --out")
        return 2
    if config.hardware is not None:
        return _run_on_robot(config, out, console, teleop)
    from robot_rl.runtime.environments import make_env

    env = None
    try:
        # demos are kept on the task's success: in robot mode that needs another judge
        config.check_reward_source(config.task, None)
        options = config.task_options(config.task)
        env = make_env(config.backend, config.task, "", config.seed, options, ros=config.ros)
        source = SOURCES[config.resolved_source()](env, config, teleop=teleop)
    except ValueError as err:
        if env is not None:
            env.close()
        print_error(err)
        return 2
    try:
        return _record(config, env, source, out, console)
    finally:
        _close(source)
        env.close()


def _run_on_robot(config: RecordDemosConfig, out: Path, console: Console, teleop=None) -> int:
    """Robot mode on the hardware file's drivers, the operator driving and judging."""
    import dataclasses

    from robot_rl.resets.retry import ResetFailed
    from robot_rl.runtime.node_readiness import StackFailed
    from robot_rl.runtime.robot_session import robot_session

    try:
        config.check_session()
        config.check_operator()
    except UserError as err:
        print_error(err)
        return 2
    mode = ObservationMode(
        cameras=tuple(config.cameras),
        image_size=config.image_size,
        robot_mode=True,
        checkpoints=config.checkpoints,  # car_lap: the recorded lap's, not the twin track's
    )
    try:
        options = mode.task_options(config.task)
    except ValueError as err:
        print_error(err)
        return 2
    wrap_build, also = None, ""
    if config.reward_classifier:
        from robot_rl.rewards.wrapper import with_reward_classifier

        checkpoint = config.reward_classifier
        wrap_build = lambda build, opts: with_reward_classifier(checkpoint, build, opts)
        also = " (or the reward classifier's success)"
    judge = config.open_operator()
    console.print(
        f"[bold]record-demos[/] {config.task} on {config.hardware} (robot mode, cameras: "
        f"{', '.join(config.cameras) or 'none'}): you drive with the teleop device; "
        f"{judge.describe(SUCCESS)}{also} keeps an episode, {judge.describe(REJECT)} or its "
        f"time running out discards it -> {out}"
    )
    stored = 0
    try:
        with robot_session(
            config, config.task, options, mode.cameras, config.seed, out / "logs", console,
            node_name="record_demos", wrap_build=wrap_build,
        ) as session:  # fmt: skip
            env = OperatorJudge(session.env, judge)
            judge = None  # the env closes it now
            source = TeleopDemoSource(env, dataclasses.replace(config, source="teleop"), teleop)
            try:
                return _record(config, env, source, out, console, session=session)
            finally:
                _close(source)
                env.close()
    except KeyboardInterrupt:
        stored = len(list(out.glob("*.mcap")))
        console.print(f"[yellow]interrupted[/]: {stored} episodes kept in {out}")
        return 130
    except (ResetFailed, StackFailed) as err:
        stored = len(list(out.glob("*.mcap")))
        print_error(f"{err}; {stored} episodes kept in {out}")
        return 1
    except UserError as err:
        print_error(err)
        return 2
    finally:
        if judge is not None:
            judge.close()


def _record(config: RecordDemosConfig, env, source, out: Path, console, session=None) -> int:
    """Attempts until ``config.episodes`` are kept (or ``max_attempts`` are spent)."""
    from robot_rl.data.mcap_demos import write_episode
    from robot_rl.runtime.rate import Rate

    max_attempts = config.max_attempts or 3 * config.episodes + 10
    rng = np.random.default_rng(config.seed)
    rate = Rate(env.task.control_hz) if getattr(source, "realtime", False) else None
    reset = None if session is None else session.reset
    stored, attempts, steps = 0, 0, 0
    started = time.monotonic()
    # a bar below the episode lines on a terminal; one line at most every 10 s in a log
    progress = JobProgress("record-demos", config.episodes, unit="demos", console=console)
    try:
        while stored < config.episodes:
            progress.update(stored, note=f"{attempts} attempts")
            if attempts >= max_attempts:
                print_error(f"only {stored} successful episodes in {attempts} attempts")
                return 1
            seed = config.seed + attempts
            attempts += 1
            if session is not None:
                session.check_drivers()
            on_start = None
            if rate is not None or session is not None:
                line = f"episode {attempts}: the robot is yours (seed {seed})"
                on_start = lambda line=line: console.print(line)
            episode, success, figures = record_episode(
                env, source, rng, seed, rate=rate, reset=reset, on_start=on_start
            )
            if not success:
                why = (
                    "rejected by the operator"
                    if figures["rejected"]
                    else "no success" + (" (time ran out)" if session is not None else "")
                )
                console.print(
                    f"  episode {attempts}: {why}, {_describe(figures)}, discarded "
                    f"({stored}/{config.episodes} kept)"
                )
                continue
            episode.info.update(
                task=config.task,
                source=config.resolved_source(),
                seed=seed,
                **(
                    {"hardware": str(config.hardware), "judge": _judge(config, figures)}
                    if session
                    else {}
                ),
            )
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
                f"  episode {attempts}: success, {_describe(figures)}, kept as {path} "
                f"({stored}/{config.episodes} kept)"
            )
        progress.update(stored, note=f"{attempts} attempts")
    finally:
        progress.close()
    wall = time.monotonic() - started
    console.print(
        f"[bold]recorded[/] {stored} successful episodes ({attempts} attempts, {steps} steps) "
        f"in {out} in {wall:.0f} s ({wall / stored:.1f} s per kept episode); train with: "
        f"robot-rl train --task {config.task} --demo-path {out}"
        + (" (or up robot --demo-path)" if session is not None else "")
    )
    return 0


def _judge(config: RecordDemosConfig, figures: dict) -> str:
    """Who said a kept episode succeeded."""
    return config.operator if figures["operator_success"] else "reward classifier"


def _close(source) -> None:
    close = getattr(source, "close", None)
    if callable(close):
        close()
