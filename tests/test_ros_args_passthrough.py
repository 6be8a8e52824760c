"""ROS options pass through: ``robot-rl up ... --ros-args ...`` and the launch files'
``ros_args:=`` reach every node of the stack, after the node's own arguments (so they win), and
never the learner (a plain process). A remap that names or places a node is refused: given to
every node, it would give them all one name. (That they take effect on running nodes:
tests/test_driver_bringup.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FRANKA = ROOT / "hardware" / "fr3_realsense_spacemouse.yaml"
OPTIONS = ("--log-level", "debug", "-p", "use_sim_time:=false")


def _check(processes) -> None:
    nodes = [p for p in processes if p.ros_node]
    assert nodes and len(nodes) < len(processes)  # the learner is there, and no ROS node
    for spec in nodes:
        command = spec.command()
        assert command[-len(OPTIONS) :] == list(OPTIONS), spec.name
        assert command.index("--ros-args") < command.index("__node:=" + spec.name) - 1
    learner = next(p for p in processes if not p.ros_node)
    assert "--log-level" not in learner.command()


def test_up_gives_the_options_after_ros_args_to_every_node(tmp_path):
    import tyro

    from robot_rl.commands.up import UpConfig, planned_processes

    cfg = tyro.cli(UpConfig, args=["sim", "--cameras", "front", "--batch-size", "16"])
    cfg = UpConfig(**{**cfg.__dict__, "ros_args": OPTIONS})
    _check(planned_processes(cfg, tmp_path, "tcp://127.0.0.1:5999"))


def test_cli_splits_the_rest_of_the_line_after_ros_args(monkeypatch):
    from robot_rl import cli
    from robot_rl.commands import up

    seen = {}
    monkeypatch.setattr(up, "run", lambda cfg: seen.setdefault("cfg", cfg) and 0)
    argv = ["up", "robot", "--hardware", str(FRANKA), "--drivers-only", "--ros-args", *OPTIONS]
    assert cli.main(argv) == 0
    assert seen["cfg"].ros_args == OPTIONS and seen["cfg"].drivers_only


def test_the_launch_files_ros_args_reach_every_node(tmp_path):
    from robot_rl.launch_support import describe

    values = {"hardware": str(FRANKA), "cameras": "front,wrist", "run_dir": str(tmp_path)}
    processes = describe("robot", ("nodes", "actor", "learner"), {**values})
    assert all(not p.extra_ros_arguments for p in processes)
    processes = describe(
        "robot", ("nodes", "actor", "learner"), {**values, "ros_args": " ".join(OPTIONS)}
    )
    _check(processes)


def test_launch_nodes_carry_them_as_ros_arguments(tmp_path):
    from robot_rl.launch_support import describe, provide_composition_interfaces, to_actions

    provide_composition_interfaces()  # before launch_ros is imported
    pytest.importorskip("launch_ros")
    values = {"hardware": str(FRANKA), "run_dir": str(tmp_path), "ros_args": "--log-level debug"}
    for action in to_actions(describe("robot", ("nodes",), values)):
        assert action._Node__ros_arguments == ["--log-level", "debug"]
    values.pop("ros_args")
    for action in to_actions(describe("robot", ("nodes",), values)):
        assert action._Node__ros_arguments is None  # no bare --ros-args


@pytest.mark.parametrize("remap", ["__node:=same", "__ns:=/same", "franka_driver:__name:=x"])
def test_a_remap_that_renames_every_node_is_refused(remap, tmp_path):
    from robot_rl.launch_support import describe

    with pytest.raises(ValueError, match="each node's name and namespace are the stack's"):
        describe("robot", ("nodes",), {"hardware": str(FRANKA), "ros_args": f"-r {remap}"})
