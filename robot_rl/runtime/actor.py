"""The actor process: runs the task at its control rate with the newest weights it has.

The control loop never waits on the network (docs/ARCHITECTURE.md, the transition's and the
weights' walks); until the learner's first trained weights arrive (version 1), actions are
uniformly random. A full disk holds the loop between steps (the robot holds) until space comes
back; after ``disk_full_timeout`` the actor exits non-zero with its outbox intact. A transition
the learner would refuse (a value not finite or beyond the bound) stops the actor before it
reaches the outbox. Neither a label query nor a refused reset holds the loop: the answer is not
waited for (robot_rl.runtime.episode_loop), a refused reset is tried again, bounded
(robot_rl.resets.retry).
"""

from __future__ import annotations

import shutil
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from rich.console import Console

from robot_rl.data.spaces_json import box_to_json, dict_space_to_json
from robot_rl.data.transition import Transition
from robot_rl.resets.retry import reset_with_retry
from robot_rl.rewards.labelers import RelabelOptions
from robot_rl.rewards.operator import OperatorOptions
from robot_rl.ros.config import RosBackendConfig
from robot_rl.runtime.environments import make_env
from robot_rl.runtime.episode_loop import EpisodeLoop
from robot_rl.runtime.interventions import check_interventions, with_interventions
from robot_rl.runtime.loop_timing import ControlLoopTiming, summary_line
from robot_rl.runtime.observation_mode import ObservationMode
from robot_rl.runtime.policy_updater import PolicyUpdater
from robot_rl.runtime.progress import Every, on_stop
from robot_rl.runtime.rate import Rate
from robot_rl.runtime.stopping import raise_if_pending
from robot_rl.runtime.utd_pacer import UtdPacer
from robot_rl.transport.client import TransportClient
from robot_rl.transport.messages import DEFAULT_VALUE_BOUND, check_values, encode_transition
from robot_rl.transport.outbox import Outbox, is_disk_full
from robot_rl.transport.security import ClientKeys
from robot_rl.transport.wire import WireError


@dataclass
class ActorConfig(ObservationMode, OperatorOptions, RelabelOptions):
    task: str = "pick_cube"
    """Task name (tasks/); the learner refuses an actor whose task or spaces differ."""
    learner: str = "tcp://127.0.0.1:5555"
    """The learner's address."""
    backend: Literal["twin", "ros"] = "twin"
    """'twin': the in-process MuJoCo twin of the task; 'ros': the task over the ROS 2 driver
    topics (driver or twin nodes), whose clock paces the loop (give --speedup 0)."""
    ros: RosBackendConfig = field(default_factory=RosBackendConfig)
    """The ROS 2 backend's namespaces, staleness bounds and timeouts (backend 'ros' only)."""
    actor_id: str | None = None
    """This actor's name (unique per robot); default <hostname>-<task>."""
    stack: str | None = None
    """The stack this actor belongs to (``robot-rl up`` and ``ros2 launch`` set it), said in
    its hello: a learner of another stack refuses it."""
    outbox_dir: str | None = None
    """Where unacknowledged transitions wait; default runs/actors/<actor_id>/outbox. Keep it
    across restarts: that is what makes a restart lose nothing."""
    seed: int = 0
    """Seed of the environment resets and the random actions."""
    speedup: float = 1.0
    """Control rate as a multiple of the task's (a twin may run faster); 0: as fast as it can."""
    total_steps: int | None = None
    """Stop once this actor has produced this many transitions in all (restarts included)."""
    interrupted_exit_code: int = 130
    """Exit code when stopped by SIGINT or SIGTERM with its state saved; the launch files give
    0, since ROS 2 launch logs any other exit of a process it stopped as an ERROR."""
    max_seconds: float | None = None
    """Stop acting after this many seconds (a time budget on the robot), as at --total-steps:
    the open answers are waited for, the outbox flushed, the summary printed."""
    curve_secret_key: str | None = None
    """This actor's CURVE secret key file (from `robot-rl keys`)."""
    learner_public_key: str | None = None
    """The learner's public CURVE key file."""
    fsync: str = "never"
    """Outbox flush policy: 'never' survives a killed process, 'always' also a power cut."""
    repair_outbox: bool = False
    """Repair the outbox and exit, acting nothing: keep every intact record of a damaged
    segment, say how many were dropped, reset an impossible acknowledgement record."""
    max_learner_lag: int | None = None
    """Wait for the learner while it is unreachable or this many transitions behind the data,
    until it has caught up (the recipe's update-to-data ratio, as the single-process loop keeps
    it by construction; runtime/utd_pacer.py). Twin only, between steps, the twin's nodes
    paused; refused on a real robot, which never waits. None: never wait."""
    flush_timeout: float = 30.0
    """At the end of the run, wait this long for the learner to acknowledge the outbox (what
    is left stays on disk and is sent by the next run with the same outbox)."""
    disk_full_timeout: float = 300.0
    """Seconds to hold the robot while the outbox's disk is full (acknowledgements free
    space); then the actor exits non-zero with the outbox intact."""
    log_every: float = 5.0
    """Seconds between progress lines."""
    interventions: Literal["off", "sim", "ros"] = "off"
    """Operator takeovers: 'sim' the twin's simulated human, 'ros' the /teleop/twist+joy topics."""
    reward_classifier: str | None = None
    """Reward classifier checkpoint (robot-rl train-reward): its sparse reward and termination
    replace the task's, which a robot cannot compute (robot mode needs it)."""

    def validate(self) -> None:
        if self.speedup < 0:
            raise ValueError(f"speedup must be >= 0, got {self.speedup}")
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise ValueError(f"max_seconds must be > 0, got {self.max_seconds}")
        if self.max_learner_lag is not None and self.max_learner_lag < 1:
            raise ValueError(f"max_learner_lag must be >= 1, got {self.max_learner_lag}")
        if (self.curve_secret_key is None) != (self.learner_public_key is None):
            raise ValueError("--curve-secret-key and --learner-public-key go together")
        check_interventions(self.interventions, self.backend)
        self.task_options(self.task)  # refuses a privileged state the mode forbids
        self.check_operator()
        self.check_relabel(self.reward_classifier, self.operator, self.robot_mode)
        operator = None if self.operator == "off" else f"--operator {self.operator}"
        self.check_reward_source(self.task, self.reward_classifier or operator)


