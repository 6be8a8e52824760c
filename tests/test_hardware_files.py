"""Hardware files name their devices by registry type: the console script and role follow from
it, and a parameter the driver does not have is refused at load time (without ROS 2), not ignored
by the node. The registry and pyproject's console scripts agree."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from robot_rl.drivers.registry import DEVICES
from robot_rl.hardware import HardwareError, load_hardware, parse_hardware

_SECTION = (Path(__file__).parents[1] / "pyproject.toml").read_text().split("[project.scripts]")[1]
SCRIPTS = dict(re.findall(r'^([\w-]+)\s*=\s*"([\w.:]+)"', _SECTION.split("\n[")[0], re.M))
NOT_DRIVER_SCRIPTS = {"robot-rl", "robot-rl-arm-twin", "robot-rl-car-twin", "robot-rl-camera-twin"}
"""Console scripts that are no device: the CLI and the twin's nodes."""


def _file(*nodes):
    return {"robot": {"kind": "arm", "namespace": "/arm"}, "nodes": list(nodes)}


ARM = {"name": "arm_driver", "type": "franka", "namespace": "/arm"}


def test_a_device_type_gives_the_executable_and_the_role():
    camera = {"name": "front", "type": "realsense", "camera": "front", "namespace": "/front"}
    teleop = {"name": "mouse", "type": "spacemouse", "namespace": "/teleop"}
    hardware = parse_hardware(_file(ARM, camera, teleop), "cell.yaml")
    arm, cam, mouse = hardware.nodes
    assert (arm.executable, arm.role, arm.device_type) == ("robot-rl-franka", "driver", "franka")
    assert (cam.executable, cam.role) == ("robot-rl-realsense", "camera")
    assert (mouse.executable, mouse.role) == ("robot-rl-spacemouse", "teleop")
    assert hardware.cameras == {"front": "/front"}


def test_an_executable_the_registry_knows_is_typed_too():
    hardware = parse_hardware(
        _file({"name": "arm_driver", "executable": "robot-rl-franka", "namespace": "/arm"})
    )
    assert hardware.nodes[0].device_type == "franka"


@pytest.mark.parametrize("node, key, words", [
    ({**ARM, "type": "kuka"}, r"nodes\[0\].type", "unknown device type 'kuka'"),
    ({**ARM, "executable": "robot-rl-camera"}, r"nodes\[0\].executable", "runs robot-rl-franka"),
])  # fmt: skip
def test_a_wrong_type_is_refused_naming_the_key(node, key, words):
    with pytest.raises(HardwareError, match=rf"cell.yaml: {key}: .*{words}"):
        parse_hardware(_file(node), "cell.yaml")


@pytest.mark.parametrize("name", sorted(DEVICES))
def test_every_registered_device_has_a_config_and_a_node(name):
    pytest.importorskip("rclpy")
    device = DEVICES[name]
    assert device.parameter_names(), f"{name}: its config has no fields"
    assert device.node_class().config_class is device.config


def test_every_registered_device_has_its_console_script_and_every_driver_script_a_device():
    for device in DEVICES.values():
        target = SCRIPTS.get(device.executable)
        assert target, f"{device.name}: {device.executable} is not in [project.scripts]"
        module = target.split(":")[0]
        assert importlib.util.find_spec(module), f"{device.executable}: no module {module}"
    drivers = {name for name in SCRIPTS if name not in NOT_DRIVER_SCRIPTS}
    assert drivers == {d.executable for d in DEVICES.values()}


def test_the_hardware_check_runs_without_ros(tmp_path):
    """Parameters are checked against the light config modules, never the driver nodes."""
    path = tmp_path / "cell.yaml"
    path.write_text(json.dumps(_file({**ARM, "parameters": {"stifness": 10.0}})))  # YAML too
    blocked = ["rclpy", "mujoco", "torch", "franky", "pyrealsense2", "cv2", "hid", "evdev"]
    code = (
        f"import sys; sys.modules.update(dict.fromkeys({blocked!r}))\n"
        "from robot_rl.hardware import HardwareError, load_hardware\n"
        f"for shipped in {[str(p) for p in HARDWARE_FILES]!r}: load_hardware(shipped)\n"
        f"try: load_hardware({str(path)!r})\n"
        "except HardwareError as error: print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        f"{path}: nodes[0].parameters: franka has no parameters ['stifness']; it has robot_ip,"
    )
    assert len(done.stdout.splitlines()) == 1


def test_a_parameter_the_driver_does_not_have_is_refused():
    node = {**ARM, "parameters": {"robot_ip": "127.0.0.1", "stifness": 10.0}}
    with pytest.raises(
        HardwareError,
        match=r"nodes\[0\].parameters: franka has no parameters "
        r"\['stifness'\]",
    ):
        parse_hardware(_file(node), "cell.yaml")


HARDWARE_FILES = sorted((Path(__file__).parents[1] / "hardware").glob("*.yaml"))


@pytest.mark.parametrize("path", HARDWARE_FILES, ids=lambda p: p.name)
def test_every_shipped_hardware_file_is_valid_and_names_registered_devices(path):
    hardware = load_hardware(path)
    assert all(node.device_type in DEVICES for node in hardware.nodes), hardware.nodes
    assert any(
        node.role == "driver" and node.namespace == hardware.robot_namespace
        for node in hardware.nodes
    )


def test_serl_cell_serves_the_pick_cube_cameras():
    hardware = load_hardware(
        Path(__file__).parents[1] / "hardware" / "fr3_realsense_spacemouse.yaml"
    )
    assert hardware.robot_kind == "arm" and hardware.robot_namespace == "/arm"
    assert hardware.cameras == {"front": "/front_cam", "wrist": "/wrist_cam"}
    assert hardware.workspace_low == (0.3, -0.25, 0.015)
    assert [n.executable for n in hardware.nodes] == [
        "robot-rl-franka",
        "robot-rl-realsense",
        "robot-rl-realsense",
        "robot-rl-spacemouse",
    ]
