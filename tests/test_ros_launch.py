"""The launch files, the stack description and the hardware file.

The launch files keep the step from launch arguments to processes in ``describe`` (no launch
import); these tests check that it names exactly the processes ``robot-rl up`` starts, that the
real launch_ros actions carry them over (labels, stop timeouts), and that hardware files are
validated with errors that name the key at fault. ``tests/test_ros2_launch.py`` runs the launch
files through the real ``ros2 launch``.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import tyro
from process_helpers import require_launch

from robot_rl.commands.up import (
    LEARNER_BATCH_SIZE,
    LEARNER_UTD_RATIO,
    TWO_CRITIC_AGENT,
    UpConfig,
    agent_flags,
    planned_processes,
)
from robot_rl.hardware import HardwareError, parse_hardware
from robot_rl.ros.actor_node import split_ros_args
from robot_rl.runtime.learner import LearnerConfig
from robot_rl.stack import ProcessSpec, ros_value

ROOT = Path(__file__).resolve().parents[1]
FRANKA = ROOT / "hardware" / "fr3_realsense_spacemouse.yaml"
TINY = UpConfig(
    "sim",
    cameras=("front",),
    image_size=32,
    speedup=3.0,
    total_steps=500,
    batch_size=32,
    demos=0,
    agent=TWO_CRITIC_AGENT.replace(num_critics=2, hidden_dims=(32, 32)),
)


def load_launch_file(name: str, monkeypatch):
    """Import launch/<name> as ros2 launch would, with launch and launch_ros unavailable."""
    monkeypatch.setitem(sys.modules, "launch", None)  # `import launch` raises ImportError
    monkeypatch.setitem(sys.modules, "launch_ros", None)
    spec = importlib.util.spec_from_file_location(name.replace(".", "_"), ROOT / "launch" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launch_values(cfg: UpConfig, run_dir: Path, endpoint: str) -> dict[str, str]:
    learner_args = [
        "--batch-size",
        str(cfg.batch_size),
        *agent_flags(cfg.agent),
        "--demos",
        str(cfg.demos),
    ]
    return {
        "task": cfg.task,
        "cameras": ",".join(cfg.cameras),
        "image_size": str(cfg.image_size),
        "speedup": str(cfg.speedup),
        "learner": endpoint,
        "run_dir": str(run_dir),
        "total_steps": str(cfg.total_steps),
        "learner_args": " ".join(learner_args),
    }


def test_sim_launch_starts_what_robot_rl_up_starts(monkeypatch, tmp_path):
    launch_file = load_launch_file("sim.launch.py", monkeypatch)
    endpoint = "tcp://127.0.0.1:5999"
    up = planned_processes(TINY, tmp_path, endpoint)
    launched = launch_file.describe(**launch_values(TINY, tmp_path, endpoint))
    assert launched == up
    assert [p.name for p in up] == ["arm_twin", "front_camera", "actor", "learner"]
    # with every default, too
    assert load_launch_file("sim.launch.py", monkeypatch).describe(
        run_dir=str(tmp_path),
        learner=endpoint,
        total_steps="4000",
        speedup="4.0",
    ) == planned_processes(UpConfig("sim"), tmp_path, endpoint)


def test_stack_roles_names_and_ros_parameters(tmp_path):
    twin, camera, actor, learner = planned_processes(TINY, tmp_path, "tcp://127.0.0.1:5999")
    assert (twin.namespace, twin.parameters["speedup"]) == ("/arm", 3.0)
    assert camera.respawn and camera.namespace == "/front_cam" and camera.parameters["width"] == 32
    assert actor.parameters == {"use_sim_time": True} and actor.name == "actor"
    command = actor.command()
    assert command[1:3] == ["-m", "robot_rl.ros.actor_node"]
    assert command[command.index("--ros-args") :] == [
        "--ros-args",
        "-r",
        "__node:=actor",
        "-r",
        "__ns:=/",
        "-p",
        "use_sim_time:=true",
    ]
    assert not learner.ros_node and "--ros-args" not in learner.command()
    # the learner's whole config goes as a file (robot_rl.config_file), with the agent and
    # the batch size up was given
    assert learner.command()[3:] == ["learner", "--config", f"{tmp_path}/config/learner.json"]
    assert learner.config.task == "pick_cube"
    assert learner.config.agent.hidden_dims == (32, 32) and learner.config.batch_size == 32


def provide_composition_interfaces_for(monkeypatch) -> bool:
    """The package's composition_interfaces stand-in for this test only (launch_ros imports it)."""
    from robot_rl.launch_support import provide_composition_interfaces

    for name in ("composition_interfaces", "composition_interfaces.srv"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return provide_composition_interfaces()


def test_composition_interfaces_stand_in_ships_with_the_package_and_refuses_use(monkeypatch):
    """launch_ros.actions imports composition_interfaces, which no wheel carries: robot_rl
    provides a stand-in (not from tests/) whose service types refuse to be built."""
    if not provide_composition_interfaces_for(monkeypatch):
        pytest.skip("a real composition_interfaces is installed here (a ROS 2 installation)")
    import composition_interfaces.srv

    with pytest.raises(RuntimeError, match="composable nodes need a ROS 2 installation"):
        composition_interfaces.srv.LoadNode.Request()


def test_launch_actions_carry_the_description_unchanged(monkeypatch, tmp_path):
    """The real launch_ros actions: a Node per ROS node, labelled by its node name, an
    ExecuteProcess for the learner, every one with the stack's stop timeouts."""
    require_launch()
    from launch import LaunchContext
    from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions
    from launch_ros.actions import Node

    from robot_rl.launch_support import SIGKILL_TIMEOUT, SIGTERM_TIMEOUT, to_actions

    provide_composition_interfaces_for(monkeypatch)

    def text(value):
        return perform_substitutions(LaunchContext(), normalize_to_list_of_substitutions(value))

    processes = planned_processes(TINY, tmp_path, "tcp://127.0.0.1:5999")
    actions = to_actions(processes)
    assert [type(a).__name__ for a in actions] == ["Node", "Node", "Node", "ExecuteProcess"]
    for spec, action in zip(processes, actions, strict=True):
        assert text(action.name) == spec.name  # the [label-N] of launch's output
        assert float(text(action.sigterm_timeout)) == SIGTERM_TIMEOUT
        assert float(text(action.sigkill_timeout)) == SIGKILL_TIMEOUT
        if isinstance(action, Node):
            assert text(action.node_executable) == spec.command()[0]
        else:
            assert [text(part) for part in action.cmd] == spec.command()


def test_robot_launch_starts_the_hardware_files_drivers_and_the_actor(monkeypatch, tmp_path):
    launch_file = load_launch_file("robot.launch.py", monkeypatch)
    processes = launch_file.describe(
        hardware=str(FRANKA), cameras="front,wrist", run_dir=str(tmp_path)
    )
    names = [p.name for p in processes]
    assert names == ["franka_driver", "front_camera", "wrist_camera", "spacemouse", "actor"]
    actor = processes[-1]
    assert actor.parameters == {"use_sim_time": False}
    assert actor.arguments == ("--config", f"{tmp_path}/config/actor.json")
    assert actor.config.ros.namespace == "/arm"
    assert list(actor.config.ros.camera_namespaces.items()) == [
        ("front", "/front_cam"),
        ("wrist", "/wrist_cam"),
    ]
    # the parameters reach the driver as typed ROS values
    driver = processes[0].command()
    assert driver[0] == "robot-rl-franka" and "robot_ip:=172.16.0.2" in driver
    camera = processes[1].command()
    assert "serial:='128422270679'" in camera  # a string of digits stays a string
    with pytest.raises(HardwareError, match="no camera node serves"):
        launch_file.describe(hardware=str(FRANKA), cameras="side", run_dir=str(tmp_path))
    with pytest.raises(ValueError, match="needs a hardware file"):
        launch_file.describe(run_dir=str(tmp_path))


def test_learner_launch_and_launch_arguments(monkeypatch, tmp_path):
    learner = load_launch_file("learner.launch.py", monkeypatch)
    (process,) = learner.describe(run_dir=str(tmp_path))
    assert process.name == "learner" and not process.ros_node
    for name in ("sim.launch.py", "robot.launch.py", "learner.launch.py"):
        module = load_launch_file(name, monkeypatch)
        assert all(a.description for a in module.ARGUMENTS)
        with pytest.raises(ValueError, match="unknown launch arguments"):
            module.describe(speed="3")
        with pytest.raises(ImportError):
            module.generate_launch_description()  # launch is blocked here (load_launch_file)


def _hardware(**changes):
    data = {
        "robot": {"kind": "arm", "namespace": "/arm"},
        "nodes": [
            {"name": "arm_driver", "executable": "robot-rl-franka", "namespace": "/arm"},
            {
                "name": "cam",
                "executable": "robot-rl-realsense",
                "role": "camera",
                "camera": "front",
                "namespace": "/front_cam",
            },
        ],
    }
    data.update(changes)
    return data


@pytest.mark.parametrize("changes, key", [
    ({"robot": {"kind": "boat"}}, "robot.kind"),
    ({"robot": {"kind": "arm", "namespace": "arm"}}, "robot.namespace"),
    ({"nodes": []}, "nodes"),
    ({"nodes": [{"name": "a", "executable": "x", "namespace": "/arm"}] * 2}, "nodes"),
    ({"nodes": [{"name": "a", "executable": "x", "namespace": "/car"}]}, "nodes"),
    ({"nodes": [{"name": "a b", "executable": "x", "namespace": "/arm"}]}, r"nodes\[0\].name"),
    ({"nodes": [{"name": "a", "executable": "x", "namespace": "/arm", "role": "camera"}]},
     r"nodes\[0\].camera"),
    ({"nodes": [{"name": "a", "executable": "x", "namespace": "/arm", "gains": 1}]},
     r"nodes\[0\]: unknown keys"),
    ({"workspace": {"low": [0, 0, 0], "high": [1, 1]}}, "workspace.high"),
    ({"workspace": {"low": [0, 0, 1], "high": [1, 1, 0.5]}}, "workspace"),
])  # fmt: skip
def test_bad_hardware_files_are_refused_naming_the_key(changes, key):
    with pytest.raises(HardwareError, match=rf"setup.yaml: {key}"):
        parse_hardware(_hardware(**changes), "setup.yaml")
    parse_hardware(_hardware(), "setup.yaml")  # the base is valid


def test_up_passes_the_agent_and_only_non_default_learner_options():
    assert LearnerConfig().batch_size == LEARNER_BATCH_SIZE
    assert LearnerConfig().utd_ratio == LEARNER_UTD_RATIO
    assert LearnerConfig().agent == TWO_CRITIC_AGENT
    assert agent_flags(TWO_CRITIC_AGENT) == []
    agent = TWO_CRITIC_AGENT.replace(
        num_critics=2, hidden_dims=(32, 32), critic_layer_norm=False, critic_subsample=None
    )
    parsed = tyro.cli(LearnerConfig, args=agent_flags(agent))
    assert parsed.agent == agent


def test_split_ros_args_and_ros_values():
    own, ros = split_ros_args(["--task", "x", "--ros-args", "-r", "__node:=a", "--", "--seed", "1"])
    assert own == ["--task", "x", "--seed", "1"]
    assert ros == ["--ros-args", "-r", "__node:=a"]
    assert [ros_value(v) for v in (True, 3, 2.5, "a", "5", "true", [1, 2])] == [
        "true",
        "3",
        "2.5",
        "a",
        "'5'",
        "'true'",
        "[1, 2]",
    ]
    with pytest.raises(ValueError, match="exactly one of module / executable"):
        ProcessSpec(name="x", role="driver")


def test_stack_description_imports_without_ros_mujoco_or_launch():
    code = (
        "import json, sys\n"
        "import robot_rl.stack, robot_rl.hardware, robot_rl.launch_support\n"
        "import robot_rl.commands.up, robot_rl.runtime.actor, robot_rl.runtime.environments\n"
        "print(json.dumps([m for m in ('rclpy', 'mujoco', 'launch', 'launch_ros')"
        " if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
