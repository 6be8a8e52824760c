"""The SO-101's twin (``sim/so101_twin``) and ``so101_pick_cube``: the arm's readings in the
contract's terms in process, and the same twin behind the arm twin node, driven through ROS by
RobotEnv on the SO-101's ROS backend (its five joints, no force sensor), as ``up sim --task
so101_pick_cube`` drives it. The scripted expert's success is in ``test_arm_twin``."""

from __future__ import annotations

import numpy as np
import pytest
from process_helpers import Processes, node_command

pytest.importorskip("mujoco")

from robot_rl.drivers.arms.arm_safety import quat_angle
from robot_rl.envs.arm_geometry import down_quat
from robot_rl.envs.task import make_task
from robot_rl.sim import make_expert, make_twin_env


def test_the_twin_reads_as_the_so101_driver_does():
    env = make_twin_env(make_task("so101_pick_cube"))
    try:
        env.reset(seed=0)
        reading = env.reading
        assert reading["joint_pos"].shape == (5,) and "wrench" not in reading
        assert reading["gripper_pos"][0] == pytest.approx(0.0, abs=0.05)  # opened at reset
        assert quat_angle(reading["tcp_quat"], down_quat(0.0)) < 0.05  # the jaws point down
        env.step(np.array([0.0, 0.0, 0.0, 1.0], np.float32))  # close on nothing
        for _ in range(3):
            env.step(np.zeros(4, np.float32))
        assert env.reading["gripper_pos"][0] > 0.95
    finally:
        env.close()


def test_the_cube_held_reads_as_held_and_lifted_is_success():
    task = make_task("so101_pick_cube")
    env, expert = make_twin_env(task), make_expert(task)
    try:
        env.reset(seed=3)
        expert.reset(np.random.default_rng(3))
        for _ in range(task.max_episode_steps):
            _, _, terminated, _, info = env.step(expert.act(env.reading))
            if terminated:
                break
        assert info["success"]
        grip = env.reading["gripper_pos"][0]
        assert task.hold_grip[0] < grip < task.hold_grip[1]  # stopped on the cube
        assert info["cube_height"] >= task.lift_height
    finally:
        env.close()


@pytest.mark.parametrize("placement", [11, 12, 13])
def test_the_cell_operators_slower_hand_picks_with_its_integral(placement):
    """At the SO-101 cell operator's gain (0.4) the twin's arm stopped 6-7 mm short of the
    hover point at these placements, for good; the summed error's push takes it there."""
    task = make_task("so101_pick_cube")
    env, expert = make_twin_env(task), make_expert(task)
    expert.gain, expert.integral = 0.4, 0.1
    try:
        env.reset(seed=placement)
        expert.reset(np.random.default_rng(placement))
        for _ in range(task.max_episode_steps):
            _, _, terminated, _, info = env.step(expert.act(env.reading))
            if terminated:
                break
        assert info["success"]
    finally:
        env.close()


def _reading(tcp, cube, speed=0.0):
    return {
        "tcp_pos": np.asarray(tcp, float), "tcp_vel": np.array([speed, 0.0, 0.0, 0, 0, 0]),
        "object/cube_pos": np.asarray(cube, float), "gripper_pos": np.zeros(1),
    }  # fmt: skip


def test_the_operators_hand_descends_only_once_the_arm_is_still_over_the_cube():
    """Seen late, an arm still coasting over the cube came down beside it in the cell."""
    expert = make_expert(make_task("so101_pick_cube"))
    cube = np.array([0.2, 0.0, 0.0125])
    above = cube + np.array([0.0, 0.0, expert.hover])
    coasting = expert.act(_reading(above, cube, speed=0.1))
    assert expert._phase == "hover" and abs(coasting[2]) < 0.2  # holds its height
    down = expert.act(_reading(above, cube))
    assert expert._phase == "descend" and down[2] < -0.5


def test_a_descent_stalled_on_the_cubes_top_goes_back_up_to_line_up_again():
    """A jaw resting on the cube's top edge: the hand stopped pushing down, as a person lifts
    and lines up again (in the cell the arm sat there pressing until the episode ran out)."""
    expert = make_expert(make_task("so101_pick_cube"))
    cube = np.array([0.2, 0.0, 0.0125])
    expert.act(_reading(cube + np.array([0.0, 0.0, expert.hover]), cube))
    assert expert._phase == "descend"
    stuck = cube + np.array([0.004, 0.0, 0.016])  # 4 mm off, resting on the cube's top
    actions = [expert.act(_reading(stuck, cube)) for _ in range(expert.realign + 1)]
    assert actions[0][2] < 0 and expert._phase == "hover" and actions[-1][2] > 0


@pytest.mark.timeout(180)
def test_the_twin_node_serves_the_so101_backend(tmp_path):
    pytest.importorskip("rclpy")
    from robot_rl.envs.robot_env import RobotEnv
    from robot_rl.robot_kinds import resolve, robot_kind
    from robot_rl.ros.backend import RosBackendConfig, RosSo101Backend

    task = make_task("so101_pick_cube")
    assert resolve(robot_kind(task.robot).ros_backend) is RosSo101Backend
    nodes = Processes(tmp_path)
    nodes.command(
        "arm",
        node_command(
            "robot_rl.sim.nodes.arm_twin_node", "/arm", speedup=2.0, task=task.name,
            watchdog_timeout=0.5,
        ),
    )  # fmt: skip
    config = RosBackendConfig(max_age=1.0, slop=0.3, clock_timeout=3.0, ready_timeout=60.0)
    backend = RosSo101Backend(task, config)
    env = RobotEnv(task, backend)
    try:
        try:
            backend.wait_until_ready(timeout=90)
            env.reset(seed=0)
        except Exception:
            print(nodes["arm"].output()[-3000:])
            raise
        start = env.reading["tcp_pos"].copy()
        assert env.reading["joint_pos"].shape == (5,)
        for _ in range(4):
            env.step(np.array([0.0, 0.0, -1.0, 0.0], np.float32))  # down, 1 cm a step
        assert env.reading["tcp_pos"][2] < start[2] - 0.015
    finally:
        env.close()
        nodes.close()
