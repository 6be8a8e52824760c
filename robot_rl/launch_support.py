"""What the launch files in ``launch/`` share: their arguments, the stack they describe, and
the step from that description (``robot_rl.stack``) to launch actions.

Importing this needs neither ``launch`` nor ``launch_ros``: only ``to_actions`` and
``launch_description`` import them, and only ``generate_launch_description`` calls those, so a
test can load a launch file and compare what it would start with what ``robot-rl up`` starts.
"""

from __future__ import annotations

import dataclasses
import errno
import importlib.util
import shlex
import shutil
import socket
import sys
import time
import types
from dataclasses import dataclass
from uuid import uuid4

from robot_rl.errors import UserError
from robot_rl.stack import (
    ProcessSpec,
    StackConfig,
    stack_processes,
    with_ros_arguments,
    write_config_files,
)

RESPAWN_DELAY = 2.0
"""Seconds before a respawned node starts again (``robot-rl up`` waits as long)."""
SIGTERM_TIMEOUT = 20.0
"""Seconds launch waits after SIGINT before it escalates to SIGTERM: as long as
``robot-rl up --grace``, because the learner's final checkpoint (agent, optimisers, both replay
buffers) can take many seconds on a loaded machine, and launch's own 5 s would cut it off."""
SIGKILL_TIMEOUT = 5.0
"""Seconds after SIGTERM before SIGKILL (a process that ignores both is broken)."""


class MissingDrivers(UserError, RuntimeError):
    """The hardware file names driver executables that are not installed; launch prints the
    message as its one error line and exits non-zero."""


