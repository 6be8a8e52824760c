"""`robot-rl up sim|robot`: the whole stack as processes, as ``ros2 launch`` would start it.

The processes come from ``robot_rl.stack`` (the description the launch files use too), each in
its own process group with its log in ``<run_dir>/logs``; ``UpConfig`` is the run's one config
(docs/ARCHITECTURE.md, "Configuration"). While they run, one line shows env steps, episodes,
success, learner updates/s, the actor's control rate and weights versions.
When the actor and the learner are done: the nodes stop, the learner's final checkpoint is
evaluated on the in-process twin (``robot-rl eval``), and ``<run_dir>/report.json`` and the
curves PNG are written. Ctrl-C (or SIGTERM) stops every child: SIGINT, then SIGKILL after
``--grace`` seconds.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import tyro
from rich.console import Console

from robot_rl.agents.config import TWO_CRITIC_AGENT, AgentConfig
from robot_rl.errors import print_error
from robot_rl.rewards.labelers import RelabelOptions
from robot_rl.rewards.operator import OperatorOptions
from robot_rl.runtime.node_readiness import StackFailed, wait_until_active
from robot_rl.runtime.observation_mode import ObservationMode

LEARNER_BATCH_SIZE, LEARNER_UTD_RATIO = 256, 2
"""The learner's batch without cameras (the stack recipe's "state") and its update ratio."""
UP_TOTAL_STEPS = 4_000


@dataclass
class UpConfig(ObservationMode, OperatorOptions, RelabelOptions):
    mode: tyro.conf.Positional[Literal["sim", "robot"]]
    """'sim': the MuJoCo twin's nodes; 'robot': the driver nodes of --hardware."""
    task: str = "pick_cube"
    """Task name (tasks/)."""
    hardware: str | None = None
    """Hardware file of the robot setup (hardware/*.yaml); needed for 'robot'."""
    speedup: float = 4.0
    """Twin only: simulated seconds per wall second (the actor keeps the task's rate in
    simulated time)."""
    utd_pacing: bool = True
    """Twin only: the actor waits for a learner that falls behind the update-to-data ratio (the
    twin's time stands still meanwhile); --no-utd-pacing lets it run on. A robot never waits:
    its learner's lag is reported instead."""
    max_learner_lag: int = 16
    """Twin only: transitions the learner may fall behind before the actor waits for it."""
    total_steps: int = UP_TOTAL_STEPS
    """Environment steps of the run (the learner makes its updates for all of them)."""
    minutes: float | None = None
    """A time budget: the actor acts this many minutes (or --total-steps, whichever comes
    first), then the learner stops with its final checkpoint and the run is reported as one
    that ran its steps (a robot's training is measured in its time: 30 minutes on the cell)."""
    demos: int | None = None
    """Scripted-expert demonstrations the learner makes (twin only); default: the recipe."""
    demo_path: str | None = None
    """MCAP demonstrations for the learner's demo buffer (robot-rl record-demos --source
    teleop): robot mode's demonstrations, never scripted ones."""
    reward_classifier: str | None = None
    """Reward classifier checkpoint for the actor (robot-rl train-reward): robot mode's reward
    for a task the twin scores (pick_cube)."""
    interventions: Literal["auto", "off", "ros"] = "auto"
    """Operator takeovers on /teleop/twist+joy; 'auto': on in robot mode when the hardware file
    has a teleop node, off otherwise."""
    start_steps: int | None = None
    """Transitions before the first update; default: the recipe."""
    image_size: int | None = field(default=None, kw_only=True)
    """Camera image side in pixels; default: the stack's recipe for the learner's device
    (with cameras: 32 on a CPU learner, 64 on a GPU; robot_rl/runtime/stack_recipe.py)."""
    batch_size: int | None = None
    """Transitions per critic minibatch; default: the stack's recipe (with cameras: 64 on a
    CPU learner, 256 on a GPU; without cameras: 256)."""
    utd_ratio: int = LEARNER_UTD_RATIO
    """Critic updates per transition."""
    intervention_penalty: float = 0.0
    """Taken off the reward of the policy's last step before each operator takeover (RLIF:
    a policy that stalls until the operator finishes pays for it); 0: none."""
    agent: AgentConfig = field(default_factory=lambda: TWO_CRITIC_AGENT)
    """The agent (RLPD with 2 critics and an actor update per env step: TWO_CRITIC_AGENT says
    why; --agent.num-critics 10 --agent.critic-actor-ratio 1 is robot-rl train's)."""
    seed: int = 0
    """Seed of the twin's resets, the actor and the learner."""
    run_dir: str | None = None
    """Where logs, the learner's run and the report go; default runs/up-<task>-<time>."""
    port: int = 0
    """Learner port on 127.0.0.1 (0: a free one)."""
    eval_episodes: int = 50
    """Evaluation episodes on the in-process twin at the end (0: no evaluation)."""
    grace: float = 20.0
    """Seconds between SIGINT and SIGKILL when stopping."""
    ready_timeout: float = 120.0
    """Robot only: seconds for every driver node to reach 'active' (devices may take a while
    to open) before the actor and the learner start; past it, up names the node and stops."""
    log_every: float = 2.0
    """Seconds between progress lines."""
    learner_niceness: int = 10
    """Robot only: the learner runs this much nicer (lower CPU priority) than the drivers and
    the actor, so that on a shared machine (a simulated cell, a robot PC that also learns)
    the control loop and the cameras never wait for it; 0 keeps it equal."""
    max_age: float | None = None
    """Robot only: the actor's staleness bound (s): the slowest observed sensor's newest sample
    may be this old; default: from the sensors' rates in the hardware file (3 periods of the
    slowest, at least 0.3 s)."""
    drivers_only: bool = False
    """Robot only: start the hardware file's driver nodes and nothing else (no actor, no
    learner), wait until each is active, say so, and keep them up until Ctrl-C (or SIGTERM):
    the robot workflow's first step (check the cameras, the arm, the e-stop)."""
    ros_args: tuple[str, ...] = ()
    """ROS options for every node up starts (drivers, twin nodes, cameras, the actor), after
    the stack's own: give them last, ``up robot ... --ros-args -p name:=value --log-level
    debug`` (everything after --ros-args is theirs)."""
    sync_slop: float | None = None
    """Robot only: how far apart (s) the synchronised sensors' samples may lie; default: one
    period of the slowest observed sensor (at least 0.05 s)."""

    def with_recipe(self, backend: str | None = None) -> tuple[UpConfig, str]:
        """A copy whose unset image size and batch size take the stack's recipe for the
        learner's device (``backend``: 'cpu' or 'gpu'; None: ask JAX when cameras make it
        matter), and the one line that says which."""
        from robot_rl.runtime.stack_recipe import fill_recipe, learner_backend, stack_recipe

        values = {"image_size": self.image_size, "batch_size": self.batch_size}
        unset = [k for k, v in values.items() if v is None]
        if backend is None:
            backend = learner_backend() if self.cameras and unset else "cpu"
        name, recipe = stack_recipe(tuple(self.cameras), backend)
        filled = dataclasses.replace(self, **fill_recipe(values, recipe))
        sizes = f"{filled.image_size} px, " if self.cameras else ""
        sizes += f"batch {filled.batch_size}, {filled.utd_ratio} updates per transition"
        if not unset:
            return filled, f"recipe: as given ({sizes})"
        given = "" if len(unset) == len(values) else "; the rest as given"
        line = f"recipe: {name} for a {backend.upper()} learner ({sizes}{given})"
        return filled, line + _convolutions_note(name, backend)

    def resolved(self) -> UpConfig:
        """Itself when the recipe's fields are set, else ``with_recipe()``'s copy."""
        if self.image_size is not None and self.batch_size is not None:
            return self
        return self.with_recipe()[0]

    def validate(self) -> None:
        from robot_rl.stack import with_ros_arguments

        if self.hardware:  # a missing or unreadable hardware file first, before the rest
            from robot_rl.hardware import load_hardware

            load_hardware(self.hardware)
        with_ros_arguments([], self.ros_args)  # refuses a remap that renames every node
        if self.drivers_only:
            if self.mode != "robot" or not self.hardware:
                raise ValueError("--drivers-only needs robot mode: up robot --hardware FILE")
            if not self.ready_timeout > 0 or self.grace < 0:
                raise ValueError("--ready-timeout must be > 0 and --grace >= 0")
            return  # no actor, no learner: nothing of the task, recipe or reward to check
        self.resolved()._check()

    def _check(self) -> None:
        if self.mode == "robot" and not self.hardware:
            raise ValueError("robot-rl up robot needs --hardware hardware/<setup>.yaml")
        if self.total_steps < 1:
            raise ValueError(f"--total-steps must be >= 1, got {self.total_steps}")
        if self.minutes is not None and not self.minutes > 0:
            raise ValueError(f"--minutes must be > 0, got {self.minutes}")
        if self.eval_episodes < 0 or self.grace < 0:
            raise ValueError("--eval-episodes and --grace must be >= 0")
        if self.max_learner_lag < 1:
            raise ValueError(f"--max-learner-lag must be >= 1, got {self.max_learner_lag}")
        if not self.ready_timeout > 0:
            raise ValueError(f"--ready-timeout must be > 0, got {self.ready_timeout}")
        if not 0 <= self.learner_niceness <= 19:
            raise ValueError(f"--learner-niceness must lie in 0..19, got {self.learner_niceness}")
        if not self.intervention_penalty >= 0.0:
            raise ValueError(f"intervention_penalty must be >= 0, got {self.intervention_penalty}")
        for name in ("max_age", "sync_slop"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"--{name.replace('_', '-')} must be > 0, got {value}")
        self.agent.validate()
        mode = self.observation()
        mode.task_options(self.task)  # refuses a privileged state the mode forbids
        self.check_operator()  # the actor's operator: its success button, its relabelling
        self.check_relabel(self.reward_classifier, self.operator, mode.robot_mode)
        operator = None if self.operator == "off" else f"--operator {self.operator}"
        mode.check_reward_source(self.task, self.reward_classifier or operator)

    def learner_config(self):
        """The learner's own options (``LearnerConfig``); the stack adds task, seed, cameras,
        addresses and folders (``robot_rl.stack.learner_config``)."""
        from robot_rl.runtime.learner import LearnerConfig

        return LearnerConfig(
            batch_size=self.batch_size,
            utd_ratio=self.utd_ratio,
            intervention_penalty=self.intervention_penalty,
            agent=self.agent,
            demos=self.demos,
            start_steps=self.start_steps,
            demo_path=_absolute(self.demo_path),
            checkpoints=_absolute(self.checkpoints),  # car_lap's recorded lap, for both halves
        )

    def actor_config(self):
        """The actor's own options (``ActorConfig``): its reward source, the operator and its
        relabelling, interventions; the stack adds the rest (``robot_rl.stack.actor_config``)."""
        from robot_rl.errors import UserError
        from robot_rl.runtime.actor import ActorConfig

        if self.operator == "keyboard":
            raise UserError(
                "the actor that up starts has no terminal: use --operator joy (a /teleop/joy "
                "button), or run robot-rl actor yourself for the keyboard"
            )
        options = dataclasses.fields(OperatorOptions) + dataclasses.fields(RelabelOptions)
        return ActorConfig(
            **{f.name: getattr(self, f.name) for f in options},
            reward_classifier=_absolute(self.reward_classifier),
            interventions="ros" if operator_interventions(self) else "off",
            checkpoints=_absolute(self.checkpoints),
            max_seconds=None if self.minutes is None else self.minutes * 60.0,
        )

    def observation(self) -> ObservationMode:
        """The run's observation mode: robot mode always in 'up robot'."""
        return ObservationMode(
            cameras=tuple(self.cameras),
            image_size=self.image_size,
            privileged_state=self.privileged_state,
            robot_mode=self.robot_mode or self.mode == "robot",
            checkpoints=self.checkpoints,
        )