class LearnerRefused(RuntimeError):
    """The learner refused this actor (task, spaces, protocol or keys differ) or its data."""


class OutboxFull(RuntimeError):
    """The outbox's disk stayed full for ``disk_full_timeout``."""


def actor_id_and_outbox(cfg: ActorConfig) -> tuple[str, Path]:
    """This actor's id and outbox directory, defaults filled in."""
    actor_id = cfg.actor_id or f"{socket.gethostname()}-{cfg.task}"
    return actor_id, Path(cfg.outbox_dir or Path("runs") / "actors" / actor_id / "outbox")


def run_actor(cfg: ActorConfig, console: Console | None = None) -> dict:
    cfg.validate()
    console = console or Console(soft_wrap=True)
    actor_id, outbox_dir = actor_id_and_outbox(cfg)
    made = None if outbox_dir.exists() else outbox_dir  # the outermost folder this run makes
    while made is not None and not made.parent.exists():
        made = made.parent
    outbox = Outbox(outbox_dir, fsync=cfg.fsync)
    try:
        return _act(cfg, console, actor_id, outbox)
    finally:
        outbox.close()
        if made is not None and outbox.next_seq == 0:  # a run that stored nothing leaves nothing
            shutil.rmtree(made, ignore_errors=True)


def _act(cfg: ActorConfig, console: Console, actor_id: str, outbox: Outbox) -> dict:
    options = cfg.task_options(cfg.task)
    build = lambda opts: make_env(
        cfg.backend, cfg.task, "", cfg.seed + outbox.next_seq, opts, ros=cfg.ros
    )
    from robot_rl.rewards.reward_sources import with_reward_sources

    env = with_reward_sources(
        build, options, reward_classifier=cfg.reward_classifier, operator=cfg, relabel=cfg,
        relabel_dir=outbox.directory.parent, robot_mode=cfg.robot_mode, log=console.print,
        defer_labels=True,
    )  # fmt: skip
    env = with_interventions(env, cfg.interventions, seed=cfg.seed + outbox.next_seq)
    backend = getattr(env.unwrapped, "backend", None)  # frame_to_command, where it says it
    hello = {
        "task": cfg.task,
        "observation_space": dict_space_to_json(env.observation_space),
        "action_space": box_to_json(env.action_space),
    }
    if cfg.stack is not None:
        hello["stack"] = cfg.stack
    keys = (
        ClientKeys(cfg.curve_secret_key, cfg.learner_public_key) if cfg.curve_secret_key else None
    )
    client = TransportClient(cfg.learner, actor_id, hello, outbox, keys=keys).start()
    if cfg.backend == "ros":  # the actor's node reports it on /diagnostics
        from robot_rl.ros.actor_status import report_actor_status

        report_actor_status(env, outbox, client)
    rng = np.random.default_rng(cfg.seed + outbox.next_seq)
    env.action_space.seed(int(rng.integers(2**31)))
    control_hz = env.task.control_hz * cfg.speedup if cfg.speedup else None
    rate = Rate(control_hz)
    pacer = UtdPacer.for_env(cfg.max_learner_lag, env)  # None: never waits (a robot)
    updater = PolicyUpdater(client, env.observation_space, env.action_space).start()
    console.print(
        f"[bold]actor[/] {actor_id}: {cfg.task} at "
        f"{f'{control_hz:.1f} Hz' if control_hz else 'full speed'} -> {cfg.learner} "
        f"(outbox resumes at sequence {outbox.next_seq})"
    )
    loop = EpisodeLoop(
        env,
        OutboxSink(outbox, client, cfg.disk_full_timeout, console),
        reset=lambda **kwargs: reset_with_retry(env, log=console.print, **kwargs),
    )
    loop.reset(seed=cfg.seed + outbox.next_seq)
    log_due = Every(cfg.log_every, time.monotonic(), grid=False)
    interventions = cfg.interventions != "off"

    timing = ControlLoopTiming(control_hz or env.task.control_hz)  # the twin: its speedup

    def policy(obs: dict) -> np.ndarray:
        current = updater.policy
        if current is not None and current.version > 0:
            started = time.perf_counter()
            action = current(obs)
            timing.inferred(time.perf_counter() - started)
            return action
        return env.action_space.sample()

    def show_progress() -> None:
        _progress(console, outbox, client, updater.policy, loop, timing, interventions)

    def stopped() -> None:
        # a second Ctrl-C (a terminal's and launch's reach a launched actor) must not cut the
        # threads' stop below short: a thread left in XLA or rclpy aborts the exit (-6)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        _give_up_held(loop, console)
        console.print(f"[yellow]interrupted[/]: {outbox.backlog} transitions wait in the outbox")

    deadline = None if cfg.max_seconds is None else time.monotonic() + cfg.max_seconds
    try:
        with on_stop(stopped):
            while cfg.total_steps is None or outbox.next_seq + loop.held < cfg.total_steps:
                raise_if_pending()  # a SIGTERM whose raise a gc callback swallowed
                if deadline is not None and time.monotonic() >= deadline:
                    console.print(f"time budget of {cfg.max_seconds:g} s spent: acting stops")
                    break
                if pacer is not None:
                    pacer.wait(client)
                if client.refused_reason and not client.connected:
                    raise LearnerRefused(client.refused_reason)
                if client.data_refused:
                    raise LearnerRefused(
                        f"its transitions: {client.data_refused} (they stay in {outbox.directory})"
                    )
                if updater.error is not None:
                    raise updater.error
                timing.step_started(time.perf_counter())
                stepped = loop.step(policy)
                if stepped.ended is not None:
                    timing.episode_ended()
                for ended in stepped.settled:  # an episode's figures once final
                    client.send_stats(ended.figures)
                rate.sleep()
                if log_due.due(time.monotonic()):
                    show_progress()
            if loop.held:
                console.print(
                    f"waiting up to {cfg.label_timeout:g} s for the answers to {loop.held} open "
                    "question(s)"
                )
            for ended in loop.flush_pending(timeout=cfg.label_timeout):
                client.send_stats(ended.figures)
            show_progress()  # the final figures, also when the run was shorter than a --log-every
            if outbox.backlog:
                console.print(
                    f"waiting up to {cfg.flush_timeout:.0f} s for the learner to acknowledge "
                    f"{outbox.backlog} transitions"
                )
            client.stop(flush_timeout=cfg.flush_timeout)
    finally:
        _give_up_held(loop, console)  # on an error: what the outbox can still take
        updater.stop()
        client.stop()
        env.close()
    steps, episodes = loop.steps, loop.episodes
    loop_figures = timing.summary(
        getattr(backend, "frame_to_command", ()), getattr(backend, "frame_age_at_tick", ())
    )
    console.print(summary_line(loop_figures))
    if outbox.backlog:
        why = client.refused_reason or client.data_refused or client.silence_reason
        console.print(
            f"[red]not acknowledged[/]: {outbox.backlog} transitions (from sequence "
            f"{outbox.acked}) within --flush-timeout {cfg.flush_timeout:g} s"
            + (f" ({why})" if why else "")
            + f"; they stay in {outbox.directory} and go to the learner with the next actor run "
            "on that outbox"
        )
    return {
        "actor": actor_id,
        "steps": steps,
        "episodes": episodes,
        "next_seq": outbox.next_seq,
        "unacknowledged": outbox.backlog,
        "control_period_ms_p50": loop_figures["period_ms"].get("p50", 0.0),
        "control_period_ms_p99": loop_figures["period_ms"].get("p99", 0.0),
        "control_loop": loop_figures,
        **(pacer.summary() if pacer is not None else {}),
    }


