"""``robot-rl up robot --hardware hardware/fr3_sim.yaml --task pick_cube``: the whole robot-mode
stack on the simulated FR3 cell, as CI can run it. The real Franka node drives franky-sim, the
cell's cameras and its simulated operator (SpaceMouse topics) play the devices, the actor runs
in robot mode with a reward classifier and operator interventions, the learner starts from MCAP
demonstrations. Asserted: the drivers are active; the actor keeps stepping (its control rate
and the cell's real-time factor are printed, and measured in ``benchmarks/fr3_sim_cell.py``,
never asserted: the machine may be loaded); transitions reach the learner and weights come
back; the e-stop stops the arm; Ctrl-C leaves no process behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("franky")
pytest.importorskip("franky_sim")
pytest.importorskip("mujoco")
pytest.importorskip("rclpy")
pytest.importorskip("psutil")

from franka_harness import ArmClient, loopback_host, wait_for
from test_fr3_sim_cell import cell_hardware

CAMERAS = ("front", "wrist")
SIZE = 64


def make_classifier(path: Path) -> Path:
    """An untrained reward classifier on the front camera (the plumbing, not its accuracy, is
    under test here; robot-rl train-reward makes real ones)."""
    from robot_rl.rewards.classifier import ClassifierConfig, RewardClassifier, save_classifier

    classifier = RewardClassifier.create(ClassifierConfig(camera="front", image_size=SIZE))
    return save_classifier(path, classifier, {})


def make_demos(directory: Path, episodes: int = 2, steps: int = 10) -> Path:
    """MCAP demonstrations in robot mode's spaces (what record-demos --source teleop writes)."""
    from robot_rl.data.mcap_demos import DemoEpisode, write_episode
    from robot_rl.envs.task import make_task
    from robot_rl.runtime.observation_mode import ObservationMode

    mode = ObservationMode(cameras=CAMERAS, image_size=SIZE, robot_mode=True)
    task = make_task("pick_cube", **mode.task_options("pick_cube"))
    obs_space, act_space = task.observation_space(), task.action_space()
    rng = np.random.default_rng(0)
    directory.mkdir(parents=True, exist_ok=True)
    for e in range(episodes):
        observations = [
            {
                k: rng.uniform(0, 255 if k in CAMERAS else 1, space.shape).astype(space.dtype)
                for k, space in obs_space.spaces.items()
            }
            for _ in range(steps + 1)
        ]
        episode = DemoEpisode(
            observations=observations,
            actions=rng.uniform(-1, 1, (steps, 4)).astype(np.float32),
            rewards=np.eye(steps, dtype=np.float32)[-1],
            terminated=np.eye(steps, dtype=bool)[-1],
            truncated=np.zeros(steps, bool),
            info={"task": "pick_cube", "source": "test"},
        )
        write_episode(
            directory / f"episode_{e:03d}.mcap",
            episode,
            obs_space,
            act_space,
            control_hz=task.control_hz,
        )
    return directory


class Diagnostics:
    """The newest /diagnostics status of every node, by name."""

    def __init__(self, node):
        from diagnostic_msgs.msg import DiagnosticArray

        self.status: dict[str, dict[str, str]] = {}
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on, 50)

    def _on(self, msg) -> None:
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            values["message"] = status.message
            self.status[status.name] = values

    def get(self, name: str) -> dict[str, str]:
        return dict(self.status.get(name, {}))


