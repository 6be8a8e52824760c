"""Every node executable (``pyproject.toml``'s ``[project.scripts]`` but ``robot-rl``) answers
``--help`` with its parameters and exits 0 without touching anything: no rclpy context, no
socket, no child process, no pty (``robot-rl-franka --help`` once tried to reach 172.16.0.2,
``robot-rl-fr3-sim-cell --help`` started franky-sim)."""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy")

ROOT = Path(__file__).resolve().parents[1]
_SECTION = (ROOT / "pyproject.toml").read_text().split("[project.scripts]", 1)[1].split("\n[")[0]
SCRIPTS = {
    name: target
    for name, target in re.findall(r'^([\w-]+)\s*=\s*"([\w.:]+)"', _SECTION, re.MULTILINE)
    if name != "robot-rl"
}
"""The node executables, from pyproject.toml (the source of truth, not the installed copy)."""


class Touched(AssertionError):
    """A --help that reached for a device, a socket, ROS 2 or a child process."""


@pytest.fixture
def nothing_may_start(monkeypatch):
    import pty

    import rclpy

    def refuse(what):
        def call(*_, **__):
            raise Touched(f"--help {what}")

        return call

    monkeypatch.setattr(rclpy, "init", refuse("initialised rclpy"))
    monkeypatch.setattr(socket.socket, "connect", refuse("connected a socket"))
    monkeypatch.setattr(socket.socket, "bind", refuse("bound a socket"))
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("started a process"))
    monkeypatch.setattr(os, "fork", refuse("forked"))
    monkeypatch.setattr(os, "openpty", refuse("opened a pty"))
    monkeypatch.setattr(pty, "openpty", refuse("opened a pty"))


def _main(target: str):
    module, attribute = target.split(":")
    try:
        return getattr(importlib.import_module(module), attribute)
    except ImportError as err:  # a device library this machine lacks
        pytest.skip(f"{module}: {err}")


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_help_lists_the_parameters_and_touches_nothing(script, nothing_may_start, capsys):
    main = _main(SCRIPTS[script])
    with pytest.raises(SystemExit) as exited:
        sys.exit(main(["--help"]))
    assert exited.value.code in (0, None), capsys.readouterr()
    text = capsys.readouterr().out
    assert text.startswith("usage: ") and "--ros-args" in text


def test_every_device_type_of_the_registry_is_described_by_its_executable(
    nothing_may_start, capsys
):
    from robot_rl.drivers.registry import DEVICES

    for device in DEVICES.values():
        main = _main(SCRIPTS[device.executable])
        with pytest.raises(SystemExit):
            sys.exit(main(["-h"]))
        text = capsys.readouterr().out
        for f in dataclasses.fields(device.config):
            assert f"  {f.name} (" in text, f"{device.executable} -h lacks {device.name}'s {f.name}"
            description = f.metadata.get("description", "")
            assert " ".join(description.split()[:3]) in " ".join(text.split())


def test_the_franka_executable_answers_help_without_a_robot():
    """As a user types it: exit 0, the robot's address among the parameters, no connection
    attempt (it would take connect_timeout and fail)."""
    executable = shutil.which("robot-rl-franka")
    if executable is None:
        pytest.skip("robot-rl-franka is not installed")
    pytest.importorskip("franky")
    done = subprocess.run(
        [executable, "--help", "--ros-args", "-p", "robot_ip:=127.0.0.9"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "robot_ip (str, default '172.16.0.2')" in done.stdout
    assert "connect" not in done.stderr.lower()


def test_the_registry_says_which_nodes_are_lifecycle_nodes():
    """``up`` waits for a lifecycle node's 'active' and a plain node's presence: the registry's
    word decides which (a lifecycle node is in the graph a moment before its get_state is)."""
    from robot_rl.drivers.registry import DEVICES
    from robot_rl.ros.node_base import DeviceNode

    for device in DEVICES.values():
        try:
            node_class = device.node_class()
        except ImportError as err:
            pytest.skip(f"{device.module}: {err}")
        assert device.lifecycle == issubclass(node_class, DeviceNode), device.name
