"""The car twin, its crash/stuck recovery, the car_lap task and its scripted expert."""

import os

import numpy as np
import pytest

pytest.importorskip("mujoco")

from robot_rl.envs.task import make_task
from robot_rl.resets.car_recovery import StuckDetector, crashed, recover, right_if_flipped
from robot_rl.sim import make_expert, make_twin_env
from robot_rl.sim.car_track import DEFAULT_TRACK, TRACK_XML
from robot_rl.sim.car_twin import MAX_SPEED, WHEEL_RADIUS, CarTwin
from robot_rl.tasks.car_lap import DEFAULT_CHECKPOINTS, checkpoints_from_lap

# The middle of the bottom straight, heading along it (+x); the outer wall is 0.7 m to the right.
START = (-2.0, -3.25, 0.0)


def drive(twin, speed, steering, steps):
    readings = []
    for _ in range(steps):
        twin.send({"speed": np.array([speed]), "steering": np.array([steering])})
        twin.advance()
        readings.append(twin.read())
    return readings


@pytest.fixture
def twin():
    twin = CarTwin()
    twin.place_car(*START)
    yield twin
    twin.close()


def test_track_xml_is_generated_from_the_track():
    assert TRACK_XML.read_text() == DEFAULT_TRACK.to_xml()


def test_driving_straight_reaches_the_commanded_speed(twin):
    reading = drive(twin, 2.0, 0.0, 20)[-1]
    forward, lateral, yaw_rate = reading["velocity"]
    assert forward == pytest.approx(2.0, abs=0.1)
    assert abs(lateral) < 0.05 and abs(yaw_rate) < 0.05
    assert reading["pose"][0] > START[0] + 2.0
    assert reading["collision"][0] == 0.0 and reading["flipped"][0] == 0.0


@pytest.mark.parametrize("steering", [0.3, -0.3])
def test_steering_turns_the_car_and_the_gyro_agrees(twin, steering):
    twin.place_car(0.0, 0.0, 0.0)  # the open floor inside the inner wall
    reading = drive(twin, 1.5, steering, 8)[-1]
    assert np.sign(reading["pose"][2]) == np.sign(steering)  # positive steering turns left
    assert np.sign(reading["velocity"][2]) == np.sign(steering)
    assert np.sign(reading["imu_gyro"][2]) == np.sign(steering)


def test_commands_are_clipped_and_non_finite_ones_refused(twin):
    twin.send({"speed": np.array([100.0]), "steering": np.array([3.0])})
    assert twin.data.ctrl[twin._drive] == pytest.approx(MAX_SPEED / WHEEL_RADIUS)
    assert np.all(np.abs(twin.data.ctrl[list(twin._steer)]) <= 0.65)
    with pytest.raises(ValueError, match="non-finite"):
        twin.send({"speed": np.array([np.nan]), "steering": np.array([0.0])})


def test_hitting_a_wall_sets_collision_and_the_stuck_detector_fires(twin):
    twin.place_car(0.0, -3.25, -np.pi / 2)  # facing the outer wall
    detector = StuckDetector(control_hz=twin.control_hz)
    readings = drive(twin, 1.5, 0.0, 25)
    assert readings[0]["collision"][0] == 0.0
    assert any(r["collision"][0] == 1.0 for r in readings)
    stuck = [detector.update(r, commanded_speed=1.5) for r in readings]
    assert stuck[-1] and not stuck[0]


def test_stuck_detector_needs_a_second_of_no_progress():
    detector = StuckDetector(control_hz=10.0)
    blocked = {"velocity": np.array([0.02, 0.0, 0.0])}
    moving = {"velocity": np.array([1.0, 0.0, 0.0])}
    assert not any(detector.update(blocked, 2.0) for _ in range(9))
    assert detector.update(blocked, 2.0)
    assert not detector.update(moving, 2.0)
    assert not any(detector.update(blocked, 0.0) for _ in range(20))  # not asked to move


def test_a_flipped_car_is_righted_where_it_lies(twin):
    twin.data.qpos[3:7] = (0.0, 1.0, 0.0, 0.0)  # upside down
    twin.data.qpos[2] = 0.1
    reading = twin.read()
    assert reading["flipped"][0] == 1.0 and crashed(reading)
    righted = right_if_flipped(twin, reading)
    assert righted["flipped"][0] == 0.0
    assert np.allclose(righted["pose"][:2], reading["pose"][:2])


def test_recovery_backs_away_from_the_wall_and_resumes(twin):
    twin.place_car(0.0, -3.25, -np.pi / 2)
    readings = drive(twin, 1.5, 0.0, 15)
    assert any(crashed(r) for r in readings)  # the impact (the IMU spike), not the wedge after
    wall_y = readings[-1]["pose"][1]

    seen = []
    read = twin.read
    twin.read = lambda: seen.append(read()) or seen[-1]
    result = recover(twin, lambda r: np.array([1.5, -3.25]), np.random.default_rng(0), True)
    twin.read = read
    assert result["clear"]
    assert min(r["velocity"][0] for r in seen) < -0.5  # it reversed
    assert seen[-1]["velocity"][0] > 0.2  # and drives on again
    assert seen[-1]["pose"][1] > wall_y + 0.2
    assert not crashed(seen[-1])