ROS_ARGS_FLAG = "--ros-args"
"""``robot-rl up ... --ros-args ...``: the rest of the command line is ``UpConfig.ros_args``
(``robot_rl.cli`` splits it off before the options are parsed)."""


def _convolutions_note(recipe: str, backend: str) -> str:
    """For a pixel learner on the CPU without the oneDNN extension: what that costs."""
    if recipe != "pixels" or backend != "cpu":
        return ""
    from robot_rl.agents.onednn_prerequisites import cost_line, missing

    reason = missing()
    return "" if reason is None else f"\n{cost_line(reason)}"


def _absolute(path: str | None) -> str | None:
    return str(Path(path).absolute()) if path else None


def agent_flags(agent: AgentConfig, default: AgentConfig = TWO_CRITIC_AGENT) -> list[str]:
    """``--agent.*`` options that make ``robot-rl learner`` build ``agent`` (for a launch
    file's ``learner_args``)."""
    flags = []
    for f in dataclasses.fields(AgentConfig):
        value = getattr(agent, f.name)
        if value == getattr(default, f.name):
            continue
        name = f"--agent.{f.name.replace('_', '-')}"
        if isinstance(value, bool):
            flags.append(name if value else f"--agent.no-{f.name.replace('_', '-')}")
        elif isinstance(value, tuple):
            flags += [name, *(str(v) for v in value)]
        else:
            flags += [name, str(value)]
    return flags


