"""Node names are unique on the graph. The actor's process runs several nodes (the ROS
backend's, named by the launch file's ``-r __node:=actor``; the teleop source; the operator's
buttons), each in its own context; the library ones used to read the process's argv and so
took its ``__node:=actor`` too (``Publisher already registered for node name: 'actor'``)."""

from __future__ import annotations

import collections
import sys

import pytest

pytest.importorskip("rclpy")

from process_helpers import wait_for

ACTOR_ARGV = [
    "robot_rl.ros.actor_node",
    "--config",
    "actor.json",
    "--ros-args",
    "-r",
    "__node:=actor",
    "-r",
    "__ns:=/",
    "-p",
    "use_sim_time:=false",
]
"""What ``robot_rl.stack.actor_process`` starts (``robot-rl up``, the launch files)."""


def test_library_nodes_keep_the_process_options_but_not_its_node_name():
    from robot_rl.ros.background_node import library_ros_args

    argv = [*ACTOR_ARGV, "-r", "actor:__node:=other", "--log-level", "debug", "-r", "a:=b"]
    kept = library_ros_args(argv)
    assert "__node:=actor" not in kept and "__ns:=/" not in kept
    assert "actor:__node:=other" not in kept
    assert kept[-5:] == ["-p", "use_sim_time:=false", "--log-level", "debug", "-r", "a:=b"][-5:]
    assert kept[:4] == ACTOR_ARGV[:4]


def test_the_actor_process_nodes_have_distinct_names_on_the_graph(monkeypatch):
    """The actor's backend, its teleop source and the operator's buttons, built as the actor
    node builds them, in a process started as the stack starts the actor."""
    from robot_rl.envs.task import make_task
    from robot_rl.ros.actor_node import split_ros_args
    from robot_rl.ros.backend import RosArmBackend
    from robot_rl.ros.config import RosBackendConfig
    from robot_rl.ros.operator_buttons import JoyOperator
    from robot_rl.ros.teleop import RosTeleopSource

    monkeypatch.setattr(sys, "argv", ACTOR_ARGV)
    _, ros = split_ros_args(ACTOR_ARGV[1:])
    backend = RosArmBackend(make_task("pick_cube"), RosBackendConfig(ros_args=tuple(ros)))
    made = [backend]
    try:
        made.append(RosTeleopSource())
        made.append(JoyOperator())
        expected = {"/actor", "/teleop_source", "/operator_buttons"}

        def names() -> list[str]:
            pairs = backend.node.get_node_names_and_namespaces()
            return [f"{ns.rstrip('/')}/{name}" for name, ns in pairs]

        wait_for(lambda: expected <= set(names()), 60.0, f"{sorted(expected)} on the graph")
        ours = [n for n in names() if n in expected]
        assert collections.Counter(ours) == dict.fromkeys(expected, 1), names()
    finally:
        for thing in reversed(made):
            thing.close()
