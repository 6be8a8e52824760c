"""Crashes and getting stuck from the car's own sensors: an IMU spike, commanded against measured
speed. The twin's contact flag (/sim/collision) is ground truth for evaluation only: the car's
ROS backend does not subscribe to it, and the recovery runs on that backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robot_rl.resets.car_recovery import IMPACT_ACCEL, StuckDetector, crashed, impact, recover

ROOT = Path(__file__).resolve().parents[1]
FORWARD = {"speed": np.array([1.5]), "steering": np.array([0.0])}


def _reading(accel_xy=(0.0, 0.0), flipped=0.0, peak=None):
    accel = np.array([*accel_xy, 9.81])
    reading = {"imu_accel": accel, "flipped": np.array([flipped]), "velocity": np.zeros(3)}
    if peak is not None:
        reading["imu_accel_peak"] = np.array([*peak, 9.81])
    return reading


def test_a_crash_is_an_imu_spike_or_a_flip_and_nothing_else():
    assert not crashed(_reading())
    assert not crashed(_reading(accel_xy=(4.0, 3.0)))  # hard cornering
    assert crashed(_reading(peak=(-IMPACT_ACCEL - 1, 0.0)))  # the period's peak: an impact
    assert crashed(_reading(accel_xy=(0.0, 60.0)))  # a backend without a peak: the sample
    assert crashed(_reading(flipped=1.0))
    # the twin's contact flag alone is not a crash: the car has no such sensor
    assert not crashed({**_reading(), "collision": np.array([1.0])})


def test_the_twin_imu_separates_driving_from_hitting_a_wall():
    pytest.importorskip("mujoco")
    from robot_rl.sim.car_track import DEFAULT_TRACK, centreline
    from robot_rl.sim.car_twin import CarTwin
    from robot_rl.sim.experts.car_lap import CarLapExpert
    from robot_rl.tasks.car_lap import CarLapTask

    task, twin = CarLapTask(), CarTwin()
    expert, line = CarLapExpert(task), centreline(DEFAULT_TRACK)
    try:
        twin.place_car(float(line.points[0][0]), float(line.points[0][1]), 0.0)
        reading = twin.read()
        for _ in range(200):  # two racing laps: no contact, no crash
            command, _ = task.to_command(expert.act(reading), reading)
            twin.send(command)
            twin.advance()
            reading = twin.read()
            assert reading["collision"][0] == 0.0 and not crashed(reading)
        for speed in (0.8, 1.5, 3.0):  # head-on into the outer wall: the IMU feels each hit
            twin.place_car(0.0, -3.25, -np.pi / 2)
            readings = []
            for _ in range(15):
                twin.send({"speed": np.array([speed]), "steering": np.array([0.0])})
                twin.advance()
                readings.append(twin.read())
            hits = [k for k, r in enumerate(readings) if impact(r)]
            contacts = [k for k, r in enumerate(readings) if r["collision"][0] > 0.5]
            assert hits and contacts and abs(hits[0] - contacts[0]) <= 1, speed
    finally:
        twin.close()


def test_a_car_wedged_without_an_impact_is_stuck():
    pytest.importorskip("mujoco")
    from robot_rl.sim.car_twin import CarTwin

    twin = CarTwin()
    try:
        twin.place_car(0.0, -3.25, -np.pi / 2)
        while twin.read()["collision"][0] < 0.5:  # creep up to the wall: no spike
            twin.send({"speed": np.array([0.2]), "steering": np.array([0.0])})
            twin.advance()
            assert not crashed(twin.read())
        detector = StuckDetector(control_hz=twin.control_hz)
        fired = []
        for _ in range(12):  # then push: commanded forward, the odometry says no motion
            twin.send({"speed": np.array([1.0]), "steering": np.array([0.0])})
            twin.advance()
            reading = twin.read()
            fired.append(detector.update(reading, commanded_speed=1.0))
        assert not crashed(reading)
        assert fired[-1] and not fired[0] and fired.index(True) >= 9  # after about a second
    finally:
        twin.close()


@pytest.mark.timeout(120)
def test_the_car_backend_detects_a_wall_hit_without_sim_topics_and_recovers(tmp_path):
    pytest.importorskip("rclpy")
    pytest.importorskip("mujoco")
    import rclpy
    from rclpy.context import Context
    from ros_helpers import Spinner

    from robot_rl.envs.task import make_task
    from robot_rl.ros.backend import RosBackendConfig, RosCarBackend
    from robot_rl.sim.nodes.car_twin_node import CarTwinNode

    context = Context()
    rclpy.init(context=context, args=["--ros-args", "-p", "speedup:=2.0", "-r", "__ns:=/car"])
    node = CarTwinNode(context=context)
    assert node.start()
    node.twin.place_car(0.0, -3.25, -np.pi / 2)  # facing the outer wall, 0.5 m from it
    node._publish_all()
    spinner = Spinner(node, context)
    task = make_task("car_lap")
    config = RosBackendConfig(max_age=1.0, slop=0.3, clock_timeout=5.0, ready_timeout=30.0)
    backend = RosCarBackend(task, config)
    try:
        topics = sorted(s.topic_name for s in backend.node.subscriptions)
        assert "/car/odom" in topics and "/car/imu" in topics
        assert [t for t in topics if t.startswith("/sim/")] == []
        backend.wait_until_ready()
        readings = []
        for _ in range(15):
            backend.send(FORWARD)
            backend.advance()
            readings.append(backend.read())
        assert all("collision" not in r for r in readings)
        assert any(crashed(r) for r in readings)  # the IMU's spike, through /car/imu
        # the recovery runs on this backend, over cmd_vel: no placing, nothing from /sim/
        assert not backend.is_simulated
        wall = readings[-1]["odom_pose"].copy()
        target = np.array([1.5, -3.25])
        result = recover(backend, lambda reading: target, np.random.default_rng(0), True)
        after = backend.read()
        assert result["clear"]
        assert after["odom_pose"][1] > wall[1] + 0.2  # backed away from the wall
        assert after["velocity"][0] > 0.1  # and rolls on
    finally:
        backend.send({"speed": np.array([0.0]), "steering": np.array([0.0])})
        backend.close()
        spinner.close()


def test_evaluation_in_the_twin_may_read_the_contact_flag():
    pytest.importorskip("rclpy")
    from robot_rl.envs.task import make_task
    from robot_rl.ros.backend import RosCarBackend

    backend = RosCarBackend(make_task("car_lap"), twin_collision=True)
    try:
        assert "/sim/collision" in [s.topic_name for s in backend.node.subscriptions]
    finally:
        backend.close()


def test_the_actor_of_a_robot_car_stack_subscribes_to_no_sim_topic(tmp_path):
    pytest.importorskip("rclpy")

    from robot_rl.envs.task import make_task
    from robot_rl.hardware import load_hardware
    from robot_rl.ros.actor_node import parse_actor_args, split_ros_args
    from robot_rl.ros.backend import make_ros_backend
    from robot_rl.stack import StackConfig, actor_process

    hardware = ROOT / "hardware" / "fastrlap_car.yaml"
    robot = StackConfig(
        task="car_lap",
        mode="robot",
        hardware=str(hardware),
        cameras=("front",),
        run_dir=str(tmp_path),
    )
    actor = actor_process(robot, load_hardware(hardware))
    assert actor.config.robot_mode
    actor.write_config()  # what up and the launch files do before it starts
    own, _ = split_ros_args(list(actor.arguments))
    cfg = parse_actor_args(own)
    backend = make_ros_backend(make_task(cfg.task, **cfg.task_options(cfg.task)), cfg.ros)
    try:
        topics = sorted(s.topic_name for s in backend.node.subscriptions)
    finally:
        backend.close()
    assert any(t.endswith("odom") for t in topics) and any(t.endswith("imu") for t in topics)
    assert any(t.endswith("image_raw") for t in topics)
    assert [t for t in topics if t.startswith("/sim/")] == []