def planned_processes(cfg: UpConfig, run_dir: Path, endpoint: str):
    """What ``robot-rl up`` starts (the launch files start the same for the same arguments)."""
    from robot_rl.stack import StackConfig, stack_processes, with_ros_arguments

    cfg = cfg.resolved()
    config = StackConfig(
        task=cfg.task,
        mode=cfg.mode,
        hardware=cfg.hardware,
        cameras=tuple(cfg.cameras),
        image_size=cfg.image_size,
        privileged_state=cfg.privileged_state,
        robot_mode=cfg.robot_mode,
        speedup=cfg.speedup,
        seed=cfg.seed,
        max_learner_lag=cfg.max_learner_lag if cfg.utd_pacing else None,
        learner_endpoint=endpoint,
        run_dir=str(run_dir),
        total_steps=cfg.total_steps,
        log_every=cfg.log_every,
        max_age=cfg.max_age,
        sync_slop=cfg.sync_slop,
        learner=cfg.learner_config(),
        actor=cfg.actor_config(),
    )
    return with_ros_arguments(stack_processes(config), cfg.ros_args)  # to every node


def operator_interventions(cfg: UpConfig) -> bool:
    """Whether the actor takes corrections from the teleop topics: in robot mode by default
    when the hardware file has a teleop node (HIL-SERL's operator)."""
    if cfg.interventions != "auto":
        return cfg.interventions == "ros"
    if cfg.mode != "robot":
        return False
    from robot_rl.hardware import load_hardware

    return any(node.role == "teleop" for node in load_hardware(cfg.hardware).nodes)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _terminate(*_) -> None:
    raise KeyboardInterrupt


