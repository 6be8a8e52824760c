"""What a whole robot_rl stack runs, as data: one description that both the launch files
(``launch/*.launch.py``) and ``robot-rl up`` turn into processes, so CI starts exactly what
``ros2 launch`` would.

A stack is a list of ``ProcessSpec`` (a ROS 2 node or a plain process). ``sim``: the task's twin
node (``/arm`` or ``/car``, the ``/clock`` source), a camera node per observed camera
(``/<camera>_cam``), the actor (``use_sim_time``) and the learner. ``robot``: the driver nodes of
a ``hardware/*.yaml``, the actor (wall time) and the learner. The actor's and the learner's specs
carry their whole config and its file (``--config FILE``). No ROS 2, launch or MuJoCo import.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robot_rl.config_file import CONFIG_FLAG, write_config
from robot_rl.robot_kinds import robot_kind

MODES = ("sim", "robot")
PARTS = ("nodes", "actor", "learner")
"""Which groups of processes to describe: the robot side's nodes, the actor, the learner."""

CAMERA_NODE = "robot_rl.sim.nodes.camera_node"
ACTOR_NODE = "robot_rl.ros.actor_node"
CLI_MODULE = "robot_rl.cli"


@dataclass(frozen=True)
class ProcessSpec:
    """One process of the stack, in the terms of a launch_ros ``Node`` action."""

    name: str
    """Node name (ROS nodes) or the process's label."""
    role: str
    """'driver' (robot or twin), 'camera', 'teleop', 'actor' or 'learner'."""
    module: str | None = None
    """Run as ``python -m module`` (robot_rl's own nodes and commands)."""
    executable: str | None = None
    """Or an executable on PATH (drivers named by a hardware file)."""
    arguments: tuple[str, ...] = ()
    """The process's own arguments (before ``--ros-args``)."""
    namespace: str = "/"
    parameters: dict[str, Any] = field(default_factory=dict)
    remappings: tuple[tuple[str, str], ...] = ()
    ros_node: bool = True
    """False: a plain process (no ``--ros-args``)."""
    respawn: bool = False
    """Restart it when it dies (sensor drivers: a camera that crashes comes back)."""
    config: Any = field(default=None, hash=False)
    """The process's whole config (the actor's, the learner's), given as ``config_file``."""
    config_file: str | None = None
    """Where ``config`` is written before the process starts (its ``--config`` argument)."""
    extra_ros_arguments: tuple[str, ...] = ()
    """The user's own ROS options (``up --ros-args ...``: ``-p``, ``-r``, ``--log-level``),
    after the stack's, so that they win."""

    def __post_init__(self) -> None:
        if (self.module is None) == (self.executable is None):
            raise ValueError(f"process {self.name!r}: give exactly one of module / executable")
        if not self.namespace.startswith("/"):
            raise ValueError(
                f"process {self.name!r}: namespace {self.namespace!r} must start with '/'"
            )

    def write_config(self) -> None:
        if self.config is not None:
            write_config(self.config, self.config_file)

    def ros_arguments(self) -> list[str]:
        """What launch_ros appends for the node's name, namespace, parameters, remappings."""
        if not self.ros_node:
            return []
        args = ["--ros-args", "-r", f"__node:={self.name}", "-r", f"__ns:={self.namespace}"]
        for key, value in self.parameters.items():
            args += ["-p", f"{key}:={ros_value(value)}"]
        for source, target in self.remappings:
            args += ["-r", f"{source}:={target}"]
        return [*args, *self.extra_ros_arguments]

    def command(self, python: str = sys.executable) -> list[str]:
        head = [python, "-m", self.module] if self.module else [self.executable]
        return [*head, *self.arguments, *self.ros_arguments()]


