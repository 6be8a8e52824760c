"""`robot-rl record-labels`: success / failure camera frames for the reward classifier (.npz).

Who acts (SOURCES): on the twin ``expert-mix`` (the scripted expert's varied behaviours,
``sim.simulated_human.BEHAVIOURS``); on a robot ``teleop`` (the operator drives and shows the
camera successes, near misses and failures). Who labels (LABELERS, robot_rl.rewards.labelers): on
the twin ``ground-truth`` (``task.success``); on a robot ``button``: the success button held while
the frame shows success (``--operator joy``: button 3), or 'y' / 'n' where success begins and
ends (``--operator keyboard``). With ``--hardware FILE`` the frames are the robot's camera's, in
robot mode (drivers started here unless ``--no-start-drivers``; never a ``/sim/`` topic); frames
of a stale step or taken while the teleop device is silent are left out.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from typing import Literal

import numpy as np
from rich.console import Console

from robot_rl.errors import UserError, print_error
from robot_rl.rewards.labelers import LABELERS
from robot_rl.rewards.operator import OperatorOptions
from robot_rl.runtime.progress import JobProgress
from robot_rl.runtime.robot_session import RobotSessionOptions


class ExpertMixSource:
    """The scripted expert, altered per episode by one of ``BEHAVIOURS`` (chosen in turn)."""

    def __init__(self, env, config=None, teleop=None):
        from robot_rl.sim.simulated_human import VariedExpert

        self._varied = VariedExpert(env.task)
        self.fresh = True

    @property
    def behaviour(self) -> str:
        return self._varied.behaviour

    def reset(self, env, rng: np.random.Generator, episode: int) -> None:
        from robot_rl.sim.simulated_human import BEHAVIOURS

        self._varied.reset(rng, BEHAVIOURS[episode % len(BEHAVIOURS)])

    def act(self, env, obs: dict) -> np.ndarray:
        return self._varied.act(env.reading)


def _teleop_source(env, config, teleop=None):
    from robot_rl.commands.record_demos import TeleopDemoSource

    return TeleopDemoSource(env, config, teleop)


STEP_BOUND = 3
"""An episode takes at most this many times its frames in steps (left-out steps included)."""
SOURCES = {"expert-mix": ExpertMixSource, "teleop": _teleop_source}
"""Who acts, built from (env, config, teleop): the twin's expert mix, or the operator."""


@dataclass
class RecordLabelsConfig(OperatorOptions, RobotSessionOptions):
    task: str = "pick_cube"
    """Task whose success the classifier learns (tasks/)."""
    episodes: int = 60
    """Episodes to record (on the twin the behaviours cycle: expert, noisy, open_gripper,
    low_lift, drop, random, wander, carry)."""
    out: str | None = None
    """Output .npz; default labels/<task>-<camera><size>-<time>.npz."""
    camera: str = "front"
    """The camera whose frames are labelled (the classifier's input)."""
    image_size: int = 64
    """Frame side in pixels (the classifier's input size)."""
    max_steps: int | None = None
    """Steps per episode at most (frames per episode: up to max_steps + 1); default 40 on the
    twin, the task's episode length on a robot (a person needs longer than the expert)."""
    hold_steps: int = 15
    """Steps recorded after the first success (held, still-successful frames)."""
    source: Literal["expert-mix", "teleop"] | None = None
    """Who acts: 'expert-mix' (the twin's scripted expert with varied behaviours) or 'teleop'
    (the operator with the teleop device); default: teleop with --hardware, else expert-mix."""
    labeler: Literal["ground-truth", "button"] | None = None
    """Who labels: 'ground-truth' (the twin's task.success) or 'button' (the operator's success
    button held while the frame shows success, or on a keyboard toggled by the success and
    reject keys); default: button with --hardware, else ground-truth."""
    teleop: Literal["ros"] = "ros"
    """The teleop device of --source teleop: the /teleop topics (any teleop node)."""
    operator: Literal["keyboard", "joy"] = "joy"
    """With --labeler button: the operator's device: 'joy' /teleop/joy's success button
    (--success-button), 'keyboard' keys on this terminal (--success-key, --reject-key)."""
    seed: int = 0
    """Seed of the first episode's reset."""

    def resolved_source(self) -> str:
        return self.source or ("teleop" if self.hardware else "expert-mix")

    def resolved_labeler(self) -> str:
        return self.labeler or ("button" if self.hardware else "ground-truth")

    def resolved_max_steps(self, task) -> int:
        if self.max_steps is not None:
            return self.max_steps
        return int(task.max_episode_steps) if self.hardware else 40

    def validate(self) -> None:
        too_short = self.max_steps is not None and self.max_steps < 1
        if self.episodes < 2 or too_short or self.hold_steps < 0:
            raise UserError("need --episodes >= 2, --max-steps >= 1, --hold-steps >= 0")
        source, labeler = self.resolved_source(), self.resolved_labeler()
        if self.hardware is None:
            if source != "expert-mix" or labeler != "ground-truth":
                raise UserError(
                    "--source teleop and --labeler button record on a robot: give --hardware "
                    "FILE (on the twin the expert mix acts and the ground truth labels)"
                )
            return
        if source != "teleop":
            raise UserError("on a robot (--hardware) the operator acts: --source teleop")
        if labeler != "button":
            raise UserError(
                "robot mode: the ground truth reads the twin's object poses, which a robot does "
                "not have; the operator labels on a robot: --labeler button"
            )
        self.check_session()
        self.check_operator()


