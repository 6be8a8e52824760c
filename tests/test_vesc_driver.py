"""The VESC node against a VESC peer on a pseudo-terminal (``sim/cells/vesc_peer.py``, written to
the protocol's framing and commands): cmd_vel reaches the peer as ERPM (or duty) and servo
positions within the limits, telemetry becomes odom, the IMU packet becomes imu, garbled answers
are counted and skipped, a silent peer is a diagnostics error and gets zero, the port is reopened
after it went away, the watchdog stops the motor and the e-stop holds. The node runs in this
process on its own executor thread; waits are long and bounded, nothing is timed.
"""

from __future__ import annotations

import dataclasses
import math
import time

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("serial")

from process_helpers import wait_for
from ros_helpers import Spinner

from robot_rl.drivers.car import vesc_protocol as proto
from robot_rl.sim.cells.vesc_peer import SimpleDrivetrain, VescPeer

ERPM_PER_MPS = 60 / (2 * math.pi * 0.05) * 10 * 2  # wheel radius 0.05, gear 10, 4 poles
PARAMS = dict(
    max_erpm=8000.0,
    wheel_radius=0.05,
    gear_ratio=10.0,
    motor_poles=4,
    wheelbase=0.26,
    max_steering=0.5,
    servo_centre=0.5,
    servo_min=0.15,
    servo_max=0.85,
    servo_per_radian=-0.7,
    telemetry_hz=50.0,
    watchdog_timeout=0.5,
    silent_timeout=0.5,
    reconnect_period=0.2,
    diagnostics_hz=10.0,
    initial_pose=[1.0, -2.0, 0.0],
)


class Car:
    """The driver node and a client node in one private context."""

    def __init__(self, port: str, **overrides):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import Twist
        from nav_msgs.msg import Odometry
        from rclpy.context import Context
        from rclpy.parameter import Parameter
        from sensor_msgs.msg import Imu
        from std_srvs.srv import SetBool

        from robot_rl.drivers.car.vesc import VescDriver
        from robot_rl.ros.qos import command_qos, sensor_qos

        self.context = Context()
        rclpy.init(context=self.context)
        params = {**PARAMS, "port": port, "autostart": False, **overrides}
        self.driver = VescDriver(
            context=self.context,
            namespace="/car",
            parameter_overrides=[Parameter(k, value=v) for k, v in params.items()],
        )
        assert self.driver.start()
        self.client = rclpy.create_node("vesc_test_client", context=self.context)
        self.odom, self.imu, self.status = [], [], {}
        self.client.create_subscription(Odometry, "/car/odom", self.odom.append, sensor_qos())
        self.client.create_subscription(Imu, "/car/imu", self.imu.append, sensor_qos())
        self.client.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, 10)
        self._cmd = self.client.create_publisher(Twist, "/car/cmd_vel", command_qos())
        self._estop = self.client.create_client(SetBool, "/car/estop")
        self.spinner = Spinner(self.driver, self.context)
        self.spinner.executor.add_node(self.client)
        self._Twist, self._SetBool = Twist, SetBool

    def _on_diag(self, msg) -> None:
        for status in msg.status:
            if status.name == "/car/vesc":
                self.status = {
                    **{kv.key: kv.value for kv in status.values},
                    "message": status.message,
                    "level": int.from_bytes(status.level)
                    if isinstance(status.level, bytes)
                    else int(status.level),
                }

    def drive(self, speed: float, yaw_rate: float) -> None:
        msg = self._Twist()
        msg.linear.x, msg.angular.z = float(speed), float(yaw_rate)
        self._cmd.publish(msg)

    def estop(self, engaged: bool) -> bool:
        assert self._estop.wait_for_service(timeout_sec=30.0)
        future = self._estop.call_async(self._SetBool.Request(data=engaged))
        wait_for(future.done, 30.0, "the estop service")
        return future.result().success

    def close(self) -> None:
        from robot_rl.ros.node_base import _tear_down

        _tear_down(self.driver)
        self.spinner.close()


@pytest.fixture
def rig(tmp_path):
    peer = VescPeer(tmp_path / "vesc").start()
    car = Car(str(peer.link))
    try:
        yield peer, car
    finally:
        car.close()
        peer.close()


def forward(peer) -> bool:
    """Whether the peer's latest speed set-point is forward (False before the first one)."""
    rpm = peer.last("rpm")
    return rpm is not None and rpm > 0