DEFAULT_LEARNER = "tcp://127.0.0.1:5555"
"""The learner's address where a launch file starts only one side (learner or actor) and none
is given: the one the other side's default names."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def learner_endpoint(endpoint: str | None, option: str) -> str:
    """The address a stack's learner binds: ``endpoint``, refused in one line (naming the port
    and ``option``) when something already listens on its port here, as another stack's
    learner would; None or port 0: a free port on 127.0.0.1."""
    if not endpoint:
        return f"tcp://127.0.0.1:{free_port()}"
    if not endpoint.startswith("tcp://") or ":" not in endpoint[6:]:
        return endpoint  # ipc://, inproc://: ZeroMQ says what is wrong
    host, _, port_text = endpoint[6:].rpartition(":")
    if not port_text.isdigit():
        return endpoint
    if int(port_text) == 0:
        return f"tcp://{host}:{free_port()}" if host in ("127.0.0.1", "localhost") else endpoint
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    bind_host = "" if host in ("*", "0.0.0.0", "::") else host
    with socket.socket(family) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as ZeroMQ binds
        try:
            sock.bind((bind_host, int(port_text)))
        except OSError as err:
            if err.errno != errno.EADDRINUSE:
                return endpoint  # not an address of this machine: the learner says so
            raise ValueError(
                f"port {port_text} ({option} {endpoint}) is in use on this machine (another "
                f"stack's learner?): choose another port with {option}, or leave {option} out "
                "for a free one"
            ) from None
    return endpoint


@dataclass(frozen=True)
class LaunchArgument:
    name: str
    default: str
    description: str


COMMON = (
    LaunchArgument("task", "pick_cube", "Task name (tasks/): pick_cube, peg_insert, car_lap..."),
    LaunchArgument("cameras", "", "Camera observations, comma-separated (empty: state only)"),
    LaunchArgument("image_size", "64", "Camera image side in pixels"),
    LaunchArgument("seed", "0", "Seed of the twin's resets, the actor and the learner"),
    LaunchArgument(
        "learner",
        "",
        "The learner's address (the actor connects, the learner binds); empty: a free port on "
        f"127.0.0.1 where this file starts actor and learner, {DEFAULT_LEARNER} otherwise",
    ),
    LaunchArgument(
        "run_dir",
        "",
        "Learner run in <run_dir>/learner, actor outbox in <run_dir>/actor/outbox (empty: "
        "runs/launch-<task>-<time>-<random>)",
    ),
    LaunchArgument(
        "total_steps", "", "Environment steps of the run (empty: learner recipe, the actor runs on)"
    ),
)
LEARNER_ARGS = LaunchArgument(
    "learner_args",
    "",
    "The learner's own options: a config file and/or flags, e.g. '--config learner.json' or "
    "'--agent.num-critics 2 --batch-size 64' (the stack's arguments above win)",
)
ACTOR_ARGS = LaunchArgument(
    "actor_args",
    "",
    "The actor's own options: a config file and/or flags, e.g. '--ros.max-age 0.5' "
    "(the stack's arguments above win)",
)
ROS_ARGS = LaunchArgument(
    "ros_args",
    "",
    "ROS options for every node, e.g. '--log-level debug -p name:=value' (as robot-rl up ... "
    "--ros-args ...)",
)
SPEEDUP = LaunchArgument("speedup", "4.0", "Twin only: simulated seconds per wall second")
HARDWARE = LaunchArgument(
    "hardware", "", "The setup's hardware file (hardware/*.yaml): robot, cameras, driver nodes"
)


def arguments_for(mode: str, parts: tuple[str, ...]) -> tuple[LaunchArgument, ...]:
    arguments = list(COMMON)
    if "nodes" in parts:
        arguments.append(SPEEDUP if mode == "sim" else HARDWARE)
    if "actor" in parts:
        arguments.append(ACTOR_ARGS)
    if "nodes" in parts or "actor" in parts:
        arguments.append(ROS_ARGS)
    if "learner" in parts:
        arguments.append(LEARNER_ARGS)
    return tuple(arguments)


def describe(mode: str, parts: tuple[str, ...], values: dict[str, str]) -> list[ProcessSpec]:
    """The processes a launch file starts for these launch argument values (strings, as
    ``ros2 launch`` gives them; missing ones take the defaults)."""
    known = {a.name: a.default for a in arguments_for(mode, parts)}
    unknown = set(values) - set(known)
    if unknown:
        raise ValueError(f"unknown launch arguments {sorted(unknown)}; known: {sorted(known)}")
    v = {**known, **values}
    if not v["run_dir"]:
        v["run_dir"] = f"runs/launch-{v['task']}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid4().hex[:6]}"
    if "learner" in parts:  # this launch binds it: a free port, or a given one that is free
        v["learner"] = learner_endpoint(v["learner"] or None, "learner:=")
    else:
        v["learner"] = v["learner"] or DEFAULT_LEARNER
    try:
        config = StackConfig(
            task=v["task"],
            mode=mode,
            hardware=v.get("hardware") or None,
            cameras=tuple(c.strip() for c in v["cameras"].split(",") if c.strip()),
            image_size=int(v["image_size"]),
            speedup=float(v.get("speedup", SPEEDUP.default)),
            seed=int(v["seed"]),
            learner_endpoint=v["learner"],
            run_dir=v["run_dir"],
            total_steps=int(v["total_steps"]) if v["total_steps"] else None,
            learner=_options("learner_args", v["learner_args"]) if "learner" in parts else None,
            actor=_options("actor_args", v["actor_args"]) if "actor" in parts else None,
        )
    except ValueError as err:
        raise ValueError(f"bad launch argument: {err}") from err
    processes = stack_processes(config, parts)
    try:  # the user's ROS options, after each node's own
        return with_ros_arguments(processes, shlex.split(v.get("ros_args", "")))
    except ValueError as err:
        raise ValueError(f"bad launch argument ros_args: {err}") from err


def _options(argument: str, text: str):
    """A ``learner_args`` / ``actor_args`` value as the config it gives (``--config FILE``
    and flags, as ``robot-rl learner`` / the actor node parse them)."""
    from robot_rl.config_file import parse_args

    if argument == "learner_args":
        from robot_rl.runtime.learner import LearnerConfig as config_class
    else:
        from robot_rl.runtime.actor import ActorConfig as config_class
    try:
        return parse_args(config_class, shlex.split(text), default=config_class(), prog=argument)
    except SystemExit:  # tyro has said what is wrong on stderr
        raise ValueError(f"{argument}: cannot parse {text!r} (see above)") from None


def check_installed(processes: list[ProcessSpec], hardware: str | None = None) -> None:
    """Refuse to start a stack whose driver executables are not on PATH (launch would print a
    traceback per driver, start the rest and exit 0)."""
    missing = sorted(
        {p.executable for p in processes if p.executable and shutil.which(p.executable) is None}
    )
    if missing:
        raise MissingDrivers(
            f"{hardware or 'the stack'} names driver executables that are not "
            f"installed: {', '.join(missing)}"
        )


class _RefusedService:
    service = ""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            f"composition_interfaces/{self.service} is robot_rl's stand-in "
            "(robot_rl.launch_support): composable nodes need a ROS 2 installation's real "
            "composition_interfaces"
        )


def provide_composition_interfaces() -> bool:
    """Make ``import composition_interfaces.srv`` work where no ROS 2 installation has it.

    ``launch_ros.actions`` imports it at import time for ``LoadComposableNodes``; it is a
    generated message package that no wheel carries, and robot_rl starts every node as its own
    process, never in a component container. Where it is missing, a stand-in module takes its
    place whose three service types (``LoadNode``, ``UnloadNode``, ``ListNodes``) refuse to be
    built, so a launch file that really loads composable nodes fails saying why instead of
    talking to a container with made-up messages. Returns whether the stand-in is in use."""
    if "composition_interfaces" in sys.modules:
        return getattr(sys.modules["composition_interfaces"], "ROBOT_RL_STAND_IN", False)
    if importlib.util.find_spec("composition_interfaces") is not None:
        return False
    package = types.ModuleType("composition_interfaces", "robot_rl's stand-in (no wheel exists)")
    package.ROBOT_RL_STAND_IN = True
    package.__path__ = []
    srv = types.ModuleType("composition_interfaces.srv")
    for name in ("LoadNode", "UnloadNode", "ListNodes"):
        request = type("Request", (_RefusedService,), {"service": f"{name}.Request"})
        response = type("Response", (_RefusedService,), {"service": f"{name}.Response"})
        setattr(srv, name, type(name, (), {"Request": request, "Response": response}))
    package.srv = srv
    sys.modules["composition_interfaces"] = package
    sys.modules["composition_interfaces.srv"] = srv
    return True


def to_actions(processes: list[ProcessSpec]) -> list:
    """launch_ros ``Node`` actions for the ROS nodes, ``ExecuteProcess`` for the rest; each
    process labelled by its node name, and given the stack's stop timeouts."""
    provide_composition_interfaces()
    from launch.actions import ExecuteProcess
    from launch_ros.actions import Node

    common = {
        "output": "screen",
        "sigterm_timeout": str(SIGTERM_TIMEOUT),
        "sigkill_timeout": str(SIGKILL_TIMEOUT),
        "respawn_delay": RESPAWN_DELAY,
    }
    actions = []
    for spec in processes:
        if spec.module:
            executable, arguments = sys.executable, ["-m", spec.module, *spec.arguments]
        else:
            executable, arguments = spec.executable, list(spec.arguments)
        common.update(name=spec.name, respawn=spec.respawn)
        if not spec.ros_node:
            actions.append(ExecuteProcess(cmd=[executable, *arguments], **common))
            continue
        node = Node(
            executable=executable,
            arguments=arguments,
            exec_name=spec.name,
            namespace=spec.namespace,
            parameters=[dict(spec.parameters)],
            remappings=list(spec.remappings),
            ros_arguments=list(spec.extra_ros_arguments) or None,
            **common,
        )
        actions.append(node)
    return actions


def launched(spec: ProcessSpec) -> ProcessSpec:
    """``spec`` as ROS 2 launch runs it: the actor and the learner exit 0 when launch stops
    them (their state saved), not 130: launch logs every other exit as an ERROR."""
    if spec.role not in ("actor", "learner") or spec.config is None:
        return spec
    return dataclasses.replace(
        spec, config=dataclasses.replace(spec.config, interrupted_exit_code=0)
    )


def launch_description(mode: str, parts: tuple[str, ...]):
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.substitutions import LaunchConfiguration

    arguments = arguments_for(mode, parts)

    def setup(context, *_, **__):
        values = {a.name: LaunchConfiguration(a.name).perform(context) for a in arguments}
        processes = [launched(p) for p in describe(mode, parts, values)]
        check_installed(processes, values.get("hardware"))
        write_config_files(processes)  # the actor's and the learner's --config files
        return to_actions(processes)

    return LaunchDescription(
        [
            *(
                DeclareLaunchArgument(a.name, default_value=a.default, description=a.description)
                for a in arguments
            ),
            OpaqueFunction(function=setup),
        ]
    )