def run(cfg: UpConfig) -> int:
    from robot_rl.launch_support import check_installed, learner_endpoint
    from robot_rl.runtime.stack_progress import StackProgress, utd_text
    from robot_rl.runtime.supervisor import Supervisor
    from robot_rl.stack import write_config_files

    console = Console(soft_wrap=True)
    if cfg.drivers_only:
        return run_drivers_only(cfg, console)
    try:
        cfg, recipe_line = cfg.with_recipe()
        cfg.validate()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        run_dir = Path(cfg.run_dir or f"runs/up-{cfg.task}-{stamp}").absolute()
        # a free port, or the one asked for, refused in one line when another learner has it
        endpoint = learner_endpoint(f"tcp://127.0.0.1:{cfg.port}" if cfg.port else None, "--port")
        processes = planned_processes(cfg, run_dir, endpoint)
        check_installed(processes, cfg.hardware)  # a robot's drivers are on PATH
    except ValueError as err:
        print_error(err)
        return 2
    run_dir.mkdir(parents=True, exist_ok=True)
    write_config_files(processes)  # the actor's and the learner's whole configs
    described = [{"name": p.name, "role": p.role, "command": p.command()} for p in processes]
    (run_dir / "stack.json").write_text(json.dumps(described, indent=2))
    supervisor = Supervisor(run_dir / "logs")
    progress = StackProgress(run_dir / "logs")
    previous = signal.signal(signal.SIGTERM, _terminate)
    started = time.monotonic()
    names = ", ".join(p.name for p in processes)
    console.print(recipe_line)
    console.print(f"[bold]up[/] {cfg.mode} {cfg.task}: {names} -> {run_dir}")
    try:
        drivers = [p for p in processes if p.role not in ("actor", "learner")]
        for spec in drivers:
            supervisor.start(spec)
        if cfg.mode == "robot":
            wait_until_active(supervisor, drivers, cfg.ready_timeout, console)
        for spec in processes:
            if spec not in drivers:
                robot_learner = cfg.mode == "robot" and spec.role == "learner"
                supervisor.start(spec, niceness=cfg.learner_niceness if robot_learner else 0)
        if _supervise(supervisor, progress, console, cfg.log_every, cfg.minutes is not None):
            console.print(f"time budget spent ({cfg.minutes:g} min): stopping the learner")
            supervisor.stop(cfg.grace, names=["learner"])  # its final checkpoint and summary
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted[/]: stopping {len(supervisor.children)} processes")
        codes = supervisor.stop(cfg.grace)
        console.print("stopped: " + ", ".join(f"{k} {v}" for k, v in codes.items()))
        return 130
    except StackFailed as err:
        supervisor.stop(cfg.grace)
        print_error(f"stack failed: {err}")
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    supervisor.stop(cfg.grace)
    train_seconds = time.monotonic() - started
    console.print(progress.line(), soft_wrap=True, highlight=False)
    report = _report(cfg, run_dir, train_seconds, console)
    report["wall_seconds"] = time.monotonic() - started
    (run_dir / "report.json").write_text(json.dumps(report, indent=2))
    wall, result, success = report["wall_seconds"], report.get("eval"), ""
    if result:
        success = f"success {result['success_rate']:.0%} over {result['episodes']} episodes; "
    console.print(
        f"[bold]done[/] in {wall / 60:.1f} min (wall {wall:.0f} s): {success}"
        f"{utd_text(report['utd'])}; report {run_dir / 'report.json'}"
    )
    return 0