def keep_driving(car: Car, speed: float, yaw_rate: float, condition, timeout: float, what: str):
    """Stream cmd_vel (as the actor does, 10 Hz) until ``condition`` holds."""

    def step():
        car.drive(speed, yaw_rate)
        return condition()

    return wait_for(step, timeout, what, interval=0.1)


def test_cmd_vel_reaches_the_peer_as_erpm_and_servo_within_limits(rig):
    peer, car = rig
    steering = 0.2
    yaw_rate = 1.0 * math.tan(steering) / 0.26
    keep_driving(
        car,
        1.0,
        yaw_rate,
        lambda: forward(peer),
        30.0,
        "an ERPM set-point at the peer",
    )
    assert peer.last("rpm") == pytest.approx(ERPM_PER_MPS, abs=1.0)
    assert peer.last("servo") == pytest.approx(0.5 - 0.7 * steering, abs=1e-3)
    # beyond the limits: clipped to max_erpm and servo_min (steering clipped to max_steering)
    keep_driving(car, 10.0, 100.0, lambda: peer.last("rpm") == 8000.0, 30.0, "the ERPM limit")
    assert peer.last("servo") == pytest.approx(0.15, abs=1e-3)
    # non-finite commands never reach the peer
    before = len(peer.commands)
    car.drive(float("nan"), 0.0)
    wait_for(
        lambda: car.status.get("last_refusal", "").startswith("non-finite"),
        30.0,
        "the refusal on /diagnostics",
    )
    assert all(math.isfinite(v) for _, v in peer.commands[before:])


def test_duty_mode_sends_duty_cycles(tmp_path):
    peer = VescPeer(tmp_path / "vesc").start()
    car = Car(str(peer.link), mode="duty", duty_per_mps=0.05, max_duty=0.2)
    try:
        keep_driving(car, 2.0, 0.0, lambda: peer.last("duty"), 30.0, "a duty set-point")
        assert peer.last("duty") == pytest.approx(0.1, abs=1e-4)
        keep_driving(car, 9.0, 0.0, lambda: peer.last("duty") == 0.2, 30.0, "the duty limit")
        assert peer.last("rpm") is None
    finally:
        car.close()
        peer.close()


def test_telemetry_becomes_odom_and_the_imu_packet_becomes_imu(rig):
    peer, car = rig
    wait_for(lambda: car.odom and car.imu, 30.0, "odom and imu")
    first = car.odom[-1].pose.pose.position
    assert (first.x, first.y) == pytest.approx((1.0, -2.0), abs=1e-6)  # initial_pose
    assert car.odom[-1].header.frame_id == "odom" and car.odom[-1].child_frame_id == "base"
    # straight ahead at 1 m/s: the speed is the ERPM's, the pose follows the tachometer
    keep_driving(
        car,
        1.0,
        0.0,
        lambda: car.odom[-1].pose.pose.position.x > 1.5,
        30.0,
        "the odometry to move half a metre",
    )
    speeds = [m.twist.twist.linear.x for m in car.odom]
    assert max(speeds) == pytest.approx(1.0, abs=1e-3)
    # cmd_vel stops, the watchdog zeroes the motor: then odometry and tachometer stand still
    wait_for(lambda: car.odom[-1].twist.twist.linear.x == 0.0, 30.0, "the car to stop")
    count = len(car.odom)
    wait_for(lambda: len(car.odom) > count + 3, 30.0, "odom at a standstill")
    msg = car.odom[-1]
    assert msg.pose.pose.position.y == pytest.approx(-2.0, abs=1e-3)
    metres = round(peer.model.tachometer) / 6 / 2 / 10 * 2 * math.pi * 0.05
    assert msg.pose.pose.position.x == pytest.approx(1.0 + metres, abs=2e-3)
    # the VESC's IMU packet, in SI units
    peer.model.imu_data = proto.ImuData((0.0, 0.0, 0.5), (0.2, 0.0, 9.81), (0.0, 0.0, 0.7))
    wait_for(lambda: car.imu[-1].angular_velocity.z > 0, 30.0, "the peer's new IMU data")
    imu = car.imu[-1]
    assert imu.angular_velocity.z == pytest.approx(0.7, abs=1e-4)
    assert (imu.linear_acceleration.x, imu.linear_acceleration.z) == pytest.approx(
        (0.2, 9.81), abs=1e-4
    )
    assert imu.orientation.w == pytest.approx(math.cos(0.25), abs=1e-4)  # yaw 0.5


