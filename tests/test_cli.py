"""The `robot-rl` console script and `robot-rl doctor`, run as real processes."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from process_helpers import run_cli as robot_rl

from robot_rl.cli import COMMANDS
from robot_rl.commands.doctor import Check, exit_code


@pytest.fixture(scope="module")
def doctor_report() -> dict:
    proc = robot_rl("doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_help_lists_every_command_with_its_description():
    proc = robot_rl("--help")
    assert proc.returncode == 0
    for name, (_, _, description) in COMMANDS.items():
        assert name in proc.stdout
        assert description in proc.stdout


def test_help_does_not_import_jax():
    code = (
        "import sys; from robot_rl.cli import main; main(['--help']); print('jax' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip().endswith("False")


def test_console_script_is_installed():
    script = Path(sys.executable).with_name("robot-rl")
    if not script.exists():
        pytest.skip("robot-rl is not installed in this environment (pip install -e .)")
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert "doctor" in proc.stdout


def test_unknown_command_is_a_short_error_with_exit_2():
    proc = robot_rl("doctr")
    assert proc.returncode == 2
    assert "unknown command 'doctr'" in proc.stderr
    assert "Did you mean 'doctor'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_command_prints_usage_and_exits_2():
    proc = robot_rl()
    assert proc.returncode == 2
    assert "usage: robot-rl" in proc.stderr


def test_doctor_help_shows_its_options():
    proc = robot_rl("doctor", "--help")
    assert proc.returncode == 0
    assert "--json" in proc.stdout
    assert "--strict" in proc.stdout


def test_bad_option_exits_2():
    proc = robot_rl("doctor", "--no-such-option")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_doctor_json_reports_jax_on_the_cpu(doctor_report):
    jax_entry = doctor_report["checks"]["jax"]
    assert jax_entry["status"] == "ok"
    assert jax_entry["required"] is True
    assert any(device["platform"] == "cpu" for device in jax_entry["devices"])
    assert doctor_report["ok"] is True


def test_doctor_json_has_every_item(doctor_report):
    expected = {
        "python",
        "jax",
        "torch",
        "onednn",
        "mujoco",
        "rendering",
        "rclpy",
        "ros2 launch",
        "pyrealsense2",
        "cameras",
        "teleop",
        "arms",
    }
    assert set(doctor_report["checks"]) == expected
    for entry in doctor_report["checks"].values():
        assert entry["status"] in ("ok", "missing", "error")
        assert entry["detail"]


def test_doctor_gives_a_fix_for_everything_not_ok(doctor_report):
    for name, entry in doctor_report["checks"].items():
        if entry["status"] != "ok":
            assert entry["fix"], f"{name} is {entry['status']} but has no fix command"


def test_doctor_in_a_fresh_shell_renders_as_robot_rl_would():
    """No MUJOCO_GL, no display, no AMENT_PREFIX_PATH: robot_rl picks EGL itself, so doctor
    renders with it (no false alarm), and names the prefix for ros2 launch."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM",
           "DISPLAY", "WAYLAND_DISPLAY", "AMENT_PREFIX_PATH")}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "robot_rl.cli", "doctor", "--json"],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    checks = json.loads(proc.stdout)["checks"]
    rendering = checks["rendering"]
    assert rendering["backend"] == "egl", rendering
    assert "glfw" not in rendering["detail"]
    if rendering["status"] != "ok":  # no EGL library here: the fix names what is missing
        assert rendering["fix"], rendering
    launch = checks["ros2 launch"]
    if launch["status"] == "missing" and "AMENT_PREFIX_PATH" in launch["detail"]:
        assert f"AMENT_PREFIX_PATH={sys.prefix}" in launch["fix"]


@pytest.mark.parametrize(
    ("item", "module", "fix_part"),
    [("rclpy", "rclpy", "pip install ros-rclpy"), ("pyrealsense2", "pyrealsense2", "libusb")],
)
def test_doctor_reports_missing_optional_pieces(doctor_report, item, module, fix_part):
    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed here")
    entry = doctor_report["checks"][item]
    assert entry["status"] == "missing"
    assert entry["required"] is False
    assert fix_part in entry["fix"]


def test_doctor_lists_the_devices_it_sees(doctor_report):
    # This machine has no camera, HID, input device or USB serial adapter: the lists are there
    # and empty.
    for item in ("cameras", "teleop", "arms"):
        entry = doctor_report["checks"][item]
        if entry["status"] == "missing":
            pytest.skip(f"{item}: the hardware extra is not installed ({entry['detail']})")
        assert entry["status"] == "ok" and entry["devices"] == []
        assert entry["detail"] == "none found"


def test_doctor_describes_a_device_by_serial_or_path():
    from robot_rl.commands.doctor import _describe_device

    assert (
        _describe_device({"kind": "realsense", "serial": "128422270679", "name": "D435"})
        == "realsense 128422270679 (D435)"
    )
    assert (
        _describe_device(
            {
                "kind": "gamepad",
                "path": "/dev/input/event5",
                "name": "Pad",
                "error": "permission denied",
            }
        )
        == "gamepad /dev/input/event5 (Pad) [permission denied]"
    )


def test_doctor_table_output_exits_0():
    proc = robot_rl("doctor")
    assert proc.returncode == 0, proc.stderr
    assert "jax" in proc.stdout
    assert "required pieces ok" in proc.stdout


def test_strict_fails_only_when_a_required_piece_is_not_ok():
    jax_missing = [Check("python", "ok", "3.11", required=True), Check("jax", "missing", "")]
    jax_missing[1].required = True
    optional_missing = [Check("jax", "ok", "cpu", required=True), Check("rclpy", "missing", "")]
    assert exit_code(jax_missing, strict=True) == 1
    assert exit_code(jax_missing, strict=False) == 0
    assert exit_code(optional_missing, strict=True) == 0


def test_a_user_error_is_one_line_on_stderr_and_exit_2(tmp_path):
    """Any UserError a command raises reaches the user as one line and exit code 2."""
    proc = robot_rl("convert-encoder", str(tmp_path / "no.pkl"), str(tmp_path / "out.bin"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'out.bin'} must end in .safetensors"
    ]
    assert "Traceback" not in proc.stdout + proc.stderr