def test_checkpoints_are_sampled_along_a_recorded_lap():
    angles = np.linspace(0, 2 * np.pi, 400)
    lap = np.stack([2 * np.cos(angles), 2 * np.sin(angles), angles + np.pi / 2], axis=1)
    points = checkpoints_from_lap(lap, spacing=1.0)
    assert len(points) in (12, 13)  # circumference 12.57 m
    assert np.allclose(np.linalg.norm(points, axis=1), 2.0, atol=0.01)
    gaps = np.linalg.norm(np.diff(points, axis=0), axis=1)
    assert np.allclose(gaps[:11], 2 * 2 * np.sin(0.5 / 2), atol=0.01)  # chords of 1 m arcs
    with pytest.raises(ValueError):
        checkpoints_from_lap(lap[:1], 1.0)


def test_default_checkpoints_come_from_the_slow_demonstration_lap():
    from robot_rl.sim.experts.car_lap import record_demo_lap

    lap = record_demo_lap(make_task("car_lap"))
    assert np.abs(lap[:, 0]).max() < 4.8  # stayed in the corridor
    points = checkpoints_from_lap(lap, spacing=1.5)
    # the shipped ones were recorded by record-lap through the twin's ROS 2 node, from the
    # car's own odometry and a simulated person's gamepad lag: close to, not equal to, these
    assert len(points) == len(DEFAULT_CHECKPOINTS)
    np.testing.assert_allclose(points, np.array(DEFAULT_CHECKPOINTS), atol=0.35)


def test_twin_env_runs_with_the_documented_spaces_and_info():
    env = make_twin_env(make_task("car_lap"))
    try:
        obs, _ = env.reset(seed=0)
        assert obs["state"].shape == (13,) and obs["state"].dtype == np.float32
        expert, total = make_expert(env.task), 0.0
        for _ in range(20):
            action = expert.act(env.reading)
            obs, reward, terminated, _, info = env.step(action)
            total += reward
        assert not terminated and total > 2.0  # progress towards the checkpoints
        assert {"laps", "lap_time", "checkpoints_reached", "crashes", "recoveries"} <= set(info)
        assert info["checkpoints_reached"] >= 2
        assert obs["state"][0] == pytest.approx(env.reading["velocity"][0])
        np.testing.assert_allclose(obs["state"][11:], action)  # the last applied action
    finally:
        env.close()


def test_a_crash_terminates_with_a_penalty_and_the_next_reset_recovers():
    env = make_twin_env(make_task("car_lap"))
    try:
        env.reset(seed=1)
        for _ in range(60):
            _, reward, terminated, truncated, info = env.step(np.array([1.0, -1.0], np.float32))
            if terminated or truncated:
                break
        assert terminated and reward < -1.0 and info["crashes"] == 1
        env.reset()
        assert not crashed(env.reading)
        _, _, _, _, info = env.step(np.array([-0.5, 0.0], np.float32))
        assert info["recoveries"] == 1
    finally:
        env.close()


def test_expert_completes_laps_in_at_least_95_percent_of_episodes():
    # 150 steps (15 s) leave room for one lap (~9 s) from wherever the episode starts.
    env = make_twin_env(make_task("car_lap", max_episode_steps=150))
    expert = make_expert(env.task)
    successes = 0
    try:
        for episode in range(20):
            env.reset(seed=episode)
            expert.reset(np.random.default_rng(episode))
            while True:
                _, _, terminated, truncated, info = env.step(expert.act(env.reading))
                successes += info["success"]
                if info["success"] or terminated or truncated:
                    break
    finally:
        env.close()
    assert successes >= 19


@pytest.mark.skipif(os.environ.get("MUJOCO_GL") != "egl", reason="needs MUJOCO_GL=egl")
@pytest.mark.parametrize("size", [32, 64])
def test_camera_renders_changing_images_of_the_requested_size(size):
    env = make_twin_env(make_task("car_lap", cameras=("front",), image_size=size))
    try:
        obs, _ = env.reset(seed=0)
        frames = [obs["front"]]
        for _ in range(5):
            obs, *_ = env.step(np.array([0.5, 0.3], np.float32))
            frames.append(obs["front"])
    finally:
        env.close()
    assert frames[0].shape == (size, size, 3) and frames[0].dtype == np.uint8
    assert frames[0].std() > 5.0
    assert np.abs(frames[-1].astype(int) - frames[0]).mean() > 1.0  # the view moves