def test_up_robot_runs_the_robot_mode_stack_on_the_simulated_cell(tmp_path):
    import psutil

    host = loopback_host(27)
    hardware = cell_hardware(host, tmp_path)
    classifier = make_classifier(tmp_path / "classifier")
    demos = make_demos(tmp_path / "demos")
    run_dir = tmp_path / "run"
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "250",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    command = [
        sys.executable,
        "-m",
        "robot_rl.cli",
        "up",
        "robot",
        "--hardware",
        str(hardware),
        "--task",
        "pick_cube",
        "--cameras",
        *CAMERAS,
        "--image-size",
        str(SIZE),
        "--reward-classifier",
        str(classifier),
        "--demo-path",
        str(demos),
        "--total-steps",
        "100000",
        "--start-steps",
        "20",
        "--batch-size",
        "16",
        "--utd-ratio",
        "1",
        "--agent.num-critics",
        "2",
        "--agent.hidden-dims",
        "32",
        "32",
        "--eval-episodes",
        "0",
        "--ready-timeout",
        "300",
        "--grace",
        "30",
        "--run-dir",
        str(run_dir),
        "--log-every",
        "2",
    ]
    log = tmp_path / "up.log"
    with open(log, "w") as out:
        up = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    arm = ArmClient("/arm")
    diagnostics = Diagnostics(arm.node)
    descendants: set[int] = set()

    def alive() -> bool:
        assert up.poll() is None, f"up exited ({up.returncode}):\n{log.read_text()[-3000:]}"
        descendants.update(p.pid for p in psutil.Process(up.pid).children(recursive=True))
        return True

    try:
        # the drivers are active: up starts the actor and the learner only after that
        wait_for(
            lambda: (
                alive()
                and "actor" in log.read_text(errors="replace")
                and diagnostics.get("/arm/franka_driver").get("motion_enabled") == "True"
            ),
            420.0,
            "the drivers to be active and the actor started",
        )
        for camera in CAMERAS:
            wait_for(
                lambda c=camera: (
                    diagnostics.get(f"/{c}_cam/{c}_camera").get("message") == "publishing frames"
                ),
                120.0,
                f"the {camera} camera's frames",
            )
        assert diagnostics.get("/sim/fr3_cell").get("steps")
        # transitions reach the learner, and its weights come back to the actor
        wait_for(
            lambda: alive() and int(diagnostics.get("/actor").get("weights_version", -1)) >= 1,
            600.0,
            "the actor to receive trained weights",
        )
        actor = diagnostics.get("/actor")
        print(
            "actor:",
            actor,
            "\ncell:",
            diagnostics.get("/sim/fr3_cell"),
            "\noperator:",
            diagnostics.get("/teleop/simulated_human"),
        )
        # the actor keeps stepping at its own pace; how close that is to the task's rate on this
        # machine is measured, not asserted (its diagnostics say WARN when below 80 %)
        steps = int(actor["steps"])
        wait_for(
            lambda: alive() and int(diagnostics.get("/actor").get("steps", 0)) > steps + 5,
            180.0,
            "the actor to keep stepping",
        )
        # the e-stop stops the arm while the actor goes on commanding it
        assert arm.estop(True).success
        time.sleep(1.0)
        still_from = time.monotonic()
        time.sleep(3.0)
        moved = np.ptp(arm.positions_since(still_from), axis=0).max()
        assert moved < 0.002, f"the arm moved {moved:.4f} m under e-stop"
        assert arm.estop(False).success
        wait_for(
            lambda: alive() and arm.driver_status("/arm/franka_driver").get("estop") == "False",
            30.0,
            "the e-stop's release",
        )
        steps = int(diagnostics.get("/actor")["steps"])
        wait_for(
            lambda: alive() and int(diagnostics.get("/actor").get("steps", 0)) > steps + 5,
            180.0,
            "the actor to go on after the release",
        )
        print("actor after the e-stop:", diagnostics.get("/actor"))
    finally:
        # Ctrl-C: up stops every child; nothing may be left
        if up.poll() is None:
            descendants.update(p.pid for p in psutil.Process(up.pid).children(recursive=True))
            os.kill(up.pid, signal.SIGINT)
        try:
            code = up.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
            code = None
        arm.close()
        text = log.read_text(errors="replace")
        print(text[-4000:])
        left = [
            p
            for p in descendants
            if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert code == 130, text[-3000:]
    learner_log = (run_dir / "logs" / "learner.log").read_text(errors="replace")
    assert "demos: 2 recorded episodes" in learner_log  # the MCAP demos, no scripted ones
    assert len(descendants) >= 7  # the cell's 5 nodes, the actor and the learner
    assert left == [], f"processes left after Ctrl-C: {left}"