def ros_value(value: Any) -> str:
    """A parameter value as ``-p name:=value`` text (YAML, as rcl parses it)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(ros_value(v) for v in value) + "]"
    if isinstance(value, str):
        return value if _plain_string(value) else "'" + value.replace("'", "''") + "'"
    return repr(value)


def _plain_string(text: str) -> bool:
    # a string YAML would read as a number, a bool or null needs quotes to stay a string
    lowered = text.lower()
    if lowered in ("true", "false", "yes", "no", "on", "off", "null", "~", ""):
        return False
    try:
        float(text)
        return False
    except ValueError:
        return not any(c in text for c in ":#[]{},'\"&*!|>%@`")


@dataclass(frozen=True)
class StackConfig:
    task: str = "pick_cube"
    mode: str = "sim"
    """'sim' (twin nodes) or 'robot' (the drivers of ``hardware``)."""
    hardware: str | None = None
    """The hardware file of a robot stack (``hardware/*.yaml``)."""
    cameras: tuple[str, ...] = ()
    """Camera observations of the run (empty: state only)."""
    image_size: int = 64
    privileged_state: bool | None = None
    """The twin's object poses in the state (None: the rule of ``ObservationMode``); a robot
    stack never has them."""
    robot_mode: bool = False
    """Observe and score only what drivers publish (always on in a robot stack)."""
    speedup: float = 4.0
    """Twin only: simulated seconds per wall second."""
    max_learner_lag: int | None = 16
    """Twin only: the actor waits (the twin paused) while the learner is this many transitions
    behind its update-to-data ratio, until it has caught up; None: never. A robot never waits."""
    camera_rate: float = 20.0
    """Twin cameras' frame rate (simulated Hz)."""
    seed: int = 0
    learner_endpoint: str = "tcp://127.0.0.1:5555"
    run_dir: str = "runs/up"
    """The learner's run directory is ``<run_dir>/learner``, the actor's outbox
    ``<run_dir>/actor/outbox``."""
    total_steps: int | None = None
    """Actor transitions and learner budget (None: the learner's recipe, the actor runs on)."""
    log_every: float = 2.0
    """Seconds between the actor's and the learner's progress lines."""
    max_age: float | None = None
    """Robot only: the actor's staleness bound (s); None: from the sensors' rates in the
    hardware file (``robot_rl.ros.sync.bounds_for_rates``)."""
    sync_slop: float | None = None
    """Robot only: how far apart (s) the synchronised sensors' samples may lie; None: from
    their rates."""
    learner: Any = None
    """The learner's own options (a ``LearnerConfig``: agent size, demos, batch size...) that
    the stack's settings complete; None: its defaults."""
    actor: Any = None
    """The actor's own options (an ``ActorConfig``: ``ros.max_age``, the operator...) that the
    stack's settings complete; None: its defaults."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.mode == "robot" and not self.hardware:
            raise ValueError("a robot stack needs a hardware file (hardware:=... / --hardware)")
        if not self.speedup > 0:
            raise ValueError(f"speedup must be > 0, got {self.speedup}")
        if self.max_learner_lag is not None and self.max_learner_lag < 1:
            raise ValueError(f"max_learner_lag must be >= 1, got {self.max_learner_lag}")
        if self.image_size < 8:
            raise ValueError(f"image_size must be >= 8, got {self.image_size}")

    @property
    def actor_id(self) -> str:
        return f"{self.mode}-{self.task}"

    @property
    def stack_id(self) -> str:
        """This stack's name in the actor's hello, which its learner checks: another stack's
        actor (the same ``actor_id`` on the same task) is refused rather than trained on. Its
        run folder and learner address make it: two stacks never share either."""
        where = f"{Path(self.run_dir).absolute()} {self.learner_endpoint}"
        return f"{self.actor_id}-{hashlib.sha256(where.encode()).hexdigest()[:12]}"

    @property
    def observes_robot_only(self) -> bool:
        """Robot mode: on a robot always."""
        return self.robot_mode or self.mode == "robot"

    def config_file(self, name: str) -> str:
        return f"{self.run_dir}/config/{name}.json"


def stack_processes(cfg: StackConfig, parts: tuple[str, ...] = PARTS) -> list[ProcessSpec]:
    """Every process of the stack ``cfg`` describes, drivers first, learner last."""
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"unknown stack parts {sorted(unknown)}; choose from {PARTS}")
    from robot_rl.envs.task import make_task
    from robot_rl.runtime.observation_mode import ObservationMode

    mode = ObservationMode(
        cameras=tuple(cfg.cameras),
        image_size=cfg.image_size,
        privileged_state=cfg.privileged_state,
        robot_mode=cfg.observes_robot_only,
    )
    task = make_task(cfg.task, **mode.task_options(cfg.task))
    hardware = None
    if cfg.mode == "robot":
        from robot_rl.hardware import load_hardware

        hardware = load_hardware(cfg.hardware)
        hardware.check_task(task)
    processes: list[ProcessSpec] = []
    if "nodes" in parts:
        processes += driver_processes(hardware) if hardware else twin_processes(cfg, task)
    if "actor" in parts:
        processes.append(actor_process(cfg, hardware))
    if "learner" in parts:
        processes.append(learner_process(cfg))
    if {"actor", "learner"} <= set(parts):  # one stack: its learner takes only its own actor
        processes = [
            dataclasses.replace(p, config=dataclasses.replace(p.config, stack=cfg.stack_id))
            if p.role in ("actor", "learner")
            else p
            for p in processes
        ]
    return processes


def with_ros_arguments(processes: list[ProcessSpec], ros_args) -> list[ProcessSpec]:
    """``processes`` with the user's ROS options (``up --ros-args ...``, the launch files'
    ``ros_args:=``) after each node's own (a plain process, the learner, takes none). The
    remaps that name or place a node are refused: given to every node, they would give them
    all one name."""
    ros_args = tuple(ros_args)
    for arg in ros_args:
        if any(f"__{key}:=" in arg for key in ("node", "name", "ns")):
            raise ValueError(
                f"--ros-args {arg}: the ROS options go to every node, and each node's name "
                "and namespace are the stack's (the hardware file's)"
            )
    if not ros_args:
        return processes
    return [dataclasses.replace(p, extra_ros_arguments=ros_args) for p in processes]


def write_config_files(processes: list[ProcessSpec]) -> None:
    """Write each process's config file (call just before starting them)."""
    for spec in processes:
        spec.write_config()


def driver_processes(hardware) -> list[ProcessSpec]:
    """The driver nodes a hardware file names (``robot_rl.hardware.Hardware``)."""
    return [
        ProcessSpec(
            name=n.name,
            role=n.role,
            executable=n.executable,
            namespace=n.namespace,
            parameters=dict(n.parameters),
            respawn=n.respawn,
        )
        for n in hardware.nodes
    ]


def twin_processes(cfg: StackConfig, task) -> list[ProcessSpec]:
    kind = robot_kind(task.robot)
    nodes = [
        ProcessSpec(
            name=kind.twin_node_name,
            role="driver",
            module=kind.twin_node_module,
            namespace=kind.namespace,
            parameters={
                "task": cfg.task,
                "speedup": float(cfg.speedup),
                "seed": cfg.seed,
                "use_sim_time": True,
            },
        )
    ]
    for camera in cfg.cameras:
        nodes.append(
            ProcessSpec(
                name=f"{camera}_camera",
                role="camera",
                module=CAMERA_NODE,
                namespace=f"/{camera}_cam",
                respawn=True,
                parameters={
                    "task": cfg.task,
                    "camera": camera,
                    "width": cfg.image_size,
                    "height": cfg.image_size,
                    "rate": float(cfg.camera_rate),
                    "use_sim_time": True,
                },
            )
        )
    return nodes


def _unless_given(config, default, **values) -> dict:
    """``values`` for the fields ``config`` leaves at ``default``'s value (a stack default that
    an option the user gave keeps from overriding)."""
    return {k: v for k, v in values.items() if getattr(config, k) == getattr(default, k)}


def _shared_changes(cfg: StackConfig, base) -> dict:
    """What the stack sets alike in the actor's and the learner's config (``base``): the task,
    what it observes, the seed and the budget."""
    changes = {
        "task": cfg.task,
        "seed": cfg.seed,
        "image_size": cfg.image_size,
        "log_every": cfg.log_every,
        "cameras": tuple(cfg.cameras),
        "robot_mode": base.robot_mode or cfg.observes_robot_only,
    }
    if cfg.privileged_state is not None:
        changes["privileged_state"] = cfg.privileged_state
    if cfg.total_steps is not None:
        changes["total_steps"] = cfg.total_steps
    return changes


def actor_config(cfg: StackConfig, hardware=None):
    """The actor's whole config: ``cfg.actor`` completed by the stack."""
    from robot_rl.runtime.actor import ActorConfig

    base = cfg.actor if cfg.actor is not None else ActorConfig()
    default = ActorConfig()
    changes = {
        **_shared_changes(cfg, base),
        "learner": cfg.learner_endpoint,
        "backend": "ros",
        "actor_id": cfg.actor_id,
        "outbox_dir": f"{cfg.run_dir}/actor/outbox",
        # the ROS clock paces the loop; the learner must hold every transition to finish its
        # budget: wait for it
        **_unless_given(base, default, speedup=0.0, flush_timeout=600.0),
    }
    ros, ros_default = base.ros, default.ros
    if hardware is not None:
        ros = hardware_ros_config(ros, hardware, cfg.cameras, cfg.max_age, cfg.sync_slop)
    else:
        # the twin's nodes may still be starting, a respawned camera takes a while: wait for
        # them (in wall seconds) rather than fail the run
        ros = dataclasses.replace(
            ros, **_unless_given(ros, ros_default, ready_timeout=90.0, service_timeout=60.0)
        )
        if cfg.max_learner_lag is not None:  # hold the recipe's update-to-data ratio
            changes.update(_unless_given(base, default, max_learner_lag=cfg.max_learner_lag))
    return dataclasses.replace(base, ros=ros, **changes)


def hardware_ros_config(
    ros, hardware, cameras, max_age: float | None = None, slop: float | None = None
):
    """``ros`` (a ``RosBackendConfig``) completed for a hardware file's nodes: its namespaces,
    and staleness bounds that fit the observed sensors' rates (``robot_rl.ros.sync``:
    a 10 Hz camera is not stale at 0.1 s) unless ``ros`` or ``max_age`` / ``slop`` set them.
    The one place every robot-mode command (``up robot``, ``record-demos``, ``eval``) gets
    its backend options from a hardware file."""
    from robot_rl.ros.config import RosBackendConfig
    from robot_rl.ros.sync import bounds_for_rates

    default = RosBackendConfig()
    rate_age, rate_slop = bounds_for_rates(hardware.sensor_rates(tuple(cameras)))
    bounds = _unless_given(ros, default, max_age=rate_age, slop=rate_slop)
    if max_age is not None:
        bounds["max_age"] = max_age
    if slop is not None:
        bounds["slop"] = slop
    # a driver's reset service answers once the arm is at its reset pose: give it the time
    # its own reset_timeout allows (the Franka node's: 15 s), not the default 10 s
    return dataclasses.replace(
        ros,
        namespace=hardware.robot_namespace,
        camera_namespaces=dict(hardware.cameras),
        **_unless_given(ros, default, service_timeout=60.0),
        **bounds,
    )


def _with_config(cfg: StackConfig, name: str, config, *arguments: str, **spec) -> ProcessSpec:
    """Process ``name`` (its role too), started with ``--config`` of its whole ``config``."""
    path = cfg.config_file(name)
    arguments = (*arguments, CONFIG_FLAG, path)
    return ProcessSpec(name, name, arguments=arguments, config=config, config_file=path, **spec)


def actor_process(cfg: StackConfig, hardware=None) -> ProcessSpec:
    config, sim_time = actor_config(cfg, hardware), {"use_sim_time": cfg.mode == "sim"}
    return _with_config(cfg, "actor", config, module=ACTOR_NODE, parameters=sim_time)


def learner_config(cfg: StackConfig):
    """The learner's whole config: ``cfg.learner`` completed by the stack."""
    from robot_rl.runtime.learner import LearnerConfig

    base = cfg.learner if cfg.learner is not None else LearnerConfig()
    changes = {
        **_shared_changes(cfg, base),
        "bind": cfg.learner_endpoint,
        "run_dir": f"{cfg.run_dir}/learner",
    }
    if cfg.mode == "robot":  # its checkpoints then say they come from this robot, not the twin
        from robot_rl.hardware import find_hardware  # a name (fr3_sim) or a path

        changes["hardware"] = str(find_hardware(cfg.hardware).absolute())
    return dataclasses.replace(base, **changes)


def learner_process(cfg: StackConfig) -> ProcessSpec:
    config = learner_config(cfg)
    return _with_config(cfg, "learner", config, "learner", module=CLI_MODULE, ros_node=False)
