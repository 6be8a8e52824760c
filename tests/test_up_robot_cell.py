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

import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("franky")
pytest.importorskip("franky_sim")
pytest.importorskip("mujoco")
pytest.importorskip("rclpy")
pytest.importorskip("psutil")

from process_helpers import UP_ROBOT_TINY, UpStack, wait_for
from ros_helpers import Diagnostics

from robot_rl.sim.cells.franka_harness import ArmClient, cell_hardware, loopback_host

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


UP_ARGS = ["--task", "pick_cube", "--cameras", *CAMERAS, "--image-size", str(SIZE), *UP_ROBOT_TINY]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """``up robot`` on the cell, once for the module, until its drivers are active and the actor
    started (up starts the actor and the learner only after that); a client for the arm and the
    nodes' /diagnostics."""
    tmp_path = tmp_path_factory.mktemp("up_robot_cell")
    hardware = cell_hardware(loopback_host(27), tmp_path)
    classifier = make_classifier(tmp_path / "classifier")
    demos = make_demos(tmp_path / "demos")
    run_dir = tmp_path / "run"
    up = UpStack(
        ["robot", "--hardware", str(hardware), "--reward-classifier", str(classifier),
         "--demo-path", str(demos), "--run-dir", str(run_dir), *UP_ARGS],
        tmp_path / "up.log",
    )  # fmt: skip
    arm = ArmClient("/arm")
    diagnostics = Diagnostics(arm.node)
    try:
        up.wait_for(
            lambda: (
                "actor" in up.output()
                and diagnostics.get("/arm/franka_driver").get("motion_enabled") == "True"
            ),
            420.0,
            "the drivers to be active and the actor started",
        )
        yield SimpleNamespace(up=up, arm=arm, diagnostics=diagnostics, run_dir=run_dir)
    finally:
        up.ctrl_c()
        arm.close()
        print(up.output()[-4000:])


def actor_steps(diagnostics) -> int:
    return int(diagnostics.get("/actor").get("steps", 0))


def test_the_drivers_are_active_and_the_cameras_publish(stack):
    for camera in CAMERAS:
        wait_for(
            lambda c=camera: (
                stack.diagnostics.get(f"/{c}_cam/{c}_camera").get("message") == "publishing frames"
            ),
            120.0,
            f"the {camera} camera's frames",
        )
    assert stack.diagnostics.get("/sim/fr3_cell").get("steps")


def test_transitions_reach_the_learner_and_its_weights_come_back(stack):
    diagnostics = stack.diagnostics
    stack.up.wait_for(
        lambda: int(diagnostics.get("/actor").get("weights_version", -1)) >= 1,
        600.0,
        "the actor to receive trained weights",
    )
    print(
        "actor:",
        diagnostics.get("/actor"),
        "\ncell:",
        diagnostics.get("/sim/fr3_cell"),
        "\noperator:",
        diagnostics.get("/teleop/simulated_human"),
    )


def test_node_names_are_unique_on_the_graph(stack):
    """Every node of the running stack has a name of its own (the actor's teleop source once
    took the actor's ``__node:=actor`` from its process's arguments: three /actor nodes)."""
    import collections

    def names() -> list[str]:
        pairs = stack.arm.node.get_node_names_and_namespaces()
        return [f"{ns.rstrip('/')}/{name}" for name, ns in pairs]

    wait_for(lambda: {"/actor", "/teleop_source"} <= set(names()), 120.0, "the actor's nodes")
    counts = collections.Counter(names())
    assert [name for name, count in counts.items() if count > 1] == [], counts


def test_the_actor_keeps_stepping(stack):
    """At its own pace: how close that is to the task's rate on this machine is measured, not
    asserted (its diagnostics say WARN when below 80 %)."""
    steps = actor_steps(stack.diagnostics)
    stack.up.wait_for(
        lambda: actor_steps(stack.diagnostics) > steps + 5, 180.0, "the actor to keep stepping"
    )


def test_the_estop_stops_the_arm_while_the_actor_commands_it(stack):
    arm = stack.arm
    assert arm.estop(True).success
    try:
        time.sleep(1.0)
        still_from = time.monotonic()
        time.sleep(3.0)
        moved = np.ptp(arm.positions_since(still_from), axis=0).max()
        assert moved < 0.002, f"the arm moved {moved:.4f} m under e-stop"
    finally:
        assert arm.estop(False).success


def test_the_actor_goes_on_after_the_estops_release(stack):
    arm = stack.arm
    assert arm.estop(True).success
    assert arm.estop(False).success
    stack.up.wait_for(
        lambda: arm.driver_status("/arm/franka_driver").get("estop") == "False",
        30.0,
        "the e-stop's release",
    )
    steps = actor_steps(stack.diagnostics)
    stack.up.wait_for(
        lambda: actor_steps(stack.diagnostics) > steps + 5,
        180.0,
        "the actor to go on after the release",
    )
    print("actor after the e-stop:", stack.diagnostics.get("/actor"))


def test_ctrl_c_stops_every_process_of_the_stack(stack):
    """Last in this module: up stops every child; nothing may be left."""
    code, left = stack.up.ctrl_c()
    text = stack.up.output()
    assert code == 130, text[-3000:]
    learner_log = (stack.run_dir / "logs" / "learner.log").read_text(errors="replace")
    assert "demos: 2 recorded episodes" in learner_log  # the MCAP demos, no scripted ones
    assert len(stack.up.descendants) >= 7  # the cell's 5 nodes, the actor and the learner
    assert left == [], f"processes left after Ctrl-C: {left}"