def test_bad_crcs_are_counted_and_skipped(rig):
    peer, car = rig
    wait_for(lambda: car.odom, 30.0, "odom")
    peer.corrupt_next(5)
    wait_for(lambda: int(car.status.get("crc_errors", 0)) >= 5, 30.0, "5 CRC errors counted")
    count = len(car.odom)
    wait_for(lambda: len(car.odom) > count + 5, 30.0, "odom after the bad packets")
    assert car.status["mode"] != "silent"


def test_a_silent_peer_is_an_error_and_gets_zero(rig):
    peer, car = rig
    keep_driving(car, 1.0, 0.0, lambda: car.status.get("mode") == "driving", 30.0, "driving")
    peer.silent = True
    keep_driving(
        car,
        1.0,
        0.0,
        lambda: car.status.get("mode") == "silent",
        30.0,
        "the silent peer on /diagnostics",
    )
    assert car.status["level"] == 2 and "does not answer" in car.status["message"]
    keep_driving(car, 1.0, 0.0, lambda: peer.last("rpm") == 0.0, 30.0, "zero at the peer")
    peer.silent = False
    keep_driving(car, 1.0, 0.0, lambda: forward(peer), 30.0, "driving again")


def test_the_port_is_reopened_after_it_went_away(rig):
    peer, car = rig
    wait_for(lambda: car.odom, 30.0, "odom")
    keep_driving(
        car, 1.0, 0.0, lambda: car.odom[-1].pose.pose.position.x > 1.3, 30.0, "the car to move"
    )
    peer.unplug()
    wait_for(lambda: car.status.get("mode") == "disconnected", 30.0, "the lost port")
    assert car.status["level"] == 2
    x = car.odom[-1].pose.pose.position.x
    # it comes back rebooted: its tachometer counts from 0 again, the odometry must not jump
    peer.model = SimpleDrivetrain()
    peer.plug()
    wait_for(lambda: int(car.status.get("reconnects", 0)) >= 1, 30.0, "the reconnection")
    count = len(car.odom)
    keep_driving(
        car,
        0.5,
        0.0,
        lambda: len(car.odom) > count + 5 and forward(peer),
        30.0,
        "odom and commands over the new port",
    )
    assert x - 0.05 < car.odom[-1].pose.pose.position.x < x + 0.5


def test_the_watchdog_stops_the_motor(rig):
    peer, car = rig
    keep_driving(car, 1.0, 0.0, lambda: forward(peer), 30.0, "driving")
    # cmd_vel stops: within the watchdog timeout the peer gets zero and a centred servo
    wait_for(lambda: peer.last("rpm") == 0.0, 30.0, "the watchdog's zero")
    assert peer.last("servo") == 0.5
    wait_for(lambda: int(car.status.get("watchdog_stops", 0)) >= 1, 30.0, "the stop counted")


def test_the_estop_holds_until_released(rig):
    peer, car = rig
    keep_driving(car, 1.0, 0.0, lambda: forward(peer), 30.0, "driving")
    assert car.estop(True)
    assert peer.last("rpm") == 0.0 or wait_for(lambda: peer.last("rpm") == 0.0, 5.0, "zero")
    # commands go on, the motor stays at zero
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        car.drive(1.0, 0.0)
        time.sleep(0.1)
    assert peer.last("rpm") == 0.0
    wait_for(lambda: car.status.get("mode") == "e-stop", 30.0, "the e-stop on /diagnostics")
    assert car.estop(False)
    keep_driving(car, 1.0, 0.0, lambda: forward(peer), 30.0, "driving after release")


def test_the_heading_turns_with_the_imu_and_the_odometry_tilts_with_it(rig):
    peer, car = rig
    # driving straight (servo centred) while the IMU says the car turns, upside down
    peer.model.imu_data = proto.ImuData((math.pi, 0.0, 0.0), (0.0, 0.0, -9.81), (0.0, 0.0, 0.5))
    wait_for(lambda: car.odom, 30.0, "odom")
    keep_driving(
        car,
        1.0,
        0.0,
        lambda: _yaw(car.odom[-1]) > 0.3,
        30.0,
        "the heading to turn by the IMU's yaw rate",
    )
    assert car.status.get("heading_source") == "imu" or wait_for(
        lambda: car.status.get("heading_source") == "imu", 30.0, "heading_source imu"
    )
    q = car.odom[-1].pose.pose.orientation
    assert 1 - 2 * (q.x * q.x + q.y * q.y) < 0  # the odometry's up axis points down: flipped
    assert peer.last("servo") == 0.5


