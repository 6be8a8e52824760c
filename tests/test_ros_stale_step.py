"""RobotEnv on a stale sensor (a fake backend, no ROS): truncated, holding, never a crash and
never a command from stale data; and the approximate time sync that raises it."""

import fakes
import numpy as np
import pytest

from robot_rl.envs.backend import StaleReadingError
from robot_rl.envs.robot_env import RobotEnv
from robot_rl.envs.task import make_task


def still_twin_arm():
    """A still twin arm (the task's privileged cube reading included) whose sensor can go stale."""
    return fakes.FakeArm(cube_pos=(0.5, 0.05, 0.025), simulated=True)


def test_stale_reading_truncates_holds_and_recovers():
    backend = still_twin_arm()
    env = RobotEnv(make_task("pick_cube"), backend)
    env.reset(seed=0)
    action = np.array([1.0, 0.0, 0.0, 0.0], np.float32)
    env.step(action)
    assert len(backend.sent) == 1

    backend.stale = True
    stale_obs, reward, terminated, truncated, info = env.step(action)
    assert truncated and not terminated
    assert "front_cam/image_raw" in info["stale"]
    assert np.isfinite(reward)
    assert env.observation_space.contains(stale_obs)
    sent_before = len(backend.sent)

    # while stale, steps send nothing: no command is built from the last (old) reading
    for _ in range(3):
        _, _, terminated, truncated, info = env.step(action)
        assert truncated and not terminated and "stale" in info
        np.testing.assert_array_equal(info["applied_action"], np.zeros(4))
    assert len(backend.sent) == sent_before
    assert backend.advances >= 5  # time still passes while holding

    backend.stale = False
    _, _, terminated, truncated, info = env.step(action)
    assert "stale" not in info and not terminated
    assert len(backend.sent) == sent_before + 1


def test_reset_clears_stale_state():
    backend = still_twin_arm()
    env = RobotEnv(make_task("pick_cube"), backend)
    env.reset(seed=0)
    backend.stale = True
    env.step(np.zeros(4, np.float32))
    backend.stale = False
    env.reset(seed=1)
    _, _, _, truncated, info = env.step(np.zeros(4, np.float32))
    assert "stale" not in info and not truncated


# -- approximate time sync (robot_rl.ros.sync is plain numpy) --------------------------------
def _history(topic, stamps):
    from robot_rl.ros.sync import TopicHistory

    history = TopicHistory(topic)
    for stamp in stamps:
        history.add(stamp, {topic: np.array([stamp])})
    return history


def test_sync_picks_the_entries_nearest_the_slowest_topic():
    from robot_rl.ros.sync import synchronise

    fast = _history("fast", [1.00, 1.02, 1.04, 1.06])
    slow = _history("slow", [0.97, 1.03])
    reading, reference = synchronise([fast, slow], now=1.07, max_age=0.2, slop=0.015)
    assert reference == 1.03
    assert reading["fast"][0] in (1.02, 1.04) and reading["slow"][0] == 1.03


def test_sync_names_the_stale_or_missing_topic():
    from robot_rl.ros.sync import TopicHistory, synchronise

    fast = _history("/arm/ee_pose", [2.0, 2.1])
    slow = _history("/wrist_cam/image_raw", [1.0])
    with pytest.raises(StaleReadingError, match=r"wrist_cam/image_raw.*old"):
        synchronise([fast, slow], now=2.1, max_age=0.3, slop=0.1)
    with pytest.raises(StaleReadingError, match=r"front_cam.*no message"):
        synchronise([fast, TopicHistory("/front_cam/image_raw")], now=2.1, max_age=0.3, slop=0.1)
    apart = _history("/arm/joint_states", [1.5])
    with pytest.raises(StaleReadingError, match=r"joint_states.*lags.*ee_pose"):
        synchronise([fast, apart], now=1.6, max_age=1.0, slop=0.1)


def test_sync_pairs_a_slow_camera_with_a_fast_arm():
    """A 200 Hz arm keeps samples back to a 10 Hz camera's newest frame, which may be nearly a
    period old: the reading is the camera frame with the arm's sample at its stamp."""
    from robot_rl.ros.sync import synchronise

    arm = _history("/arm/ee_pose", np.arange(0.0, 1.0, 0.005))
    camera = _history("/front_cam/image_raw", [0.7, 0.8, 0.905])
    reading, reference = synchronise([arm, camera], now=0.995, max_age=0.3, slop=0.1)
    assert reference == 0.905
    assert abs(reading["/arm/ee_pose"][0] - 0.905) < 0.005


def test_history_is_kept_by_time_not_count():
    from robot_rl.ros.sync import MAX_HISTORY, TopicHistory

    history = TopicHistory("/arm/ee_pose", window=0.5)
    for stamp in np.arange(0.0, 2.0, 0.001):
        history.add(float(stamp), {})
    stamps = [stamp for stamp, _ in history.snapshot()]
    assert stamps[-1] - stamps[0] <= 0.5 and len(stamps) <= MAX_HISTORY
    assert len(stamps) > 400  # half a second of a 1 kHz topic, not the last 8 samples


def test_staleness_bounds_follow_the_sensor_rates():
    from robot_rl.ros.sync import bounds_for_rates

    assert bounds_for_rates([100.0, 10.0]) == pytest.approx((0.3, 0.1))
    assert bounds_for_rates([200.0, 30.0]) == pytest.approx((0.3, 0.05))
    assert bounds_for_rates([5.0]) == pytest.approx((0.6, 0.2))


def test_a_hardware_file_gives_the_actor_bounds_for_its_cameras():
    """fr3_sim's 10 Hz cameras beside the 100 Hz arm: a frame 0.1 s behind the arm is in sync;
    an explicit bound (``up --max-age``) wins."""
    from robot_rl.hardware import load_hardware
    from robot_rl.ros.config import RosBackendConfig
    from robot_rl.stack import hardware_ros_config

    hardware = load_hardware("hardware/fr3_sim.yaml")
    assert sorted(hardware.sensor_rates(("front", "wrist"))) == [10.0, 10.0, 100.0]
    ros = hardware_ros_config(RosBackendConfig(), hardware, ("front", "wrist"))
    assert ros.max_age == pytest.approx(0.3) and ros.slop == pytest.approx(0.1)
    assert ros.camera_namespaces == {"front": "/front_cam", "wrist": "/wrist_cam"}
    ros = hardware_ros_config(RosBackendConfig(), hardware, ("front",), max_age=0.5, slop=0.2)
    assert (ros.max_age, ros.slop) == (0.5, 0.2)
