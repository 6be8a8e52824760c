"""The arm twins (the Franka-like arm and the SO-101: controller, hard limits, sensors, cameras),
the arm tasks and their experts."""

import os

import numpy as np
import pytest

pytest.importorskip("mujoco")

from robot_rl.envs.arm_geometry import down_quat
from robot_rl.envs.task import make_task
from robot_rl.sim import make_expert, make_twin_env
from robot_rl.sim.arm_scenes import build_scene
from robot_rl.sim.arm_twin import MAX_STEP, WORKSPACE_HIGH, WORKSPACE_LOW, ArmTwin


@pytest.fixture
def arm():
    twin = ArmTwin(build_scene("empty"))
    yield twin
    twin.close()


def drive(twin, target, periods, **command):
    for _ in range(periods):
        twin.send({"tcp_pos": np.asarray(target, float), "tcp_quat": down_quat(0.3), **command})
        twin.advance()
    return twin.read()


def test_controller_tracks_a_commanded_pose(arm):
    for target in ([0.5, 0.1, 0.2], [0.4, -0.15, 0.1], [0.6, 0.0, 0.3]):
        reading = drive(arm, target, 20)
        assert np.linalg.norm(reading["tcp_pos"] - target) < 0.01
        # the commanded heading is reached too: same orientation up to the quaternion sign
        assert abs(np.dot(reading["tcp_quat"], down_quat(0.3))) > 0.999
        assert np.linalg.norm(reading["tcp_vel"]) < 0.05


def test_targets_are_clipped_to_the_workspace_and_the_step_limit(arm):
    start = arm.read()["tcp_pos"]
    after_one = drive(arm, [2.0, 0.0, 0.2], 1)["tcp_pos"]
    assert np.linalg.norm(after_one - start) <= MAX_STEP + 0.005
    settled = drive(arm, [0.5, 0.0, 5.0], 40)["tcp_pos"]
    assert settled[2] == pytest.approx(WORKSPACE_HIGH[2], abs=0.01)
    settled = drive(arm, [0.5, -2.0, 0.2], 40)["tcp_pos"]
    assert settled[1] >= WORKSPACE_LOW[1] - 0.01


@pytest.mark.parametrize(
    "command",
    [
        {"tcp_pos": np.array([0.5, np.nan, 0.2])},
        {"tcp_pos": np.array([0.5, 0.0, 0.2]), "tcp_quat": np.array([np.inf, 0, 0, 0])},
        {"tcp_pos": np.array([0.5, 0.0, 0.2]), "gripper": np.array([np.nan])},
    ],
)
def test_non_finite_commands_are_refused(arm, command):
    before = arm.read()["tcp_pos"]
    with pytest.raises(ValueError, match="non-finite"):
        arm.send(command)
    arm.advance()
    assert np.linalg.norm(arm.read()["tcp_pos"] - before) < 1e-3


def test_wrench_changes_when_the_gripper_presses_on_the_table(arm):
    free = drive(arm, [0.5, 0.0, 0.05], 15, gripper=np.array([1.0]))["wrench"]
    # the finger tips reach 1 cm below the TCP: a TCP target under the table presses them on it
    pressing = drive(arm, [0.5, 0.0, -0.03], 15, gripper=np.array([1.0]))["wrench"]
    assert np.linalg.norm(pressing[:3] - free[:3]) > 5.0


def test_gripper_reading_follows_the_command(arm):
    assert drive(arm, [0.5, 0.0, 0.2], 5, gripper=np.array([1.0]))["gripper_pos"][0] > 0.95
    assert drive(arm, [0.5, 0.0, 0.2], 5, gripper=np.array([0.0]))["gripper_pos"][0] < 0.05
    # no gripper entry: the gripper keeps its last command
    assert drive(arm, [0.5, 0.0, 0.2], 5)["gripper_pos"][0] < 0.05