def _give_up_held(loop: EpisodeLoop, console: Console) -> None:
    """The transitions still awaiting an answer go to the outbox as rejects (reward 0,
    truncated): the run stops, nobody answered. Never raises (the run may be failing)."""
    if not loop.held:
        return
    held = loop.held
    try:
        loop.flush_pending(timeout=0.0)
    except Exception as err:  # the outbox may be what failed
        console.print(f"[yellow]{held} transition(s) awaiting an answer not stored[/]: {err}")
        return
    console.print(f"{held} transition(s) awaiting an answer stored (an unanswered one as a reject)")


class OutboxSink:
    """The actor's sink: checks a transition's values as the learner will, encodes it and
    appends it, numbered, to the durable outbox (holding on a full disk)."""

    def __init__(self, outbox: Outbox, client: TransportClient, disk_full_timeout, console):
        self.outbox, self.client = outbox, client
        self.disk_full_timeout, self.console = disk_full_timeout, console

    def __call__(self, t: Transition) -> None:
        bound = (self.client.welcome or {}).get("value_bound", DEFAULT_VALUE_BOUND)
        try:
            check_values(t.obs, t.reward, t.next_obs, bound)
        except WireError as err:
            raise ValueError(
                f"the environment produced a transition the learner would refuse ({err}): "
                "a broken sensor or reward function; nothing of it was stored"
            ) from err
        _store(self.outbox, encode_transition(t), self.disk_full_timeout, self.console)


