"""A physical setup's hardware file (``hardware/*.yaml``), read and checked.

It names the robot (kind, model, address, namespace), the workspace limits, the cameras (the
observation name each one serves, its namespace) and the driver nodes to start: executables on
PATH with their namespace and parameters. The drivers themselves come from ``drivers/``; a file
may name executables that are not installed yet (``missing_executables`` says which), so the
file can be written and validated before its drivers exist. The processes and the actor's ROS
settings a file gives are ``robot_rl.stack``'s to build (``driver_processes``,
``actor_config``): this module imports nothing of the stack. Format:
``hardware/fr3_realsense_spacemouse.yaml``.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robot_rl.errors import UserError
from robot_rl.robot_kinds import ROBOT_KINDS

NODE_ROLES = ("driver", "camera", "teleop")
NODE_KEYS = {"name", "type", "executable", "namespace", "role", "camera", "parameters", "respawn"}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_NAMESPACE = re.compile(r"^(/[A-Za-z][A-Za-z0-9_]*)+$")
_EXECUTABLE = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.-]*$")


class HardwareError(UserError):
    """A hardware file that cannot describe a stack; the message names the file and key."""


@dataclass(frozen=True)
class DriverNode:
    name: str
    executable: str
    namespace: str
    role: str = "driver"
    camera: str | None = None
    """For role 'camera': the observation name it serves (``front``, ``wrist``)."""
    parameters: dict[str, Any] = field(default_factory=dict)
    respawn: bool = False
    device_type: str | None = None
    """Its entry in ``robot_rl.drivers.registry`` (None for an executable it does not know)."""


@dataclass(frozen=True)
class Hardware:
    path: str
    name: str
    robot_kind: str
    robot_namespace: str
    nodes: tuple[DriverNode, ...]
    workspace_low: tuple[float, float, float] | None = None
    workspace_high: tuple[float, float, float] | None = None
    robot: dict[str, Any] = field(default_factory=dict)

    @property
    def cameras(self) -> dict[str, str]:
        """Observation name -> namespace."""
        return {n.camera: n.namespace for n in self.nodes if n.role == "camera"}

    def check_task(self, task) -> None:
        if task.robot != self.robot_kind:
            raise HardwareError(
                f"{self.path}: task {task.name!r} needs {_article(task.robot)}, this "
                f"setup is {_article(self.robot_kind)}"
            )
        missing = [c for c in task.cameras if c not in self.cameras]
        if missing:
            raise HardwareError(
                f"{self.path}: the run observes cameras {missing} that no "
                f"camera node serves (it has {sorted(self.cameras)})"
            )

    def missing_executables(self) -> list[str]:
        return [n.executable for n in self.nodes if shutil.which(n.executable) is None]

    def sensor_rates(self, cameras: tuple[str, ...] | list[str]) -> list[float]:
        """Publishing rates (Hz) of what a run observes: the robot's driver (its state topics)
        and the camera nodes serving ``cameras``, as the file gives them or, for a parameter
        the file leaves out, as the driver's config defaults it. Sensors whose rate is known
        neither way are left out."""
        observed = [
            n
            for n in self.nodes
            if (n.role == "driver" and n.namespace == self.robot_namespace)
            or (n.role == "camera" and n.camera in cameras)
        ]
        return [rate for node in observed if (rate := _node_rate(node)) is not None]


def hardware_folders() -> list[Path]:
    """Where hardware files are found by name, in order: ``hardware/`` here, this checkout's
    ``hardware/`` (an editable install), and ``share/robot_rl/hardware`` under this Python's
    prefix and each ROS 2 prefix in ``AMENT_PREFIX_PATH`` (a wheel install puts them there)."""
    import os
    import sys

    folders = [Path("hardware"), Path(__file__).resolve().parents[1] / "hardware"]
    prefixes = [sys.prefix, *os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)]
    folders += [Path(p) / "share" / "robot_rl" / "hardware" for p in prefixes if p]
    seen, unique = set(), []
    for folder in folders:
        key = folder.resolve() if folder.exists() else folder
        if key not in seen and folder.is_dir():
            seen.add(key)
            unique.append(folder)
    return unique


def find_hardware(path: str | Path) -> Path:
    """The hardware file ``path`` names: the path itself, or a file of that name (``fr3_sim``
    or ``fr3_sim.yaml``) in ``hardware_folders()``; refused in one line that says where it
    looked and which files are there."""
    given = Path(path)
    if given.is_file():
        return given
    name = given.name if given.suffix in (".yaml", ".yml") else f"{given.name}.yaml"
    folders = hardware_folders() if given.parent == Path(".") or not given.parent.exists() else []
    for folder in folders:
        if (folder / name).is_file():
            return folder / name
    known = sorted({f.stem for folder in folders for f in folder.glob("*.yaml")})
    looked = f" nor {name} in {', '.join(str(f) for f in folders)}" if folders else ""
    names = f" (by name: {', '.join(known)})" if known else ""
    raise HardwareError(f"no hardware file at {path}{looked}{names}")


def load_hardware(path: str | Path) -> Hardware:
    import yaml  # a core dependency, imported only when a file is read

    path = find_hardware(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise HardwareError(
            f"{path}: not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset {err.start}); "
            "a hardware file is YAML in UTF-8"
        ) from None
    except OSError as err:
        raise HardwareError(f"{path}: cannot read it: {err.strerror or err}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise HardwareError(f"{path}: not valid YAML{_yaml_where(err)}") from None
    return parse_hardware(data, str(path))


def _yaml_where(err) -> str:
    """' at line L, column C: <problem>' from a YAML error, in one line."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    context = getattr(err, "context", None)
    return f"{where}: {problem}" + (f" ({context})" if context else "")