def run_drivers_only(cfg: UpConfig, console: Console) -> int:
    """``up robot --hardware X --drivers-only``: the driver nodes alone until Ctrl-C (0), or
    until one exits for good (1)."""
    from robot_rl.runtime.driver_bringup import drivers_up

    try:
        cfg.validate()
    except ValueError as err:
        print_error(err)
        return 2
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = Path(cfg.run_dir or f"runs/drivers-{Path(cfg.hardware).stem}-{stamp}").absolute()
    console.print(f"[bold]up[/] robot --drivers-only: the nodes of {cfg.hardware}, nothing else")
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        with drivers_up(
            cfg.hardware, run_dir / "logs", console, cfg.ready_timeout, cfg.grace, cfg.ros_args
        ) as bringup:
            console.print("Ctrl-C stops them")
            while True:
                bringup.check()
                time.sleep(0.5)
    except KeyboardInterrupt:
        return 0
    except StackFailed as err:
        print_error(f"a driver failed: {err}")
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)


def _supervise(supervisor, progress, console, log_every: float, budget: bool = False) -> bool:
    """Until the actor and the learner have both finished; a failure raises StackFailed.
    ``budget``: the actor may stop on its time budget before the learner has the steps it
    waits for; True when that happened (the learner is still running)."""
    last_line = time.monotonic()
    while True:
        for name, event, code in supervisor.poll():
            child = supervisor.children[name]
            if event == "died":
                console.print(f"[yellow]{name} died[/] ({code}); restarting it")
            elif event == "respawned":
                console.print(f"{name} restarted (start {child.starts})")
            elif child.spec.role in ("actor", "learner") and code == 0:
                console.print(f"{name} finished")
            else:
                tail = child.log.read_text(errors="replace").splitlines()[-15:]
                raise StackFailed(f"{name} exited with {code}:\n" + "\n".join(tail))
        finals = {
            name: supervisor.returncode(name)
            for name in ("actor", "learner")
            if name in supervisor.children
        }
        if finals and all(code == 0 for code in finals.values()):
            return False
        if budget and finals.get("actor") == 0 and finals.get("learner") is None:
            return True
        if time.monotonic() - last_line >= log_every:
            last_line = time.monotonic()
            console.print(progress.line(), soft_wrap=True, highlight=False)
        time.sleep(0.2)


def _report(cfg: UpConfig, run_dir: Path, train_seconds: float, console: Console) -> dict:
    from robot_rl.runtime.plots import plot_curves
    from robot_rl.runtime.stack_progress import actor_summary, utd_report

    learner_dir, logs = run_dir / "learner", run_dir / "logs"
    checkpoints, summary_file = learner_dir / "checkpoints", learner_dir / "summary.json"
    report = {
        "task": cfg.task,
        "mode": cfg.mode,
        "total_steps": cfg.total_steps,
        "train_seconds": train_seconds,
        "learner": json.loads(summary_file.read_text()) if summary_file.is_file() else None,
        "checkpoints": str(checkpoints),
    }
    paced = cfg.mode == "sim" and cfg.utd_pacing
    report["utd"] = utd_report(report["learner"], actor_summary(logs / "actor.log"), paced)
    if cfg.eval_episodes:
        episodes, on_twin = cfg.eval_episodes, cfg.mode == "robot"
        console.print(
            f"evaluating the final checkpoint on the in-process twin ({episodes} episodes)"
        )
        result = evaluate_checkpoint(checkpoints, episodes, logs / "eval.log", on_twin=on_twin)
        report["eval"] = result
        with open(learner_dir / "eval.jsonl", "a") as f:
            # the curves' x axis is environment steps (the result's own "step" counts updates)
            f.write(json.dumps({**result, "step": cfg.total_steps}) + "\n")
    curves = plot_curves(learner_dir)
    report["curves"] = str(curves) if curves else None
    return report


def evaluate_checkpoint(checkpoints: Path, episodes: int, log: Path, on_twin=False) -> dict:
    """``robot-rl eval --json-out`` in its own process (its JAX and MuJoCo stay out of ours);
    ``on_twin``: a robot run's checkpoint, evaluated on the twin as the console line says."""
    command = [sys.executable, "-m", "robot_rl.cli", "eval", "--checkpoint", str(checkpoints)]
    command += ["--episodes", str(episodes), "--json-out", *(["--on-twin"] if on_twin else [])]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"evaluation failed ({done.returncode}); see {log}")
    return json.loads(done.stdout.strip().splitlines()[-1])
