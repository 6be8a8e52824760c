"""Issue 27, points 1 and 2, for every driver's parser and state path: random and truncated input
with valid framing (VESC packets, SpaceMouse HID reports, evdev gamepad records, camera
frames) never kills a driver's I/O thread and never puts a non-finite or out-of-range value into
its state; a fault, wherever it comes from, stops the actuator (zero motor, released teleop
frame), is reported (``thread_faults``, ``last_fault``) and the driver recovers on its own.

All at the parser layer with synthesised bytes (no device nodes on this machine): the real
``VescLink`` thread on a port that replays bytes, the real teleop and camera nodes (rclpy,
in-process, ticked by the test), the real supervision mechanism. Waits are bounded, nothing is
timed."""

from __future__ import annotations

import math
import queue
import struct
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from process_helpers import wait_for

from robot_rl.drivers.car import vesc_protocol as proto
from robot_rl.drivers.supervision import SensorGate, SupervisedLoop, Watchdog

FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# -- the mechanism ------------------------------------------------------------------------------
def test_a_supervised_loop_stops_reports_and_restarts_on_any_exception():
    events, reports = [], []
    boom = iter([RuntimeError("first"), struct.error("unpack requires 4 bytes"), None, None])

    def step():
        error = next(boom, None)
        events.append("step")
        if error is not None:
            raise error
        time.sleep(0.01)

    loop = SupervisedLoop(
        "test",
        step,
        stop=lambda: events.append("stop"),
        restart=lambda: events.append("restart"),
        report=reports.append,
        restart_delay=0.01,
    ).start()
    try:
        wait_for(lambda: events.count("step") >= 4, 30.0, "steps after two faults")
        assert loop.alive() and loop.faults == 2 and loop.restarts == 2
        assert events[:6] == ["step", "stop", "restart", "step", "stop", "restart"]
        assert "struct.error: unpack requires 4 bytes" in reports[1]
        assert "test thread failed" in loop.last_fault
    finally:
        loop.close()


def test_a_watchdog_acts_while_the_thread_it_guards_hangs():
    release = threading.Event()
    loop = SupervisedLoop("hung", lambda: release.wait(30.0), stop=lambda: None).start()
    stopped = []
    dog = Watchdog("dog", 0.02, lambda: loop.stalled(0.2) and stopped.append(True))
    dog.start()
    try:
        wait_for(lambda: stopped, 30.0, "the watchdog to see the hang")
    finally:
        release.set()
        dog.close()
        loop.close()


def test_the_sensor_gate_refuses_non_finite_and_out_of_range_values_and_counts_them():
    gate = SensorGate()
    assert gate.admit("gyro", (0.0, 0.1, -0.2), 35.0)
    assert not gate.admit("gyro", (0.0, float("nan"), 0.0), 35.0)
    assert not gate.admit("gyro", (0.0, float("inf"), 0.0))
    assert not gate.admit("gyro", (0.0, 0.0, 1e9), 35.0)
    assert gate.refused == 3 and "beyond the sensor's range" in gate.last_refusal


# -- VESC: the real link thread on a port that replays bytes -------------------------------------
class ReplayPort:
    """The VESC's serial port as the link sees it: ``read`` gives what the test queued, ``write``
    decodes the node's commands (as the VESC would)."""

    def __init__(self):
        self.inbox: queue.Queue[bytes] = queue.Queue()
        self.commands: list[tuple[int, float | None]] = []
        self._reader = proto.PacketReader()
        self.opened = 0

    def read(self, size: int) -> bytes:
        try:
            return self.inbox.get(timeout=0.002)
        except queue.Empty:
            return b""

    def write(self, data: bytes) -> int:
        for payload in self._reader.feed(data):
            self.commands.append(proto.decode_command(payload))
        return len(data)

    def close(self) -> None:
        pass

    def rpms(self, start: int = 0) -> list[float]:
        return [v for cid, v in self.commands[start:] if cid == proto.COMM_SET_RPM]


@pytest.fixture(scope="module")
def vesc():
    from robot_rl.drivers.car.vesc_link import LinkSettings, VescLink

    port = ReplayPort()
    settings = LinkSettings(
        "replay", 115200, "rpm", 0.5, 200.0, 30.0, 30.0, 0.01, True, brake_current=0.0
    )
    got = {"values": 0, "imu": []}

    def on_values(values, servo, stamp):
        got["values"] += 1

    def on_imu(imu, stamp):
        got["imu"].append(imu)

    def open_port(settings):
        port.opened += 1
        return port

    link = VescLink(settings, on_values, on_imu, open_port=open_port)
    link.connect()
    link.enabled = True
    link.start()
    yield link, port, got
    link.close()


