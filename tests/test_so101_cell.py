"""The simulated SO-101 cell (``hardware/so101_sim.yaml``, issue 32 point 3): the SO-101 twin's
world behind the servo bus peer on a pty. Without ROS: the driver's own bus thread
(``so101_link``) moves the world's arm, and the world's ground truth (TCP, cube, success) agrees
with what the driver reads. With ROS, as an SO-101 owner types it: ``record-demos --hardware``
brings up the cell and the real SO-101 node, the cell's operator demonstrates on the gamepad's
topics, and the demos are the robot's (cameras and proprioception, no cube pose), each ending
on the operator's success press.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("scservo_sdk", reason="needs feetech-servo-sdk (robot-rl[hardware])")
pytest.importorskip("mujoco")

from robot_rl.drivers.arms.configs import So101Config
from robot_rl.drivers.arms.so101_link import LinkSettings, So101Link
from robot_rl.sim.cells.processes import wait_for

WAIT = 30.0


@pytest.fixture
def cell(tmp_path):
    from robot_rl.sim.cells.so101_world import So101CellWorld

    world = So101CellWorld(tmp_path / "bus", "so101_pick_cube", seed=3)
    world.start()
    config = So101Config(port=str(world.port), state_hz=50.0, reconnect_period=0.2)
    link = So101Link(
        LinkSettings.of(config, world.arm.motors), lambda reading: None, lambda *_: None
    )
    link.connect()
    link.start()
    link.enable(True)
    yield world, link
    link.close()
    world.close()


def test_the_driver_moves_the_worlds_arm_and_both_see_the_same_tcp(cell):
    world, link = cell
    wait_for(lambda: link.last is not None, WAIT, "the driver's first reading")
    target = np.array([0.2, 0.03, 0.08])
    # within 1 cm: the servos rest a few millimetres below their goals under the arm's weight
    # until the node's sag estimate (updated only while every joint rests) catches up; on a
    # loaded CI machine the arm once ended 6.1 mm off after the whole wait
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        link.command_pose(target, link.last.tcp_quat)
        time.sleep(0.05)
        if np.linalg.norm(link.last.tcp_pos - target) < 0.005:
            break
    assert np.linalg.norm(link.last.tcp_pos - target) < 0.01, link.last.tcp_pos
    # compare at rest: while the arm still moves, the driver's last reading (50 Hz) and the
    # world's TCP now are taken at different instants (5.7 mm apart once on a loaded machine)
    resting = lambda: np.max(np.abs(link.last.velocities)) < 0.02
    wait_for(resting, WAIT, "the arm at rest at its target")
    rested = link.last.stamp
    wait_for(lambda: link.last.stamp > rested + 0.1, WAIT, "a reading taken at rest")
    truth = world.read_now()
    tcp = world.arm.data.site_xpos[world.arm.model.site("tcp").id]
    # the driver's forward kinematics of the servos' ticks is where the world's TCP is
    assert np.linalg.norm(tcp - link.last.tcp_pos) < 0.005
    assert not truth.success and world.realtime_factor > 0.3
    assert len(world.peer.goal_writes) > 0 and world.peer.bad_packets == 0


def test_commands_to_stay_where_the_arm_is_do_not_let_it_creep_down(cell):
    """The task's steps are relative to the measured TCP. A position servo rests a little below
    its goal under the arm's weight; were each goal where the arm was measured, the arm would
    sink by that sag at every command (it did: about 2.5 mm per 0.1 s step in this cell)."""
    _, link = cell
    resting = lambda: link.last is not None and np.max(np.abs(link.last.velocities)) < 0.05
    wait_for(resting, WAIT, "the arm at rest (it settles on its servos at power-up)")
    start = link.last.tcp_pos.copy()
    after_a_second = None
    for step in range(60):  # 6 s of "stay" at the task's 10 Hz
        link.command_pose(link.last.tcp_pos, link.last.tcp_quat)
        time.sleep(0.1)
        if step == 9:  # the sag estimate has settled
            after_a_second = link.last.tcp_pos.copy()
    # the first commands sink by what is not yet estimated (about 1 cm); then it wanders by
    # millimetres (each command re-reads a sagging, jittering arm), uncompensated it sank
    # about 2.5 mm per command until the table stopped it
    assert np.linalg.norm(link.last.tcp_pos - after_a_second) < 0.015
    assert np.linalg.norm(link.last.tcp_pos - start) < 0.03
    assert np.all(np.abs(link.sag) <= 0.04)  # the compensation is bounded


def test_a_reset_from_a_low_arm_reaches_its_joints_on_the_first_try(cell):
    """The reset ramps its goals from where it began to the reset joints; stepping each goal
    from the measured joints left a sagging shoulder short of them (refused, then retried)."""
    from robot_rl.sim.so101_twin import HOME_JOINTS

    _, link = cell
    wait_for(lambda: link.last is not None, WAIT, "the driver's first reading")
    low = np.array([0.15, 0.0, 0.03])
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and np.linalg.norm(link.last.tcp_pos - low) > 0.01:
        link.command_pose(low, link.last.tcp_quat)
        time.sleep(0.05)
    results = []
    link.reset(HOME_JOINTS, 0.5, 10.0, lambda ok, message: results.append((ok, message)))
    wait_for(lambda: results, 20.0, "the reset to finish")
    assert results[0][0], results
    assert np.max(np.abs(link.last.joints - HOME_JOINTS)) < 0.03


def test_a_reset_of_the_objects_puts_the_cube_where_the_task_starts_it(cell):
    world, _ = cell
    task = world.task
    for _ in range(5):
        placed = world.reset_objects()
        assert np.all(np.abs(placed[:2] - np.asarray(task.reset_pos[:2])) <= task.cube_region)
        time.sleep(0.2)  # the cube settles on the table at the wall clock's pace
        truth = world.read_now()
        assert np.linalg.norm(truth.cube_pos[:2] - placed[:2]) < 0.005
        assert abs(truth.cube_pos[2] - task.cube_half) < 0.003
        assert not truth.success
    assert world.placements == 6  # the start's and five


def test_an_so101_task_is_required():
    from robot_rl.sim.cells.so101_world import So101CellWorld

    with pytest.raises(ValueError, match="not an SO-101 task"):
        So101CellWorld("/tmp/unused_bus", "pick_cube")


@pytest.mark.timeout(900)
def test_record_demos_in_the_so101_cell_keeps_the_operators_demonstrations(tmp_path):
    pytest.importorskip("rclpy")
    from process_helpers import ROBOT_RL, Proc

    from robot_rl.data.mcap_demos import demo_files, read_episode
    from robot_rl.hardware import find_hardware

    source = find_hardware("so101_sim").read_text()
    assert "mode: correct" in source and "/tmp/robot_rl_so101_sim/bus" in source
    hardware = tmp_path / "so101_demonstrate.yaml"
    hardware.write_text(
        source.replace("mode: correct", "mode: demonstrate").replace(
            "/tmp/robot_rl_so101_sim/bus", str(tmp_path / "bus")
        )
    )
    out = tmp_path / "demos"
    args = ["--hardware", str(hardware), "--task", "so101_pick_cube", "--cameras", "front", "wrist"]
    # the cameras render on this CPU beside everything a test run starts: widen the staleness
    # bound as test_record_on_robot_cell does (the bound has tests of its own)
    loaded = ["--ros.max-age", "0.6"]
    proc = Proc(
        [*ROBOT_RL, "record-demos", *args, "--episodes", "2", "--out", str(out), *loaded],
        tmp_path / "record-demos.log",
    )
    try:
        code = proc.wait_exit(800)
    finally:
        proc.stop()
    text = proc.output()
    print(text[-2000:])
    assert code == 0, text[-3000:]
    assert "drivers active" in text and "drivers stopped" in text
    files = demo_files(out)
    assert [f.name for f in files] == ["episode_000.mcap", "episode_001.mcap"]
    for file in files:
        episode = read_episode(file).episode
        first = episode.observations[0]
        assert first["front"].shape == first["wrist"].shape == (64, 64, 3)
        assert first["state"].shape == (7,)  # the robot's: no cube pose
        assert episode.terminated[-1] and episode.rewards[-1] == 1.0  # the success press
        assert episode.info["judge"] == "joy" and episode.info["source"] == "teleop"
