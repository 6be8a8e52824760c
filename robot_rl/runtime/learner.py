"""The learner process: trains as transitions arrive from any number of actors.

When the update-to-data ratio (``LearningCore``) allows no further update, the loop blocks on
the arrival queue. Checkpoints hold the agent, its optimisers, both buffers and each actor's
sequence cursor; with the ingest log replayed on top, ``--resume`` after a crash stores every
acknowledged transition exactly once (a logged transition this learner refuses is skipped with
a warning). A checkpoint that cannot be written (a full disk) costs one line and is tried again
at the next interval; only the final checkpoint's failure ends the run with an error.
"""

from __future__ import annotations

import dataclasses
import queue
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import jax
import numpy as np
from rich.console import Console

from robot_rl.agents.acting_policy import frozen_trunk_fingerprint, weights_bytes
from robot_rl.agents.checkpoint import config_to_json, latest_checkpoint, read_metadata
from robot_rl.agents.config import TWO_CRITIC_AGENT, AgentConfig
from robot_rl.agents.pretrained import create_agent
from robot_rl.data.transition import Transition
from robot_rl.envs.task import make_task
from robot_rl.runtime.demos import fill_demo_buffer
from robot_rl.runtime.episode_loop import EPISODE_SCALARS
from robot_rl.runtime.learning_core import LearningCore, checkpoint_metadata
from robot_rl.runtime.observation_mode import ObservationMode
from robot_rl.runtime.progress import Every, PerSecond, on_stop
from robot_rl.runtime.recipes import Unset, resolve
from robot_rl.runtime.run_dir import RunLogger
from robot_rl.runtime.utd_tracker import UtdTracker
from robot_rl.transport.ingest_log import IngestLog
from robot_rl.transport.messages import DEFAULT_VALUE_BOUND, decode_transition
from robot_rl.transport.outbox import is_disk_full
from robot_rl.transport.security import ServerKeys, check_bind
from robot_rl.transport.server import FORGET_AFTER, TransportServer
from robot_rl.transport.wire import WireError

EXTRA_FIELDS = {"actor": ((), np.int32), "seq": ((), np.int64), "intervened": ((), np.bool_)}
"""Per transition: which actor (its stream index), its sequence number, operator override."""