def test_without_the_imu_the_heading_follows_the_steering(tmp_path):
    peer = VescPeer(tmp_path / "vesc").start()
    peer.model.imu_data = proto.ImuData((0.0, 0.0, 0.0), (0.0, 0.0, 9.81), (0.0, 0.0, 0.5))
    car = Car(str(peer.link), yaw_from_imu=False)
    try:
        steering = 0.3
        yaw_rate = math.tan(steering) / 0.26  # at 1 m/s
        wait_for(lambda: car.odom, 30.0, "odom")
        keep_driving(
            car,
            1.0,
            yaw_rate,
            lambda: _yaw(car.odom[-1]) > 0.5,
            30.0,
            "the heading to turn with the steering",
        )
        assert car.odom[-1].twist.twist.angular.z == pytest.approx(yaw_rate, rel=0.02)
        assert car.status.get("heading_source", "steering") == "steering"
    finally:
        car.close()
        peer.close()


def _yaw(odom) -> float:
    q = odom.pose.pose.orientation
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))


def test_bad_parameters_and_a_missing_port_fail_in_one_line(tmp_path):
    import rclpy
    from rclpy.context import Context
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from robot_rl.drivers.car.vesc import VescDriver
    from robot_rl.drivers.car.vesc_link import ConnectError, LinkSettings, VescLink
    from robot_rl.ros.node_base import ParameterError

    context = Context()
    rclpy.init(context=context)
    try:
        with pytest.raises(ParameterError, match=r"servo_centre 0.9 must lie in \[servo_min"):
            VescDriver(
                context=context,
                parameter_overrides=[
                    Parameter("servo_centre", value=0.9),
                    Parameter("autostart", value=False),
                ],
            )
        with pytest.raises(ParameterError, match=r"'mode' = 'current' must be one of rpm, duty"):
            VescDriver(context=context, parameter_overrides=[Parameter("mode", value="current")])
        missing = str(tmp_path / "no_vesc_here")
        settings = LinkSettings(missing, 115200, "rpm", 0.5, 50.0, 0.3, 0.5, 1.0, False)
        with pytest.raises(ConnectError, match=rf"cannot open the VESC's port {missing}"):
            VescLink(settings, lambda *a: None).connect()
        node = VescDriver(
            context=context,
            parameter_overrides=[
                Parameter("port", value=missing),
                Parameter("autostart", value=False),
            ],
        )
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        node.destroy_node()
    finally:
        context.try_shutdown()


def test_a_vesc_fault_and_a_low_battery_show_on_diagnostics(tmp_path):
    peer = VescPeer(tmp_path / "vesc").start()
    car = Car(str(peer.link), low_voltage=13.0)  # the peer's battery reads 12 V
    try:
        wait_for(
            lambda: car.status.get("message", "").startswith("battery at 12.0 V"),
            30.0,
            "the low-battery warning",
        )
        assert car.status["level"] == 1
        model_values = peer.model.values
        peer.model.values = lambda: dataclasses.replace(model_values(), fault=5)
        wait_for(
            lambda: car.status.get("message") == "VESC fault OVER_TEMP_FET (5)",
            30.0,
            "the VESC's fault on /diagnostics",
        )
        assert car.status["level"] == 2 and car.status["fault_code"] == "5"
    finally:
        car.close()
        peer.close()


def test_a_stop_can_brake_instead_of_coasting(tmp_path):
    peer = VescPeer(tmp_path / "vesc").start()
    car = Car(str(peer.link), mode="duty", brake_current=4.0)
    try:
        keep_driving(car, 1.0, 0.0, lambda: peer.last("duty"), 30.0, "driving")
        # the watchdog's stop goes out as a brake current, not a zero duty cycle (a coast)
        wait_for(lambda: peer.commands[-2:][0][0] == "brake", 30.0, "the brake")
        assert peer.last("brake") == 4.0
        assert car.status.get("mode") in (None, "stopped") or wait_for(
            lambda: car.status.get("mode") == "stopped", 30.0, "'stopped'"
        )
    finally:
        car.close()
        peer.close()
