"""The robot backend's control tick on camera frames (RosBackendConfig.frame_paced), the age of
the newest frame each policy command leaves with, and the actor's control-loop figures."""

import os
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from robot_rl.runtime.loop_timing import ControlLoopTiming, summary_line

rclpy = pytest.importorskip("rclpy")


@pytest.fixture
def camera_publisher():
    """A node publishing /front_cam/image_raw frames on demand, stamped with the wall time."""
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import Image

    from robot_rl.ros.convert import array_to_image
    from robot_rl.ros.qos import sensor_qos

    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node("fake_front_camera", context=context)
    publisher = node.create_publisher(Image, "/front_cam/image_raw", sensor_qos())
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()

    def publish() -> float:
        stamp = time.time()
        publisher.publish(array_to_image(np.zeros((8, 8, 3), np.uint8), "rgb8", stamp, "front"))
        return stamp

    yield SimpleNamespace(publish=publish, node=node)
    executor.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=context)


def _backend(frame_paced: bool = True):
    from robot_rl.ros.backend import RosRobotBackend
    from robot_rl.ros.config import RosBackendConfig

    task = SimpleNamespace(robot="arm", control_hz=10.0, cameras=("front",), image_size=8)
    config = RosBackendConfig(use_sim_time=False, max_age=5.0, frame_paced=frame_paced)
    return RosRobotBackend(task, config, "/arm")


def _deliver(backend, camera, timeout: float = 60.0) -> float:
    """Publish a new frame until the backend has it (discovery may drop the first ones);
    returns its stamp."""
    deadline = time.monotonic() + timeout
    while True:
        stamp = camera.publish()
        wait_until = time.monotonic() + 0.5
        while time.monotonic() < wait_until:
            if backend._camera_histories[0].newest() == pytest.approx(stamp, abs=1e-6):
                return stamp
            time.sleep(0.01)
        assert time.monotonic() < deadline, "the backend never received a frame"


def test_a_tick_sees_the_newest_frame_and_a_command_records_its_age(camera_publisher):
    backend = _backend()
    try:
        first = _deliver(backend, camera_publisher)
        backend.advance()
        backend.read()
        assert backend.frame_stamp == pytest.approx(first, abs=1e-6)
        assert not backend._new_frames()  # nothing newer than at this tick yet

        second = _deliver(backend, camera_publisher)
        assert backend._new_frames()
        backend.advance()
        backend.read()
        assert backend.frame_stamp == pytest.approx(second, abs=1e-6)

        backend._note_command(second + 0.02)
        assert list(backend.frame_to_command) == [pytest.approx(0.02, abs=1e-6)]
    finally:
        backend.close()


def test_a_silent_camera_does_not_hold_the_tick_and_shows_up_as_stale(camera_publisher):
    from robot_rl.envs.backend import StaleReadingError

    backend = _backend()
    try:
        _deliver(backend, camera_publisher)
        backend.advance()
        for _ in range(3):  # no new frame: each tick still comes (bounded by its window)
            backend.advance()
        backend.config = type(backend.config)(use_sim_time=False, max_age=0.05)
        time.sleep(0.1)
        with pytest.raises(StaleReadingError, match="front_cam/image_raw"):
            backend.read()
    finally:
        backend.close()


def test_the_loop_figures_leave_resets_out_and_count_late_periods():
    timing = ControlLoopTiming(control_hz=10.0)
    for start in (0.0, 0.1, 0.2, 0.35):  # one late period (150 ms)
        timing.step_started(start)
    timing.episode_ended()  # a reset follows: no period to the next step
    timing.step_started(5.0)
    timing.step_started(5.1)
    timing.inferred(0.004)
    summary = timing.summary(frame_to_command=[0.01, 0.03])
    assert summary["period_ms"]["n"] == 4
    assert summary["period_ms"]["max"] == pytest.approx(150.0)
    assert summary["late_share"] == pytest.approx(0.25)
    assert summary["inference_ms"]["p50"] == pytest.approx(4.0)
    assert summary["frame_to_command_ms"]["n"] == 2
    assert summary["frame_to_command_ms"]["max"] == pytest.approx(30.0)
    line = summary_line(summary)
    assert line.startswith("control loop: period p50 100.0 / p99")
    assert "(25% over 1.1x the task's)" in line and "newest frame to command p50 20.0" in line
