"""Issue 27, the two VESC cases, through the real pty peer (``sim/cells/vesc_peer.py``): a framed
COMM_GET_IMU_DATA answer with a valid CRC and no floats while cmd_vel asks 1 m/s stops the
motor, is an ERROR on /diagnostics and the link recovers (odometry resumes); one NaN yaw rate
is refused before it reaches the odometry, counted, and odometry goes on. And the watchdog
lives outside the thread it guards: a link thread that hangs still gets its motor zeroed."""

from __future__ import annotations

import math
import struct
import threading

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("serial")

from process_helpers import wait_for
from test_vesc_driver import Car, forward, keep_driving

from robot_rl.drivers.car import vesc_protocol as proto
from robot_rl.sim.cells.vesc_peer import VescPeer

G = proto.STANDARD_GRAVITY


@pytest.fixture
def rig(tmp_path):
    peer = VescPeer(tmp_path / "vesc").start()
    car = Car(str(peer.link))
    try:
        yield peer, car
    finally:
        car.close()
        peer.close()


def _zero_since(peer, start: int) -> bool:
    return any(kind == "rpm" and value == 0.0 for kind, value in peer.commands[start:])


def _pose_finite(odom) -> bool:
    p, q = odom.pose.pose.position, odom.pose.pose.orientation
    return all(math.isfinite(v) for v in (p.x, p.y, p.z, q.w, q.x, q.y, q.z))


def test_a_truncated_imu_answer_stops_the_motor_reports_and_the_link_recovers(rig):
    peer, car = rig
    keep_driving(car, 1.0, 0.0, lambda: forward(peer) and car.odom, 30.0, "driving at 1 m/s")
    start = len(peer.commands)
    # framed with a valid CRC, the mask promises nine floats, none follow
    peer.answer_next(proto.COMM_GET_IMU_DATA, struct.pack(">BH", 65, proto.IMU_MASK))
    keep_driving(
        car,
        1.0,
        0.0,
        lambda: car.status.get("mode") == "fault",
        30.0,
        "the link's fault on /diagnostics",
    )
    assert car.status["level"] == 2
    assert "vesc-link thread failed" in car.status["message"]
    assert "IMU answer of 3 bytes is short" in car.status["message"]
    assert _zero_since(peer, start), "the motor was not zeroed after the fault"
    # the link recovers on its own while cmd_vel goes on: driving again, odometry resumes
    count = len(car.odom)
    keep_driving(
        car,
        1.0,
        0.0,
        lambda: len(car.odom) > count + 20 and forward(peer),
        30.0,
        "odometry and the motor after the restart",
    )
    link = car.driver.link
    assert link.loop.alive() and link.loop.faults == 1 and link.loop.restarts == 1
    assert int(car.status["thread_faults"]) == 1 and int(car.status["malformed_answers"]) == 1
    assert all(_pose_finite(m) for m in car.odom)


def test_a_nan_yaw_rate_is_refused_counted_and_odometry_goes_on(rig):
    peer, car = rig
    keep_driving(car, 1.0, 0.0, lambda: forward(peer) and car.odom, 30.0, "driving at 1 m/s")
    bad = proto.ImuData((0.0, 0.0, 0.0), (0.0, 0.0, G), (0.0, 0.0, float("nan")))
    peer.answer_next(proto.COMM_GET_IMU_DATA, proto.encode_imu(bad))
    keep_driving(
        car,
        1.0,
        0.0,
        lambda: car.status.get("refused_samples") == "1",
        30.0,
        "the refused sample on /diagnostics",
    )
    assert "imu gyro: non-finite value nan" in car.status["last_sample_refusal"]
    count, x = len(car.odom), car.odom[-1].pose.pose.position.x
    keep_driving(
        car,
        1.0,
        0.0,
        lambda: len(car.odom) > count + 20 and car.odom[-1].pose.pose.position.x > x + 0.1,
        30.0,
        "odometry to go on",
    )
    assert all(_pose_finite(m) for m in car.odom)
    assert car.status["mode"] == "driving" and car.driver.link.loop.faults == 0
    # the odometry turns with the next good yaw rate, as if the NaN had never come
    peer.model.imu_data = proto.ImuData((0.0, 0.0, 0.0), (0.0, 0.0, G), (0.0, 0.0, 0.5))
    keep_driving(
        car,
        1.0,
        0.0,
        lambda: car.odom[-1].twist.twist.angular.z == pytest.approx(0.5, abs=1e-4),
        30.0,
        "the next yaw rate in the odometry",
    )


def test_out_of_range_telemetry_never_reaches_the_odometry(rig):
    peer, car = rig
    wait_for(lambda: car.odom, 30.0, "odom")
    wild = proto.encode_values(proto.Values(erpm=2_000_000_000.0))
    peer.answer_next(proto.COMM_GET_VALUES, wild)
    wait_for(
        lambda: car.status.get("refused_samples") == "1", 30.0, "the refused telemetry counted"
    )
    assert "erpm" in car.status["last_sample_refusal"]
    count = len(car.odom)
    wait_for(lambda: len(car.odom) > count + 5, 30.0, "odom after the refusal")
    assert max(abs(m.twist.twist.linear.x) for m in car.odom) < 1.0


def test_the_watchdog_zeroes_the_motor_when_the_link_thread_hangs(rig):
    peer, car = rig
    keep_driving(car, 1.0, 0.0, lambda: forward(peer) and car.odom, 30.0, "driving")
    link = car.driver.link
    release = threading.Event()
    original = link._on_values

    def hang(*args):
        release.wait(60.0)  # the link's own thread blocks here, as in a hung callback

    start = len(peer.commands)
    link._on_values = hang
    try:
        # cmd_vel goes on; only a watchdog in another thread can zero the motor now
        keep_driving(
            car,
            1.0,
            0.0,
            lambda: car.status.get("mode") == "stalled" and _zero_since(peer, start),
            30.0,
            "the watchdog's zero while the link hangs",
        )
        assert car.status["level"] == 2
        for _ in range(5):  # commands that still come are held at zero
            car.drive(1.0, 0.0)
        wait_for(lambda: peer.last("rpm") == 0.0, 30.0, "zero held while the link hangs")
    finally:
        link._on_values = original
        release.set()
    keep_driving(car, 1.0, 0.0, lambda: forward(peer), 30.0, "driving again")