VALID_VALUES = proto.frame(proto.encode_values(proto.Values(erpm=1000.0)))
payload_bodies = st.one_of(
    st.binary(max_size=80),
    # truncations of real answers: the most likely corruption that passes a CRC
    st.integers(0, 80).map(lambda n: proto.encode_values(proto.Values(erpm=1.0))[1:][:n]),
    st.integers(0, 40).map(
        lambda n: proto.encode_imu(proto.ImuData((0, 0, 0), (0, 0, 9.8), (0, 0, 1)))[1:][:n]
    ),
)


@FUZZ
@given(
    command=st.sampled_from([proto.COMM_GET_VALUES, proto.COMM_GET_IMU_DATA, 0, 255]),
    body=payload_bodies,
)
def test_fuzzed_vesc_answers_never_kill_the_link_and_a_fault_zeroes_the_motor(vesc, command, body):
    link, port, got = vesc
    link.command(4000.0, 0.5)
    wait_for(lambda: link.applied[0] == 4000.0, 30.0, "the motor running")
    faults, start = link.loop.faults, len(port.commands)
    port.inbox.put(proto.frame(bytes([command]) + body))

    def valid_answer_arrives():
        before = got["values"]
        port.inbox.put(VALID_VALUES)
        return wait_for(lambda: got["values"] > before, 5.0, "a valid answer", interval=0.005)

    wait_for(lambda: _try(valid_answer_arrives), 30.0, "the link to answer again")
    assert link.loop.alive()
    if link.loop.faults > faults:  # the answer did not decode: stop, report, restart
        assert 0.0 in port.rpms(start), "a fault left the motor running"
        assert "vesc-link thread failed" in link.loop.last_fault
        assert link.loop.restarts == link.loop.faults
        link.command(4000.0, 0.5)  # the next command after the restart drives again
        wait_for(lambda: link.applied[0] == 4000.0, 30.0, "driving after the restart")


def test_a_truncated_answer_on_the_replayed_port_zeroes_restarts_and_drives_again(vesc):
    link, port, _ = vesc
    link.command(4000.0, 0.5)
    wait_for(lambda: link.applied[0] == 4000.0, 30.0, "the motor running")
    faults, opened, start = link.loop.faults, port.opened, len(port.commands)
    port.inbox.put(proto.frame(proto.encode_values(proto.Values())[:20]))  # CRC valid, short
    wait_for(lambda: link.loop.faults == faults + 1, 30.0, "the fault")
    wait_for(lambda: port.opened > opened, 30.0, "the port reopened")
    assert 0.0 in port.rpms(start) and "not a COMM_GET_VALUES answer" in link.loop.last_fault
    link.command(4000.0, 0.5)
    wait_for(lambda: port.rpms()[-1] == 4000.0, 30.0, "driving after the restart")


def _try(check) -> bool:
    try:
        return bool(check())
    except AssertionError:
        return False


# -- teleop nodes, ticked by the test -----------------------------------------------------------
class ReplayReports:
    """A HID device that hands out the queued reports one per read."""

    description = "replayed SpaceMouse"

    def __init__(self):
        self.reports: queue.Queue[bytes] = queue.Queue()

    def read(self) -> bytes:
        try:
            return self.reports.get_nowait()
        except queue.Empty:
            return b""

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def spacemouse():
    pytest.importorskip("rclpy")
    from teleop_helpers import ros_context

    from robot_rl.drivers.teleop.spacemouse import SpaceMouseNode

    device = ReplayReports()
    context = ros_context({"reconnect_interval": "0.05", "deadband": "0.0"})
    node = SpaceMouseNode(opener=lambda config: device, context=context)
    assert node.start()
    yield node, device
    node.destroy_node()
    context.try_shutdown()


def _frame_is_sane(frame) -> bool:
    return all(math.isfinite(v) and -1.0 <= v <= 1.0 for v in frame.twist) and all(
        b in (0, 1) for b in frame.buttons
    )


@FUZZ
@given(
    st.lists(
        st.tuples(st.sampled_from([1, 2, 3, 4, 0x17, 0]), st.binary(max_size=16)),
        min_size=1,
        max_size=8,
    )
)
def test_fuzzed_spacemouse_reports_keep_the_published_frame_sane(spacemouse, reports):
    node, device = spacemouse
    for report_id, body in reports:
        device.reports.put(bytes([report_id]) + body)
    node._tick()
    assert _frame_is_sane(node._last_frame) and node.device is not None