def record_labels(
    config: RecordLabelsConfig,
    env,
    console: Console | None = None,
    session=None,
    operator=None,
):
    """Label frames of ``config.episodes`` episodes on ``env``. On a robot: ``session`` (a
    ``robot_rl.runtime.robot_session.RobotSession``: resets are retried, the drivers checked)
    and ``operator`` (the device of the button labeller)."""
    from robot_rl.rewards.labels import LabelSet

    source = SOURCES[config.resolved_source()](env, config)
    labeler = LABELERS[config.resolved_labeler()](operator)
    rng = np.random.default_rng(config.seed)
    images, labels, episodes = [], [], []
    left_out = 0
    max_steps = config.resolved_max_steps(env.task)
    started = time.perf_counter()
    # a bar below the episode lines on a terminal; one line at most every 10 s in a log
    quiet = Console(file=io.StringIO())  # no console: a library call, nothing shown
    progress = JobProgress(
        "record-labels", config.episodes, unit="episodes", console=console or quiet
    )
    try:
        for episode in range(config.episodes):
            progress.update(episode, note=f"{len(labels)} frames ({sum(labels)} success)")
            seed = config.seed + episode
            if session is not None:
                session.check_drivers()
                obs, _ = session.reset(env, seed)
                console.print(f"episode {episode + 1}/{config.episodes}: the robot is yours")
            else:
                obs, _ = env.reset(seed=seed)
            source.reset(env, rng, episode)
            _reset = getattr(labeler, "reset", None)
            if callable(_reset):
                _reset()
            before, success_at, frame, steps = len(labels), None, True, 0
            while True:
                taken = len(labels) - before  # frames of this episode so far
                if frame:
                    images.append(obs[config.camera])
                    labels.append(labeler.label(env, obs))
                    episodes.append(episode)
                    taken += 1
                    if labels[-1] and success_at is None:
                        success_at = taken - 1
                held = success_at is not None and taken - 1 - success_at >= config.hold_steps
                # a left-out step does not count toward the episode's frames, only toward a
                # bound on its steps (a camera that stays stale ends it)
                if taken > max_steps or held or steps >= STEP_BOUND * (max_steps + 1):
                    break
                # termination is ignored: frames after success (held, or dropped) are wanted too
                obs, _, _, _, info = env.step(source.act(env, obs))
                steps += 1
                # a stale step's observation is the last good one again; nobody at a silent
                # device (a dead link) labels what the camera shows
                frame = not info.get("stale") and source.fresh
                left_out += not frame
            if session is not None:
                frames = len(labels) - before
                console.print(
                    f"  episode {episode + 1}: {frames} frames ({sum(labels[before:])} success)"
                )
            if console is not None and ((episode + 1) % 10 == 0 or episode + 1 == config.episodes):
                rate = len(labels) / (time.perf_counter() - started)
                console.print(
                    f"  {episode + 1}/{config.episodes} episodes, {len(labels)} frames "
                    f"({sum(labels)} success), {rate:.1f} frames/s"
                    + (f", {left_out} left out (stale or silent device)" if left_out else "")
                )
        progress.update(config.episodes, note=f"{len(labels)} frames ({sum(labels)} success)")
    finally:
        progress.close()
        close = getattr(source, "close", None)
        if callable(close):
            close()
    meta = {k: getattr(config, k) for k in ("task", "camera", "image_size")}
    meta.update(labeler=config.resolved_labeler(), source=config.resolved_source())
    if session is not None:
        meta.update(hardware=str(config.hardware), operator=config.operator)
    meta["seconds"] = round(time.perf_counter() - started, 3)
    return LabelSet(np.stack(images), np.asarray(labels), np.asarray(episodes), meta)