def parse_hardware(data: Any, path: str = "<hardware>") -> Hardware:
    where = _Where(path)
    data = where.mapping(data, "the file")
    robot = where.mapping(data.get("robot"), "robot")
    kind = robot.get("kind")
    if kind not in ROBOT_KINDS:
        where.fail("robot.kind", f"must be one of {', '.join(ROBOT_KINDS)}, got {kind!r}")
    namespace = robot.get("namespace", f"/{kind}")
    where.namespace(namespace, "robot.namespace")
    low = high = None
    if "workspace" in data:
        workspace = where.mapping(data["workspace"], "workspace")
        low, high = (where.vector(workspace.get(k), f"workspace.{k}") for k in ("low", "high"))
        if any(a >= b for a, b in zip(low, high, strict=True)):
            where.fail("workspace", f"low {low} must be below high {high} on every axis")
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        where.fail("nodes", "must be a non-empty list of driver nodes")
    nodes = tuple(_node(where, raw, i) for i, raw in enumerate(raw_nodes))
    names = [n.name for n in nodes]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        where.fail("nodes", f"node names must be unique, repeated: {duplicates}")
    if not any(n.role == "driver" and n.namespace == namespace for n in nodes):
        where.fail("nodes", f"no driver node in the robot's namespace {namespace}")
    cameras = [n.camera for n in nodes if n.role == "camera"]
    if len(set(cameras)) != len(cameras):
        where.fail("nodes", f"two camera nodes serve the same camera: {cameras}")
    return Hardware(
        path=path,
        name=str(data.get("name", Path(path).stem)),
        robot_kind=kind,
        robot_namespace=namespace,
        nodes=nodes,
        workspace_low=low,
        workspace_high=high,
        robot=robot,
    )