@dataclass
class LearnerConfig(ObservationMode):
    task: str = "pick_cube"
    """Task name (tasks/): its spaces must match the actors'."""
    bind: str = "tcp://127.0.0.1:5555"
    """Where actors connect. Anything but loopback needs --curve-secret-key and
    --authorized-keys."""
    stack: str | None = None
    """The stack this learner belongs to (``robot-rl up`` and ``ros2 launch`` set it): actors
    that name another stack in their hello, or none, are refused. None: any actor."""
    curve_secret_key: str | None = None
    """The learner's CURVE secret key file (from `robot-rl keys`)."""
    authorized_keys: str | None = None
    """Directory of the actors' public CURVE keys that may connect."""
    run_dir: str | None = None
    """Checkpoints, ingest log, metrics; default runs/<task>-learner-s<seed>-<time>."""
    resume: bool = False
    """Continue from the newest checkpoint in run_dir and replay the ingest log on top."""
    seed: int = 0
    """Seed of the agent and of batch sampling (actors learn it from the welcome)."""
    demos: int | None = None
    """Scripted-expert demonstrations for the demo buffer (needs MuJoCo); default: recipe,
    none with --demo-path or in robot mode."""
    demo_path: str | None = None
    """MCAP demonstrations (a file or a directory: robot-rl record-demos --source teleop)
    loaded into the demo buffer, in place of scripted ones."""
    demo_fraction: float = 0.5
    """Share of every batch drawn from the demo buffer (RLPD: 0.5)."""
    intervention_penalty: float = 0.0
    """Taken off the reward of the policy's last step before each operator takeover (RLIF's
    signal: stalling until the operator finishes costs the policy); 0: none."""
    total_steps: int | None = None
    """Stop after this many online transitions (and their updates); default: recipe; 0: never."""
    start_steps: int | None = None
    """Online transitions before updates begin (actors act randomly until the first weights
    that follow an update); default: recipe."""
    batch_size: int = Unset(256)
    """Transitions per critic minibatch."""
    utd_ratio: int = 2
    """Critic updates per online transition received."""
    update_chunk: int = 4
    """Critic updates per compiled call (one lax.scan)."""
    publish_every: int = 4
    """Critic updates between weight broadcasts."""
    replay_capacity: int = 200_000
    """Online replay capacity in transitions."""
    interrupted_exit_code: int = 130
    """Exit code when stopped by SIGINT or SIGTERM with its state saved; the launch files give
    0, since ROS 2 launch logs any other exit of a process it stopped as an ERROR."""
    checkpoint_interval: float = 60.0
    """Seconds between checkpoints (also written on exit and on Ctrl-C / SIGTERM)."""
    fsync: str = "always"
    """Ingest log flush policy before an acknowledgement: 'always', 'every:N' or 'never'."""
    value_bound: float = DEFAULT_VALUE_BOUND
    """Largest magnitude of a reward or an observation entry accepted from an actor (checked
    in float32, as stored); a transition beyond it is refused, never stored."""
    repair_ingest_log: bool = False
    """Repair the ingest log of --run-dir and exit, training nothing: keep every intact batch
    of a damaged segment, say how many were dropped."""
    actor_timeout: float = FORGET_AFTER
    """Seconds of silence after which an actor's connection is forgotten and its id free
    again (actors send a heartbeat every second)."""
    log_every: float = 5.0
    """Seconds between progress lines."""
    hardware: str | None = None
    """The hardware file of the robot the actors run on (`up robot` passes it): checkpoints
    record backend 'robot' and this file, so `robot-rl eval` does not take them for twin runs.
    None: the actors run on the twin (`up sim`); a resumed run keeps its checkpoint's."""
    agent: AgentConfig = field(default_factory=lambda: TWO_CRITIC_AGENT)
    """The agent: RLPD with 2 critics and an actor update per env step (`robot-rl train` keeps
    10 critics); agents/config.py's TWO_CRITIC_AGENT says why and what it was measured at."""

    def validate(self) -> None:
        for name in ("batch_size", "utd_ratio", "update_chunk", "publish_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if (self.curve_secret_key is None) != (self.authorized_keys is None):
            raise ValueError("--curve-secret-key and --authorized-keys go together")
        if self.resume and self.run_dir is None:
            raise ValueError("--resume needs --run-dir of the learner run to continue")
        if not self.intervention_penalty >= 0.0:
            raise ValueError(f"intervention_penalty must be >= 0, got {self.intervention_penalty}")
        if not self.value_bound > 0:
            raise ValueError(f"value_bound must be > 0, got {self.value_bound}")
        if not self.actor_timeout > 0:
            raise ValueError(f"actor_timeout must be > 0, got {self.actor_timeout}")
        if self.curve_secret_key is None:
            check_bind(self.bind, None)  # before minutes of setup, not after
        self.task_options(self.task)  # refuses a privileged state the mode forbids
        if self.robot_mode and self.demos:
            raise ValueError(
                "robot mode uses no scripted twin demonstrations: give recorded "
                "ones with --demo-path (robot-rl record-demos --source teleop)"
            )
        self.agent.validate()


class _StopRequest:
    """SIGINT or SIGTERM (a process manager stopping us), remembered. A KeyboardInterrupt
    raised by a signal handler lands wherever the main thread is, JAX's gc callback included,
    where Python prints "Exception ignored" and swallows it: the learner then ran on until it
    was killed. So the request is kept; during setup the handler still raises (demos can be
    interrupted), and the training loop, where it only notes it, stops at the next update."""

    def __init__(self):
        self.requested = self.deferred = False

    def __call__(self, *_) -> None:
        self.requested = True
        if not self.deferred:
            raise KeyboardInterrupt


class CheckpointWriteError(RuntimeError):
    """The final checkpoint could not be written (the ingest log still holds the data)."""


class Learner:
    def __init__(self, cfg: LearnerConfig, console: Console | None = None):
        cfg = resolve(cfg, recorded_demos=True)  # the recipe; recorded demos or none: no script
        cfg.validate()
        self.cfg = cfg
        self.console = console or Console(soft_wrap=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.run_dir = Path(cfg.run_dir or f"runs/{cfg.task}-learner-s{cfg.seed}-{stamp}")
        self.ckpt_dir = self.run_dir / "checkpoints"
        if not cfg.resume and latest_checkpoint(self.ckpt_dir) is not None:
            raise ValueError(f"{self.run_dir} already holds a run: pass --resume to continue it")
        task = make_task(cfg.task, **cfg.task_options(cfg.task))
        self.observation_space, self.action_space = task.observation_space(), task.action_space()
        # a resumed run takes its frozen trunk from the checkpoint, not from the weights file
        agent = create_agent(
            cfg.seed,
            self.observation_space,
            self.action_space,
            cfg.agent,
            load_weights=not cfg.resume,
        )
        self.core = LearningCore.for_run(
            agent, self.observation_space, self.action_space, cfg, extra_fields=EXTRA_FIELDS
        )
        self.cursors: dict[str, int] = {}  # actor -> next sequence number held by the replay
        self.streams: dict[str, int] = {}  # actor -> replay stream index
        self.version = self.episodes = 0
        self.recent_success: list[float] = []
        self._checkpoint_failing = self._metrics_failing = False
        self._restore()
        self.logger = RunLogger(self.run_dir, dataclasses.asdict(cfg), resume=cfg.resume)
        self.ingest_log = IngestLog(self.run_dir / "ingest", fsync=cfg.fsync)
        self._replay_ingest_log()

    @property
    def received(self) -> int:
        """Online transitions stored."""
        return self.core.received

    @property
    def updates(self) -> int:
        """Critic updates done."""
        return self.core.updates

    def _restore(self) -> None:
        checkpoint = latest_checkpoint(self.ckpt_dir) if self.cfg.resume else None
        if self.cfg.resume and checkpoint is None:
            if not IngestLog.holds_records(self.run_dir / "ingest"):
                raise ValueError(
                    f"--resume: {self.run_dir} holds no checkpoint and no logged transitions, "
                    "so there is nothing to resume (leave out --resume to start a new run)"
                )
            self.console.print(
                f"no checkpoint in {self.ckpt_dir} yet: starting from the ingest log"
            )
            return
        if checkpoint is None:
            return
        self.cfg.check_matches(read_metadata(checkpoint), self.cfg.task, str(checkpoint))
        meta = self.core.restore(checkpoint)
        if self.cfg.hardware is None and meta.get("hardware"):  # robot data stays robot data
            self.cfg = dataclasses.replace(self.cfg, hardware=meta["hardware"])
        self.cursors, self.streams = meta["cursors"], meta["streams"]
        self.version, self.episodes = meta["version"], meta["episodes"]
        self.console.print(f"[bold]resumed[/] {checkpoint}: {self.received} transitions")

    def _replay_ingest_log(self) -> None:
        """Acknowledged batches newer than the checkpoint go into the replay again."""
        replayed = skipped = 0
        for actor, first_seq, items in self.ingest_log.batches():
            for offset, item in enumerate(items):
                seq = first_seq + offset
                if seq < self.cursors.get(actor, -1):
                    continue
                try:
                    transition = decode_transition(
                        item, self.observation_space, self.action_space, self.cfg.value_bound
                    )
                except WireError as err:
                    # Logged by a laxer version (or with a larger --value-bound): storing it
                    # would stop training on every resume. The stream goes on past it.
                    where = f"transition {seq} of actor {actor}"
                    self.console.print(f"[yellow]ingest log:[/] skipping {where}: {err}")
                    self.cursors[actor] = seq + 1
                    skipped += 1
                    continue
                self._insert(actor, seq, transition)
                replayed += 1
        if replayed or skipped:
            self.console.print(
                f"ingest log: {replayed} acknowledged transitions restored"
                + (f", {skipped} invalid ones skipped" if skipped else "")
            )

    def _insert(self, actor: str, seq: int, t: Transition) -> None:
        # A stream may begin, or go on, past where this learner stopped: the transport starts
        # an actor new to this run at the first transition it still holds (and says so).
        expected = self.cursors.get(actor, seq)
        if seq < expected:
            raise RuntimeError(f"actor {actor}: sequence {seq} arrived where {expected} was due")
        stream = self.streams.setdefault(actor, len(self.streams))
        self.core.add(t, stream=stream, actor=stream, seq=seq)
        self.cursors[actor] = seq + 1

    def _collect_demos(self) -> None:
        task = make_task(self.cfg.task, **self.cfg.task_options(self.cfg.task, ground_truth=True))

        def twin(seed: int):
            from robot_rl.sim import make_twin_env

            return make_twin_env(task, seed=seed)

        fill_demo_buffer(
            self.core.demos,
            self.cfg.demo_path,
            self.cfg.demos,
            twin,
            self.cfg.seed + 20_000,
            self.console.print,
        )

    def _welcome_info(self) -> dict:
        return {
            "agent_config": config_to_json(self.core.agent.config),
            "seed": self.cfg.seed,
            "frozen_trunk": frozen_trunk_fingerprint(self.core.agent),
            "value_bound": self.cfg.value_bound,
        }

    def checkpoint(self, final: bool = False) -> bool:
        """Write a checkpoint; on a full disk say so in one line and return False (a final
        one raises CheckpointWriteError instead)."""
        try:
            segment = self._write_checkpoint()
        except OSError as err:
            for partial in self.ckpt_dir.glob(".tmp_step_*"):
                shutil.rmtree(partial, ignore_errors=True)  # give the space back
            why = "the disk is full" if is_disk_full(err) else f"{err.strerror or err}"
            if final:
                self.logger.close()  # what the disk cannot take is given up, quietly
                raise CheckpointWriteError(
                    f"the final checkpoint could not be written to {self.ckpt_dir}: {why}; "
                    f"everything acknowledged is in the ingest log: free space and run again "
                    f"with --resume --run-dir {self.run_dir}"
                ) from err
            if not self._checkpoint_failing:
                self.console.print(
                    f"[red]checkpoint failed[/]: {why} ({self.ckpt_dir}); training goes on, "
                    f"acknowledged data stays in the ingest log, retrying every "
                    f"{self.cfg.checkpoint_interval:g} s"
                )
            self._checkpoint_failing = True
            return False
        self.ingest_log.prune(segment)
        if self._checkpoint_failing:
            self.console.print("checkpoint written again")
            self._checkpoint_failing = False
        return True

    def _write_checkpoint(self) -> int:
        segment = self.ingest_log.rotate()
        self._drain(block=False)  # everything logged before the rotation is now in the replay
        self.core.save(
            self.ckpt_dir,
            self.received,  # env steps, as `robot-rl train` names its checkpoints
            metadata={
                **checkpoint_metadata(self.cfg, "robot" if self.cfg.hardware else "twin"),
                "hardware": self.cfg.hardware,
                "cursors": self.cursors,
                "streams": self.streams,
                "version": self.version,
                "episodes": self.episodes,
            },
        )
        return segment

    def _log_scalars(self, step: int, values: dict) -> None:
        try:
            self.logger.scalars(step, values)
        except OSError as err:  # metrics are not worth stopping training for
            if not self._metrics_failing:
                self.console.print(f"[yellow]metrics not written[/]: {err.strerror or err}")
            self._metrics_failing = True
        else:
            self._metrics_failing = False

    def _drain(self, block: bool) -> int:
        count = 0
        arrivals = self.server.received
        try:
            batch = arrivals.get(timeout=0.2) if block else arrivals.get_nowait()
            while True:
                for offset, transition in enumerate(batch.transitions):
                    self._insert(batch.actor, batch.first_seq + offset, transition)
                count += len(batch.transitions)
                batch = arrivals.get_nowait()
        except queue.Empty:
            pass
        return count

    def _record_episodes(self) -> None:
        while not self.server.episode_stats.empty():
            _actor, episode = self.server.episode_stats.get_nowait()
            self.episodes += 1
            success = float(episode.get("success", 0.0))
            self.recent_success.append(success)
            values = {EPISODE_SCALARS[k]: v for k, v in episode.items() if k in EPISODE_SCALARS}
            self._log_scalars(self.received, values)

    def publish(self) -> None:
        self.server.publish_weights(self.version, weights_bytes(self.core.agent))

    def lag(self) -> int:
        """Accepted transitions (queued ones included) that training has not caught up with:
        what a paced actor waits on. Zero until ``start_steps`` have arrived, and zero once no
        further update chunk is allowed (updates run ``update_chunk`` at a time)."""
        accepted = self._received_at_start + self.server.transitions_accepted
        start = max(self.cfg.start_steps, 1)
        if accepted < start:
            return 0
        covered = (self.updates + self.cfg.update_chunk - 1) // self.cfg.utd_ratio
        return max(0, accepted - (start - 1) - covered)

    def done(self) -> bool:
        total = self.cfg.total_steps
        return (
            bool(total)
            and self.received >= total
            and not self.core.may_update(self.cfg.update_chunk)
        )

    def run(self, keys: ServerKeys | None = None) -> dict:
        stop = _StopRequest()
        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            return self._run(keys, stop)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _run(self, keys: ServerKeys | None, stop: _StopRequest) -> dict:
        cfg = self.cfg
        self._collect_demos()
        self.core.spread(self.console.print)
        self.server = TransportServer(
            cfg.bind,
            task=cfg.task,
            observation_space=self.observation_space,
            action_space=self.action_space,
            welcome_info=self._welcome_info(),
            ingest_log=self.ingest_log,
            stack=cfg.stack,
            cursors=self.cursors,
            keys=keys,
            value_bound=cfg.value_bound,
            forget_after=cfg.actor_timeout,
        ).start()
        self._received_at_start = self.received
        self.utd_tracker = UtdTracker(cfg.utd_ratio, cfg.start_steps)
        self.publish()
        self.console.print(
            f"[bold]learner[/] {cfg.task} on {self.server.bound_endpoint}: UTD {cfg.utd_ratio}, "
            f"{cfg.agent.num_critics} critics, updates after {cfg.start_steps} transitions "
            f"-> {self.run_dir}"
        )
        # waiting: seconds blocked on the queue: the actors' data, not training, bounds them
        loop_start, waiting, info = time.monotonic(), 0.0, {}
        status_due, log_due, checkpoint_due = (
            Every(s, loop_start, grid=False) for s in (0.1, cfg.log_every, cfg.checkpoint_interval)
        )
        publish_due = Every(cfg.publish_every, self.updates, grid=False)
        update_rate = PerSecond(self.updates)

        def stopped() -> None:
            self.checkpoint(final=True)
            self._finish(loop_start, waiting)  # the figures too: a stopped run is reported
            self.console.print(
                f"[yellow]interrupted[/]: checkpoint written; --resume --run-dir {self.run_dir}"
            )

        stop.deferred = True
        try:
            with on_stop(stopped):
                while not self.done():
                    if stop.requested:
                        raise KeyboardInterrupt  # checkpoint above, exit 130
                    self._drain(block=False)
                    self._record_episodes()
                    if self.core.may_update(cfg.update_chunk):
                        # no wait: the next batch is sampled while XLA runs this one
                        info = self.core.update(cfg.update_chunk, wait=False)
                        if publish_due.due(self.updates):
                            self.version += 1
                            self.publish()
                    else:
                        t0 = time.monotonic()
                        self._drain(block=True)  # ahead of the data: wait for transitions
                        waiting += time.monotonic() - t0
                    now = time.monotonic()
                    if status_due.due(now):
                        lag = self.lag()
                        self.server.publish_status(
                            {"lag": lag, "version": self.version, "updates": self.updates}
                        )
                        self.utd_tracker.observe(self.received, self.updates, lag)
                    if log_due.due(now):
                        # JAX dispatches asynchronously: count only updates that have finished
                        jax.block_until_ready(self.core.agent)
                        ups = update_rate(self.updates)
                        self._progress(ups)
                        if ups:
                            self._log_scalars(self.received, {k: float(v) for k, v in info.items()})
                    if checkpoint_due.due(now):
                        self.checkpoint()
                self.checkpoint(final=True)
        finally:
            self.server.stop()
            self.ingest_log.close()
        summary = self._finish(loop_start, waiting)
        self.console.print(
            "[bold]learner done[/]: " + ", ".join(f"{k} {v}" for k, v in summary.items())
        )
        return summary

    def _finish(self, loop_start: float, waiting: float) -> dict:
        """The run's summary, written (summary.json) and returned."""
        summary = {
            "run_dir": str(self.run_dir),
            "received": self.received,
            "updates": self.updates,
            "episodes": self.episodes,
            "actors": sorted(self.cursors),
            "update_seconds": self.core.update_seconds,
            # the training loop's wall time, and its share spent waiting for transitions
            "seconds": {"loop": time.monotonic() - loop_start, "waiting_for_data": waiting},
            "utd": self.utd_tracker.summary(),
        }
        try:
            self.logger.finish(summary)
        except OSError as err:
            self.console.print(f"[yellow]summary not written[/]: {err.strerror or err}")
        return summary

    def _progress(self, updates_per_second: float) -> None:
        recent = self.recent_success[-20:]
        success = f"{np.mean(recent):.0%}" if recent else "-"
        backlog = self.server.received.qsize()
        self.console.print(
            f"transitions {self.received} | actors {len(self.server.connected_actors)} | "
            f"episodes {self.episodes} | success (last 20) {success} | "
            f"updates {self.updates} ({updates_per_second:.0f}/s) | lag {self.lag()} | "
            f"UTD {self.utd_tracker.text()} | weights v{self.version} | "
            f"queued {backlog} | refused {sum(self.server.refused.values())}"
        )
