"""The drivers alone (the robot workflow's first step): ``drivers_up`` (what ``record-demos``,
``record-labels`` and ``eval --hardware`` use) and ``robot-rl up robot --hardware X
--drivers-only``: a hardware file's driver nodes and nothing else, each active before it says
so, ROS options given after ``--ros-args`` reaching every node, and Ctrl-C or SIGTERM leaving
no process behind. A small hardware file (the arm twin as the robot's driver, the OpenCV camera
node playing a video file) keeps it quick; the FR3 cell runs the same command for real.
"""

from __future__ import annotations

import io
import re
import signal
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("psutil")
pytest.importorskip("cv2")
pytest.importorskip("mujoco")

from process_helpers import UpStack, alive_pids, run_cli, wait_for

DIAGNOSTICS = "/diagnostics_drivers_only"
"""Where ``--ros-args -r /diagnostics:=...`` sends every node's diagnostics."""


@pytest.fixture(scope="module")
def hardware(tmp_path_factory) -> Path:
    """The arm twin in /arm (a lifecycle node, as a real arm driver) and a camera node on a
    looping video file in /front_cam."""
    import cv2

    directory = tmp_path_factory.mktemp("drivers_only")
    video = directory / "front.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"FFV1"), 10.0, (64, 48))
    assert writer.isOpened(), "this OpenCV cannot write FFV1"
    for i in range(10):
        writer.write(np.full((48, 64, 3), 20 * i, np.uint8))
    writer.release()
    path = directory / "small.yaml"
    path.write_text(
        f"""name: small
robot: {{kind: arm, model: franka_fr3, namespace: /arm}}
nodes:
  - name: arm_twin
    executable: robot-rl-arm-twin
    namespace: /arm
  - name: front_camera
    type: opencv_camera
    camera: front
    namespace: /front_cam
    parameters: {{source: {video}, loop: true, rate: 10.0}}
"""
    )
    return path


def _pids(bringup) -> list[int]:
    return [child.popen.pid for child in bringup.supervisor.children.values()]


def test_drivers_up_brings_each_node_to_active_and_stops_them_on_exit(hardware, tmp_path):
    from rich.console import Console

    from robot_rl.runtime.driver_bringup import drivers_up

    out = io.StringIO()
    console = Console(file=out, width=250)
    with drivers_up(hardware, tmp_path / "logs", console, ready_timeout=300.0) as bringup:
        assert bringup.names == ["/arm/arm_twin", "/front_cam/front_camera"]
        text = out.getvalue()
        assert "arm_twin active" in text and "front_camera active" in text
        assert "drivers active (small, 2 nodes)" in text.splitlines()[-1]
        pids = _pids(bringup)
        assert len(alive_pids(pids)) == 2
        bringup.check()  # both alive: nothing to say
    assert alive_pids(pids) == []
    assert "drivers stopped: arm_twin 0, front_camera 0" in out.getvalue()


def test_a_driver_that_cannot_start_is_named(tmp_path, hardware):
    from rich.console import Console

    from robot_rl.errors import UserError
    from robot_rl.runtime.driver_bringup import drivers_up

    broken = tmp_path / "broken.yaml"
    broken.write_text(re.sub(r"source: [^,]+", "source: /no.avi", hardware.read_text()))
    console = Console(file=io.StringIO())
    failed = pytest.raises(UserError, match=r"front_camera .*no video file /no.avi")
    with failed, drivers_up(broken, tmp_path / "logs", console, ready_timeout=300.0):
        pass


def test_up_drivers_only_starts_the_drivers_alone_passes_ros_args_and_stops_on_sigterm(
    hardware, tmp_path
):
    import psutil
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.context import Context
    from ros_helpers import Spinner

    context = Context()
    rclpy.init(context=context, args=[])
    node = rclpy.create_node("drivers_only_probe", context=context)
    heard: set[str] = set()
    node.create_subscription(
        DiagnosticArray, DIAGNOSTICS, lambda m: heard.update(s.name for s in m.status), 50
    )
    spinner = Spinner(node, context)
    up = UpStack(
        ["robot", "--hardware", str(hardware), "--drivers-only", "--ready-timeout", "300",
         "--run-dir", str(tmp_path / "run"), "--ros-args", "-r", f"/diagnostics:={DIAGNOSTICS}"],
        tmp_path / "up.log",
    )  # fmt: skip
    try:
        up.wait_for(lambda: "drivers active" in up.output(), 300.0, "the drivers to be active")
        output = up.output()
        assert "arm_twin active" in output and "front_camera active" in output
        # every node got the remap: each one's diagnostics arrive on the remapped topic
        wait_for(lambda: len(heard) >= 2, 60.0, f"both nodes' diagnostics on {DIAGNOSTICS}")
        commands = [" ".join(psutil.Process(p).cmdline()) for p in alive_pids(up.descendants)]
        assert len(commands) == 2, commands
        assert not any("actor" in c or " learner" in c for c in commands), commands
        up.proc.send(signal.SIGTERM, group=False)
        assert up.proc.wait_exit(120) == 0, up.output()[-3000:]
        assert alive_pids(up.descendants) == []
        assert "drivers stopped" in up.output()
    finally:
        up.ctrl_c()
        spinner.close()


def test_up_drivers_only_on_the_fr3_cell_stops_on_ctrl_c(tmp_path):
    pytest.importorskip("franky")
    pytest.importorskip("franky_sim")
    from robot_rl.sim.cells.franka_harness import cell_hardware, loopback_host

    hardware = cell_hardware(loopback_host(29), tmp_path)
    up = UpStack(
        ["robot", "--hardware", str(hardware), "--drivers-only", "--ready-timeout", "300",
         "--run-dir", str(tmp_path / "run")],
        tmp_path / "up.log",
    )  # fmt: skip
    try:
        up.wait_for(lambda: "drivers active" in up.output(), 420.0, "the cell's drivers")
        names = ("fr3_cell", "franka_driver", "front_camera", "wrist_camera", "simulated_human")
        for name in names:
            assert f"{name} " in up.output()
        assert "franka_driver active" in up.output()
        code, left = up.ctrl_c()
        assert code == 0 and left == [], up.output()[-3000:]
    finally:
        up.ctrl_c()


def test_up_refuses_ros_args_that_would_rename_every_node(hardware):
    done = run_cli(
        "up", "robot", "--hardware", str(hardware), "--drivers-only",
        "--ros-args", "-r", "__node:=same",
    )  # fmt: skip
    assert done.returncode == 2
    assert "--ros-args __node:=same" in done.stdout + done.stderr