def test_a_spacemouse_parser_fault_releases_reports_and_reconnects(spacemouse):
    node, device = spacemouse
    device.reports.put(b"\x01" + struct.pack("<3h", 350, 0, 0))  # full deflection
    node._tick()
    assert node._last_frame.twist != (0.0,) * 6
    faults = node.fault_log.faults
    feed = node.feed

    def broken(data):  # what a parser bug looks like from here
        raise struct.error("unpack_from requires a buffer of at least 6 bytes")

    node.feed = broken
    try:
        device.reports.put(b"\x01\x00")
        node._tick()
    finally:
        node.feed = feed
    assert node._last_frame.twist == (0.0,) * 6 and not any(node._last_frame.buttons)
    assert node.fault_log.faults == faults + 1 and node.device is None
    level, message = _teleop_status(node)
    assert level == 2 and "struct.error" in message and "released" in message
    # the device is reopened with a fresh parser; the next deflection drives again
    device.reports.put(b"\x01" + struct.pack("<3h", 350, 0, 0))
    wait_for(lambda: node._tick() or node._last_frame.twist != (0.0,) * 6, 30.0, "motion again")
    assert node.reconnects >= 1


def _level(level) -> int:
    return int.from_bytes(level) if isinstance(level, bytes) else int(level)


def _teleop_status(node) -> tuple[int, str]:
    published = []
    publish = node._diag_pub.publish
    node._diag_pub.publish = published.append
    try:
        node.publish_diagnostics()
    finally:
        node._diag_pub.publish = publish
    status = published[0].status[0]
    return _level(status.level), status.message


@pytest.fixture(scope="module")
def gamepad():
    pytest.importorskip("rclpy")
    pytest.importorskip("evdev")
    from teleop_helpers import ros_context
    from test_gamepad_driver import GamepadBench

    from robot_rl.drivers.teleop.gamepad import GamepadNode

    bench = GamepadBench()
    context = ros_context({"reconnect_interval": "0.05"})
    node = GamepadNode(opener=bench.open, context=context)
    assert node.start()
    yield node, bench
    node.destroy_node()
    context.try_shutdown()
    bench.close()


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0, 1, 3, 4, 17, 0xFFFF]),  # SYN, KEY, ABS, MSC, LED, nonsense
            st.integers(0, 0x2FF),
            st.integers(-(2**31), 2**31 - 1),
        ),
        min_size=1,
        max_size=12,
    ),
    st.binary(max_size=23),  # a truncated record at the end
)
def test_fuzzed_gamepad_events_keep_the_published_frame_sane(gamepad, events, tail):
    from robot_rl.drivers.teleop.evdev_gamepad import EV_SYN, SYN_REPORT, pack_event

    node, bench = gamepad
    data = b"".join(pack_event(t, c, v) for t, c, v in events)
    bench.send(data + pack_event(EV_SYN, SYN_REPORT, 0) + tail)
    node._tick()
    assert _frame_is_sane(node._last_frame)
    assert node.device is not None or node.fault_log.faults  # a fault reopens it
    parser = node.parser
    for code, value in parser.axes.items():
        rng = parser.ranges[code]
        span = rng.maximum - rng.minimum
        assert rng.minimum - span <= value <= rng.maximum + span  # refused, never stored
    if node.device is not None:
        bench.send(tail and b"\x00" * (24 - len(tail)))  # complete the torn record


def test_a_gamepad_axis_far_outside_its_range_is_refused_and_counted():
    pytest.importorskip("evdev")
    from test_gamepad_driver import AT_REST, XBOX360

    from robot_rl.drivers.teleop.evdev_gamepad import (
        EV_ABS,
        EV_SYN,
        SYN_REPORT,
        GamepadEvents,
        pack_event,
    )

    code = next(iter(XBOX360))
    parser = GamepadEvents(XBOX360, AT_REST)
    good = XBOX360[code].maximum
    parser.feed(pack_event(EV_ABS, code, good) + pack_event(EV_SYN, SYN_REPORT, 0))
    parser.feed(pack_event(EV_ABS, code, 2**31 - 1) + pack_event(EV_SYN, SYN_REPORT, 0))
    assert parser.axes[code] == good and parser.refused_values == 1
    assert "far outside its range" in parser.last_refusal


# -- camera frames ------------------------------------------------------------------------------
class ReplaySource:
    """A camera source that hands out the queued frames (one list per read)."""

    description = "replayed camera"
    ended = None

    def __init__(self, frames: queue.Queue):
        self.frames = frames
        self.sizes = {"color": (8, 6)}

    def open(self) -> None:
        pass

    def read(self, timeout: float):
        try:
            return self.frames.get(timeout=min(timeout, 0.05))
        except queue.Empty:
            return None

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def camera():
    rclpy = pytest.importorskip("rclpy")
    from rclpy.context import Context
    from rclpy.parameter import Parameter

    from robot_rl.drivers.cameras.driver_node import CameraDriverNode

    frames: queue.Queue = queue.Queue()
    opened = []

    class ReplayCamera(CameraDriverNode):
        def make_source(self):
            opened.append(True)
            return ReplaySource(frames)

    context = Context()
    rclpy.init(context=context)
    params = {"max_frame_age": 30.0, "reconnect_period": 0.05, "reconnect_after": 30.0}
    node = ReplayCamera(
        "replay_camera",
        context=context,
        parameter_overrides=[Parameter(k, value=v) for k, v in params.items()],
    )
    assert node.start()
    yield node, frames, opened
    node.close_device()
    node.destroy_node()
    context.try_shutdown()