def _store(outbox: Outbox, payload: bytes, timeout: float, console: Console) -> None:
    """Append to the outbox; on a full disk hold (no step, so no command) and retry until
    acknowledgements free space, or raise OutboxFull after ``timeout`` seconds."""
    try:
        outbox.append(payload)
        return
    except OSError as err:
        if not is_disk_full(err):
            raise
        reason = err.strerror or str(err)
    console.print(
        f"[red]outbox: {reason}[/] ({outbox.directory}): holding the robot until there is "
        f"space (acknowledged data is deleted as the learner confirms it); giving up in "
        f"{timeout:g} s"
    )
    deadline = time.monotonic() + timeout
    while True:
        time.sleep(0.5)
        try:
            outbox.append(payload)
        except OSError as err:
            if not is_disk_full(err):
                raise
            if time.monotonic() > deadline:
                raise OutboxFull(
                    f"outbox: {reason} for {timeout:g} s; stopping with the outbox intact "
                    f"({outbox.backlog} unacknowledged transitions wait in {outbox.directory} "
                    "for the next actor run)"
                ) from None
            continue
        console.print("outbox: space is back; going on")
        return


def _progress(console, outbox, client, policy, loop, timing, interventions: bool) -> None:
    success = loop.recent_success_rate()
    shares = ""
    unaided = ""
    if interventions:  # the operator's share of the last 20 episodes' steps
        share = loop.recent_intervention_rate()
        shares = f"interventions (last 20) {'-' if share is None else f'{share:.0%}'} | "
        own = loop.recent_unaided_rate()  # and the successes it had no hand in
        unaided = "" if own is None else f" (unaided {own:.0%})"
    waiting = f"awaiting answers {loop.held} | " if loop.held else ""
    period = timing.summary()["period_ms"]
    hz = 1000.0 / period["p50"] if period.get("p50") else float("nan")
    console.print(
        f"steps {outbox.next_seq} | episodes {loop.episodes} | success (last 20) "
        f"{'-' if success is None else f'{success:.0%}'}{unaided} | {shares}"
        f"control {hz:.1f} Hz (p99 period {period.get('p99', 0.0):.1f} ms) | "
        f"weights v{policy.version if policy else -1} | {waiting}"
        f"unacknowledged {outbox.backlog} | {'connected' if client.connected else 'NOT connected'}"
    )