def _node(where: _Where, raw: Any, index: int) -> DriverNode:
    key = f"nodes[{index}]"
    raw = where.mapping(raw, key)
    unknown = set(raw) - NODE_KEYS
    if unknown:
        where.fail(key, f"unknown keys {sorted(unknown)}")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        where.fail(f"{key}.name", f"must be a ROS node name, got {name!r}")
    device = _device_type(where, raw, key)
    executable = raw.get("executable", device.executable if device else None)
    if not isinstance(executable, str) or not _EXECUTABLE.match(executable):
        where.fail(
            f"{key}.executable",
            f"must be an executable name, got {executable!r} (or give the device's `type`)",
        )
    namespace = raw.get("namespace", "/")
    if namespace != "/":
        where.namespace(namespace, f"{key}.namespace")
    default_role = _ROLE_OF_KIND.get(device.kind, "driver") if device else "driver"
    role = raw.get("role", default_role)
    if role not in NODE_ROLES:
        where.fail(f"{key}.role", f"must be one of {', '.join(NODE_ROLES)}, got {role!r}")
    camera = raw.get("camera")
    if (role == "camera") != isinstance(camera, str):
        where.fail(
            f"{key}.camera",
            "a camera node names the camera it serves (and only a camera node does)",
        )
    parameters = where.mapping(raw.get("parameters", {}), f"{key}.parameters")
    for pname, value in parameters.items():
        if not isinstance(value, (bool, int, float, str, list)):
            where.fail(f"{key}.parameters.{pname}", f"unsupported value {value!r}")
    if device is not None:
        _check_parameter_names(where, device, parameters, key)
    respawn = raw.get("respawn", role == "camera")
    if not isinstance(respawn, bool):
        where.fail(f"{key}.respawn", f"must be true or false, got {respawn!r}")
    return DriverNode(
        name=name,
        executable=executable,
        namespace=namespace,
        role=role,
        camera=camera,
        parameters=dict(parameters),
        respawn=respawn,
        device_type=device.name if device else None,
    )


_ROLE_OF_KIND = {"arm": "driver", "car": "driver", "camera": "camera", "teleop": "teleop"}
RATE_PARAMETERS = ("rate", "state_hz", "telemetry_hz", "fps")
"""Node parameters that say how often a node publishes its sensor topics (Hz)."""


def _first_rate(values: dict) -> float | None:
    """The first positive number among ``values``' RATE_PARAMETERS."""
    for name in RATE_PARAMETERS:
        value = values.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
    return None


def _node_rate(node: DriverNode) -> float | None:
    rate = _first_rate(node.parameters)
    if rate is not None or node.device_type is None:
        return rate
    from dataclasses import fields

    from robot_rl.drivers.registry import DEVICES

    return _first_rate({f.name: f.default for f in fields(DEVICES[node.device_type].config)})


def _device_type(where: _Where, raw: dict, key: str):
    """The registry entry named by ``type`` (or the one whose console script ``executable``
    names); None for an executable the registry does not know."""
    from robot_rl.drivers.registry import DEVICES, by_executable

    if "type" in raw:
        device = DEVICES.get(raw["type"])
        if device is None:
            where.fail(
                f"{key}.type",
                f"unknown device type {raw['type']!r}; known: {', '.join(sorted(DEVICES))}",
            )
        if "executable" in raw and raw["executable"] != device.executable:
            where.fail(
                f"{key}.executable",
                f"type {device.name!r} runs {device.executable}, not {raw['executable']!r}",
            )
        return device
    executable = raw.get("executable")
    return by_executable(executable) if isinstance(executable, str) else None


def _check_parameter_names(where: _Where, device, parameters: dict, key: str) -> None:
    """Unknown parameter names are refused here rather than ignored by the node."""
    known = device.parameter_names()
    unknown = sorted(set(parameters) - set(known) - {"use_sim_time", "autostart"})
    if unknown:
        where.fail(
            f"{key}.parameters",
            f"{device.name} has no parameters {unknown}; it has {', '.join(known)}",
        )


class _Where:
    def __init__(self, path: str):
        self.path = path

    def fail(self, key: str, problem: str):
        raise HardwareError(f"{self.path}: {key}: {problem}")

    def mapping(self, value: Any, key: str) -> dict:
        if not isinstance(value, dict):
            self.fail(key, f"must be a mapping, got {type(value).__name__}")
        return value

    def namespace(self, value: Any, key: str) -> None:
        if not isinstance(value, str) or not _NAMESPACE.match(value):
            self.fail(key, f"must be an absolute ROS namespace such as /arm, got {value!r}")

    def vector(self, value: Any, key: str) -> tuple[float, float, float]:
        ok = isinstance(value, list) and len(value) == 3
        if not ok or not all(isinstance(v, (int, float)) for v in value):
            self.fail(key, f"must be three numbers [x, y, z] (m), got {value!r}")
        return tuple(float(v) for v in value)


def _article(noun: str) -> str:
    """'an arm', 'a car'."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"