def _camera_frame(pixels, encoding="rgb8", stream="color", stamp=None):
    from robot_rl.drivers.cameras.driver_node import Frame
    from robot_rl.drivers.cameras.image_pipeline import Intrinsics

    height, width = (*pixels.shape, 1, 1)[:2] if hasattr(pixels, "shape") else (1, 1)
    return Frame(
        stream,
        pixels,
        encoding,
        time.time() if stamp is None else stamp,
        Intrinsics.from_fov(max(int(width), 1), max(int(height), 1), 60.0),
    )


def _good_frame():
    return _camera_frame(np.zeros((6, 8, 3), np.uint8))


def _published_after(node, frames, frame) -> bool:
    """Queue ``frame`` then a good one; True once the good one was published."""
    before = node.published["color"]
    frames.put([frame])
    frames.put([_good_frame()])
    return _try(lambda: wait_for(lambda: node.published["color"] > before, 10.0, "the good frame"))


@FUZZ
@given(
    shape=st.lists(st.integers(0, 9), min_size=1, max_size=4),
    dtype=st.sampled_from([np.uint8, np.uint16, np.float32, np.int8]),
    encoding=st.sampled_from(["rgb8", "bgr8", "mono8", "16UC1", "32FC1"]),
    stamp=st.sampled_from([None, float("nan"), float("inf")]),
)
def test_fuzzed_camera_frames_never_kill_the_reader(camera, shape, dtype, encoding, stamp):
    node, frames, _ = camera
    frame = _camera_frame(np.zeros(shape, dtype), encoding, stamp=stamp)
    wait_for(lambda: _published_after(node, frames, frame), 30.0, "the reader to go on")
    assert node._reader.alive()


def test_a_camera_reader_fault_is_reported_and_the_source_reopened(camera):
    node, frames, opened = camera
    faults, opens = node._reader.faults, len(opened)
    stranger = _camera_frame(np.zeros((6, 8, 3), np.uint8), stream="infrared")  # no gate for it
    wait_for(lambda: _published_after(node, frames, stranger), 30.0, "frames after the fault")
    assert node._reader.faults == faults + 1 and len(opened) > opens
    level, message = node.status()
    assert _level(level) == 2 and "camera-reader thread failed (KeyError" in message


def test_a_frame_that_does_not_fit_its_encoding_is_refused_and_counted(camera):
    node, frames, _ = camera
    refused = node.refused_frames
    truncated = _camera_frame(np.zeros((6, 8), np.uint8), "rgb8")  # no channels
    wait_for(lambda: _published_after(node, frames, truncated), 30.0, "the next good frame")
    assert node.refused_frames == refused + 1
    assert "rgb8 frame of shape (6, 8)" in node.last_drop


def test_a_realsense_imu_sample_that_is_not_finite_or_out_of_range_is_refused():
    pytest.importorskip("pyrealsense2")
    from test_realsense_imu import SERIAL, SoftwareImu, make_node

    camera = SoftwareImu()
    got = []
    node, context = make_node(lambda: [camera.device], serial=SERIAL)
    node._pub.publish = got.append  # what would go out on imu
    try:
        assert node.start()
        stream, now = node.stream, time.time()
        camera.feed("accel", (0.0, -9.81, 0.0), now)
        camera.feed("accel", (0.0, float("nan"), 0.0), now + 0.001)
        camera.feed("accel", (0.0, -1e6, 0.0), now + 0.002)
        wait_for(lambda: stream.samples.refused == 2, 30.0, "two accel samples refused")
        camera.feed("gyro", (0.0, float("inf"), 0.0), now + 0.003)
        camera.feed("gyro", (0.0, -0.5, 0.0), now + 0.004)
        wait_for(lambda: got, 30.0, "the good sample published")
        assert stream.samples.refused == 3 and "gyro: non-finite value inf" in (
            stream.samples.last_refusal
        )
        msg = got[-1]
        assert msg.angular_velocity.z == pytest.approx(0.5, abs=1e-4)
        assert msg.linear_acceleration.z == pytest.approx(9.81, abs=1e-4)  # the good one
        assert len(got) == 1 and stream.fault_log.faults == 0
    finally:
        from robot_rl.ros.node_base import _tear_down

        _tear_down(node)
        context.try_shutdown()