@pytest.mark.skipif(
    os.environ.get("MUJOCO_GL") != "egl", reason="headless rendering needs MUJOCO_GL=egl"
)
@pytest.mark.parametrize("task_name", ["pick_cube", "peg_insert", "so101_pick_cube"])
def test_cameras_render_distinct_images_of_the_requested_size(task_name):
    try:
        env = make_twin_env(make_task(task_name, cameras=("front", "wrist"), image_size=48))
    except Exception as error:  # no EGL device on this machine
        pytest.skip(f"EGL rendering unavailable: {error}")
    try:
        obs, _ = env.reset(seed=0)
        for camera in ("front", "wrist"):
            assert obs[camera].shape == (48, 48, 3) and obs[camera].dtype == np.uint8
            assert obs[camera].std() > 5.0
        assert not np.array_equal(obs["front"], obs["wrist"])
        moved, *_ = env.step(np.array([1.0, 1.0, 0.0, 0.0], np.float32))
        assert not np.array_equal(moved["wrist"], obs["wrist"])
        assert not np.shares_memory(moved["wrist"], obs["wrist"])
    finally:
        env.close()


def test_state_only_twin_renders_nothing():
    env = make_twin_env(make_task("pick_cube"))
    env.reset(seed=0)
    assert env.backend._renderer is None
    assert not any(key.startswith("image/") for key in env.reading)
    env.close()


@pytest.mark.parametrize("task_name", ["pick_cube", "peg_insert", "so101_pick_cube"])
def test_scripted_expert_succeeds(task_name):
    task = make_task(task_name)
    env = make_twin_env(task)
    expert = make_expert(task)
    successes = 0
    for episode in range(20):
        env.reset(seed=1000 + episode)
        expert.reset(np.random.default_rng(episode))
        for _ in range(task.max_episode_steps):
            _, _, terminated, truncated, info = env.step(expert.act(env.reading))
            if terminated or truncated:
                break
        successes += info["success"]
    env.close()
    assert successes >= 19, f"{successes}/20"


def test_success_terminates_with_sparse_reward():
    task = make_task("pick_cube", reward_type="sparse")
    env = make_twin_env(task)
    expert = make_expert(task)
    env.reset(seed=5)
    expert.reset(np.random.default_rng(5))
    rewards = []
    for _ in range(task.max_episode_steps):
        _, reward, terminated, truncated, info = env.step(expert.act(env.reading))
        rewards.append(reward)
        if terminated or truncated:
            break
    env.close()
    assert terminated and not truncated and info["success"]
    assert rewards[-1] == 1.0 and set(rewards[:-1]) <= {0.0}


@pytest.mark.parametrize("task_name", ["pick_cube", "peg_insert", "so101_pick_cube"])
def test_time_limit_truncates(task_name):
    env = make_twin_env(make_task(task_name, max_episode_steps=5))
    env.reset(seed=0)
    for step in range(5):
        _, reward, terminated, truncated, _ = env.step(np.zeros(4, np.float32))
        # dense shaping of a task that ends on success is a cost in [-1, 0]
        assert np.isfinite(reward) and -1.0 <= reward <= 0.0
        assert not terminated
        assert truncated == (step == 4)
    env.close()


def test_applied_action_reports_safety_clipping():
    task = make_task("pick_cube")
    reading = {"tcp_pos": np.array([0.69, 0.0, 0.1])}
    command, applied = task.to_command(np.array([1.0, 0.2, 0.0, 0.1], np.float32), reading)
    assert command["tcp_pos"][0] == pytest.approx(task.safety_high[0])
    assert applied[0] == pytest.approx(0.5) and applied[1] == pytest.approx(0.2)
    assert applied[3] == 0.0 and "gripper" not in command
    command, applied = task.to_command(np.array([0, 0, 0, -0.9], np.float32), reading)
    assert applied[3] == -1.0 and command["gripper"][0] == 0.0


def test_peg_insert_keeps_the_gripper_closed_and_limits_yaw():
    task = make_task("peg_insert")
    reading = {"tcp_pos": np.array([0.5, 0.0, 0.1]), "tcp_quat": down_quat(task.yaw_limit - 0.05)}
    command, applied = task.to_command(np.array([0, 0, 0, 1.0], np.float32), reading)
    assert command["gripper"][0] == 1.0
    assert applied[3] == pytest.approx(0.5, abs=1e-4)
