"""The RealSense IMU node against an ``rs.software_device`` with a motion sensor: gyroscope and
accelerometer samples injected into librealsense come out as sensor_msgs/Imu in the car's body
frame, stamped with the gyro sample's time; an IMU at the wrong rates is refused in one line;
a silent IMU is an error on /diagnostics."""

from __future__ import annotations

import time

import pytest
from process_helpers import wait_for
from ros_helpers import Spinner

rs = pytest.importorskip("pyrealsense2")
pytest.importorskip("rclpy")

SERIAL = "987654321012"


class SoftwareImu:
    """A software RealSense whose motion module streams what the test feeds it."""

    def __init__(self, gyro_rate: int = 200, accel_rate: int = 250):
        self.device = rs.software_device()
        self.device.register_info(rs.camera_info.serial_number, SERIAL)
        self.device.register_info(rs.camera_info.name, "Software RealSense D435i")
        self.sensor = self.device.add_sensor("Motion Module")
        self.profiles = {}
        for uid, (name, kind, rate) in enumerate(
            (("gyro", rs.stream.gyro, gyro_rate), ("accel", rs.stream.accel, accel_rate))
        ):
            stream = rs.motion_stream()
            stream.type, stream.index, stream.uid = kind, 0, 20 + uid
            stream.fps, stream.fmt = rate, rs.format.motion_xyz32f
            profile = self.sensor.add_motion_stream(stream, True)
            self.profiles[name] = profile.as_motion_stream_profile()
        self._number = 0

    def feed(self, name: str, xyz, stamp_s: float) -> None:
        frame = rs.software_motion_frame()
        vector = rs.vector()
        vector.x, vector.y, vector.z = (float(v) for v in xyz)
        frame.data = vector
        frame.timestamp = stamp_s * 1000.0
        frame.domain = rs.timestamp_domain.global_time
        self._number += 1
        frame.frame_number = self._number
        frame.profile = self.profiles[name]
        self.sensor.on_motion_frame(frame)


def make_node(devices, **params):
    import rclpy
    from rclpy.context import Context
    from rclpy.parameter import Parameter

    from robot_rl.drivers.car.realsense_imu import RealSenseImuNode

    context = Context()
    rclpy.init(context=context)
    overrides = [Parameter(k, value=v) for k, v in {"autostart": False, **params}.items()]
    node = RealSenseImuNode(
        devices=devices, context=context, namespace="/car", parameter_overrides=overrides
    )
    return node, context


def test_gyro_and_accel_samples_become_imu_messages_in_the_body_frame():
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import Imu

    from robot_rl.ros.qos import sensor_qos

    camera = SoftwareImu()
    node, context = make_node(lambda: [camera.device], serial=SERIAL, diagnostics_hz=10.0)
    client = rclpy.create_node("imu_client", context=context)
    got, status = [], {}
    client.create_subscription(Imu, "/car/imu", got.append, sensor_qos())

    def on_diag(msg):
        for s in msg.status:
            if s.name == "/car/realsense_imu":
                status.update({kv.key: kv.value for kv in s.values}, message=s.message)

    client.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 10)
    spinner = Spinner(node, context)
    spinner.executor.add_node(client)
    try:
        assert node.start()
        now = time.time()
        # the camera at rest, upright, turning left: the RealSense reads gravity's reaction on
        # -y (its y points down) and the yaw rate about -y
        camera.feed("accel", (0.0, -9.81, 0.0), now)
        wait_for(lambda: node.stream.accel_samples >= 1, 30.0, "the accel sample")
        for k in range(5):
            camera.feed("gyro", (0.0, -0.5, 0.0), now + 0.005 * (k + 1))
        wait_for(lambda: len(got) >= 5, 30.0, "five Imu messages")
        msg = got[-1]
        assert msg.header.frame_id == "imu"
        assert msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9 == pytest.approx(
            now + 0.025, abs=1e-3
        )
        accel, gyro = msg.linear_acceleration, msg.angular_velocity
        assert (accel.x, accel.y, accel.z) == pytest.approx((0.0, 0.0, 9.81), abs=1e-4)
        assert (gyro.x, gyro.y, gyro.z) == pytest.approx((0.0, 0.0, 0.5), abs=1e-4)
        assert msg.orientation_covariance[0] == -1.0
        # an impact between two gyro samples: the message carries the accelerometer's peak
        count = len(got)
        camera.feed("accel", (3.0, -9.81, 40.0), now + 0.026)  # 40 m/s^2 forward (IMU z)
        camera.feed("accel", (0.0, -9.81, 0.5), now + 0.027)
        wait_for(lambda: node.stream.accel_samples >= 3, 30.0, "the accel samples")
        camera.feed("gyro", (0.0, 0.0, 0.0), now + 0.03)
        wait_for(lambda: len(got) > count, 30.0, "the next message")
        a = got[-1].linear_acceleration
        assert (a.x, a.y, a.z) == pytest.approx((40.0, -3.0, 9.81), abs=1e-4)
        camera.feed("gyro", (0.0, 0.0, 0.0), now + 0.035)
        wait_for(lambda: len(got) > count + 1, 30.0, "the message after")
        assert got[-1].linear_acceleration.x == pytest.approx(0.5, abs=1e-4)  # the newest
        wait_for(lambda: status.get("message") == "streaming", 30.0, "'streaming'")
        # the samples stop: an error on /diagnostics
        wait_for(
            lambda: status.get("message", "").startswith("no IMU sample for"),
            30.0,
            "the silence on /diagnostics",
        )
    finally:
        from robot_rl.ros.node_base import _tear_down

        _tear_down(node)
        client.destroy_node()
        spinner.close()


def test_an_imu_without_the_asked_rates_is_refused_in_one_line():
    camera = SoftwareImu(gyro_rate=400, accel_rate=63)
    node, context = make_node(lambda: [camera.device], gyro_rate=200.0, accel_rate=250.0)
    try:
        with pytest.raises(
            RuntimeError,
            match=r"no IMU streaming gyro at 200 Hz and accel at "
            r"250 Hz",
        ):
            from robot_rl.drivers.car.realsense_imu import MotionStream

            MotionStream(node.config, lambda: [camera.device], lambda *a: None).open()
        from rclpy.lifecycle import TransitionCallbackReturn

        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
    finally:
        node.destroy_node()
        context.try_shutdown()
