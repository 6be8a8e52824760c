"""The car's autonomous recovery as a reusable module: on any CarBackend (a fake real car here,
no MuJoCo) and from a RobotEnv outside car_lap's own reset."""

import numpy as np
import pytest
from fakes import FakeCar

from robot_rl.envs.backend import CarBackend
from robot_rl.resets.car_recovery import crashed, recover


def drive_into_the_wall(car):
    readings = []
    for _ in range(20):
        car.send({"speed": np.array([1.0]), "steering": np.array([0.0])})
        car.advance()
        readings.append(car.read())
    assert any(crashed(r) for r in readings)  # the IMU felt the impact


def test_the_fake_car_satisfies_the_backend_contract():
    assert isinstance(FakeCar(), CarBackend)


def test_recovery_backs_a_generic_car_off_the_wall_and_drives_on():
    car = FakeCar(y=0.3, yaw=np.pi / 2)  # facing the wall
    drive_into_the_wall(car)
    stuck_y = car.pose[1]
    car.commands.clear()
    target = np.array([3.0, 0.4])
    result = recover(car, lambda reading: target, np.random.default_rng(0), back_up=True)
    assert result == {"attempts": 1, "clear": True}
    assert car.commands[0][0] < 0  # it reversed first
    assert car.commands[-1][0] > 0  # and ended driving on towards the target
    reading = car.read()
    assert not crashed(reading) and reading["pose"][1] < stuck_y - 0.1
    heading = np.array([np.cos(reading["pose"][2]), np.sin(reading["pose"][2])])
    assert np.dot(heading, target - reading["pose"][:2]) > 0  # the target is ahead now


def test_recovery_waits_stopped_while_a_person_rights_a_flipped_car():
    car = FakeCar(flipped_periods=5)
    result = recover(car, lambda reading: np.array([2.0, 0.0]), np.random.default_rng(1), False)
    assert result["clear"]
    assert car.commands[:5] == [(0.0, 0.0)] * 5  # held stopped while flipped, never driven


def test_recovery_from_a_robot_env_outside_car_lap_reset():
    pytest.importorskip("mujoco")
    from robot_rl.envs.task import make_task
    from robot_rl.sim import make_twin_env

    env = make_twin_env(make_task("car_lap"))
    try:
        env.reset(seed=0)
        env.backend.place_car(0.0, -3.25, -np.pi / 2)  # facing the outer wall
        obs, _ = env.start_in_place()
        for _ in range(30):
            obs, _, terminated, _, info = env.step(np.array([-0.2, 0.0], np.float32))
            if terminated:
                break
        assert terminated and info["crashes"] >= 1
        # a caller's own recovery (say, a wrapper mid-episode): the backend is all it needs
        lap = env.task._lap
        target = env.task.checkpoint_array[lap.target]
        result = recover(env.backend, lambda reading: target, np.random.default_rng(0), True)
        assert result["clear"] and not crashed(env.backend.read())
        obs, _ = env.start_in_place()  # the episode goes on from where recovery left the car
        assert env.observation_space.contains(obs)
        _, _, terminated, _, _ = env.step(np.array([-0.5, 0.0], np.float32))
        assert not terminated
    finally:
        env.close()