def run(config: RecordLabelsConfig) -> int:
    console = Console(soft_wrap=True)
    try:
        config.validate()
    except UserError as err:
        print_error(err)
        return 2
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = config.out or f"labels/{config.task}-{config.camera}{config.image_size}-{stamp}.npz"
    if config.hardware is not None:
        result = _record_on_robot(config, out, console)
        if isinstance(result, int):
            return result
        labels = result
    else:
        labels = _record_on_twin(config, console)
        if isinstance(labels, int):
            return labels
    from robot_rl.rewards.labels import save_labels

    path = save_labels(out, labels)
    seconds = labels.meta.get("seconds") or 0.0
    rate = f", {len(labels) / seconds:.1f} frames/s" if seconds else ""
    console.print(
        f"[bold]labels[/]: {len(labels)} frames ({labels.positives} success, "
        f"{len(labels) - labels.positives} failure) from {config.episodes} episodes{rate} "
        f"-> {path}\ntrain the classifier with: robot-rl train-reward --labels {path}"
    )
    return 0


def _record_on_twin(config: RecordLabelsConfig, console: Console):
    from robot_rl.runtime.environments import make_env
    from robot_rl.runtime.observation_mode import ObservationMode

    env = None
    try:
        # frames only: with a camera given, the state carries no privileged entries either
        mode = ObservationMode(cameras=(config.camera,), image_size=config.image_size)
        env = make_env("twin", config.task, "", config.seed, mode.task_options(config.task))
        return record_labels(config, env, console)
    except ValueError as err:
        print_error(err)
        return 2
    finally:
        if env is not None:
            env.close()


def _record_on_robot(config: RecordLabelsConfig, out: str, console: Console):
    """The robot's own camera frames in robot mode, the operator acting and labelling."""
    from pathlib import Path

    from robot_rl.resets.retry import ResetFailed
    from robot_rl.runtime.node_readiness import StackFailed
    from robot_rl.runtime.observation_mode import ObservationMode
    from robot_rl.runtime.robot_session import robot_session

    mode = ObservationMode(cameras=(config.camera,), image_size=config.image_size, robot_mode=True)
    options = mode.task_options(config.task)
    operator = config.open_operator()
    try:
        from robot_rl.rewards.labelers import ButtonLabeler

        console.print(
            f"[bold]record-labels[/] {config.task} on {config.hardware} (robot mode, camera "
            f"{config.camera}, {config.image_size} px): {config.episodes} episodes; you drive "
            "with the teleop device and "
            f"{ButtonLabeler(operator).describe()} -> {out}"
        )
        log_dir = Path(out).with_suffix("").with_name(Path(out).stem + "-logs")
        with robot_session(
            config, config.task, options, mode.cameras, config.seed, log_dir, console,
            node_name="record_labels",
        ) as session:  # fmt: skip
            return record_labels(config, session.env, console, session, operator)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: no label file written")
        return 130
    except (ResetFailed, StackFailed) as err:
        print_error(f"{err}; no label file written")
        return 1
    except UserError as err:
        print_error(err)
        return 2
    finally:
        operator.close()
