"""The core library imports without ROS 2, MuJoCo, torch or any device library, and the
import graph has no circles and no upward imports (core -> commands or sim)."""

import ast
import graphlib
import json
import subprocess
import sys
from pathlib import Path

CORE_MODULES = [
    "robot_rl.agents.sac",
    "robot_rl.agents.checkpoint",
    "robot_rl.agents.encoders",
    "robot_rl.data.replay",
    "robot_rl.data.mixing",
    "robot_rl.data.embedding_cache",
    "robot_rl.envs.robot_env",
    "robot_rl.envs.intervention",
    "robot_rl.envs.task",
    "robot_rl.runtime.train_loop",
    "robot_rl.tasks",
    "robot_rl.agents.data_parallel",
    "robot_rl.robot_kinds",
    "robot_rl.hardware",
    "robot_rl.drivers.registry",
    "robot_rl.drivers.arms.configs",
    "robot_rl.drivers.cameras.configs",
    "robot_rl.drivers.teleop.configs",
    "robot_rl.drivers.car.configs",
    "robot_rl.sim.cells.configs",
    "robot_rl.drivers.teleop.keyboard_state",
    "robot_rl.drivers.command_guard",
]
HEAVY = ["rclpy", "mujoco", "torch", "pyrealsense2", "franky", "franky_sim", "hid", "evdev", "cv2"]


def test_core_imports_pull_in_no_ros_mujoco_torch_or_device_library():
    code = (
        "import importlib, json, sys\n"
        f"for name in {CORE_MODULES!r}: importlib.import_module(name)\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


# -- the import graph: no circles, no upward imports ---------------------------------------

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = {
    "robot_rl": ROOT / "robot_rl",
    "robot_rl.drivers": ROOT / "drivers",
    "robot_rl.sim": ROOT / "sim",
    "robot_rl.tasks": ROOT / "tasks",
}
"""Where each part of the ``robot_rl`` namespace lives (pyproject's package-dir)."""
CORE = ("agents", "data", "envs", "tasks", "transport", "rewards", "resets", "ros", "drivers")
CORE_MODULES_TOP = ("robot_kinds", "hardware", "stack", "launch_support", "config_file", "errors")
"""The library below the entry points and the twin: it imports neither ``robot_rl.commands``
nor ``robot_rl.sim`` (``runtime`` may build a twin, lazily, through ``robot_kinds`` or its own
imports; the commands are the top)."""
KNOWN_UPWARD = {
    # the car twin's scripted lap recording runs the record-lap command on the twin node
    ("robot_rl.sim.experts.car_lap", "robot_rl.commands.record_lap"),
    # the simulated cells' parts are device types beside the real ones (a hardware file names
    # both alike); their light configs module imports neither ROS 2 nor MuJoCo
    ("robot_rl.drivers.registry", "robot_rl.sim.cells.configs"),
}


def _modules() -> dict[str, Path]:
    modules = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if package == "robot_rl" and parts and f"robot_rl.{parts[0]}" in PACKAGE_DIRS:
                continue  # drivers/, sim/, tasks/ are mapped in from the root
            modules[".".join([package, *parts])] = path
    return modules


def import_graph() -> dict[str, set[str]]:
    """Module -> the robot_rl modules it imports, anywhere in it (a function's lazy import
    counts, and so does an ``if TYPE_CHECKING:`` one: a circle for annotations is a circle)."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.add(full if full in modules else base)
        resolved = set()
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                resolved.add(target)
        graph[name] = resolved
    return graph


def test_no_module_imports_itself_through_others():
    try:
        graphlib.TopologicalSorter(import_graph()).prepare()
    except graphlib.CycleError as err:
        raise AssertionError(f"an import circle: {' -> '.join(err.args[1])}") from None


def test_the_core_imports_no_command_and_no_twin():
    def core(module: str) -> bool:
        rest = module.removeprefix("robot_rl.")
        return rest.split(".")[0] in CORE or rest in CORE_MODULES_TOP

    upward = set()
    for module, targets in import_graph().items():
        for target in targets:
            to_commands = target.startswith("robot_rl.commands")
            from_commands = module.startswith("robot_rl.commands") or module == "robot_rl.cli"
            if to_commands and not from_commands:
                upward.add((module, target))
            if core(module) and target.startswith("robot_rl.sim"):
                upward.add((module, target))
    assert upward - KNOWN_UPWARD == set(), "imports upward (core -> commands or sim)"
    assert KNOWN_UPWARD - upward == set(), "stale KNOWN_UPWARD entries: remove them"


def test_the_import_graph_sees_lazy_imports():
    """The check above would pass vacuously if the graph missed imports inside functions."""
    graph = import_graph()
    assert "robot_rl.stack" in graph["robot_rl.launch_support"]
    assert "robot_rl.hardware" in graph["robot_rl.stack"]  # imported inside stack_processes
    assert "robot_rl.sim.simulated_human" in graph["robot_rl.runtime.interventions"]
