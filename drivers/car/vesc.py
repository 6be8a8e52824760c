"""VESC motor controller node: the car's topic contract (docs/ARCHITECTURE.md) over the VESC's
serial protocol (``vesc_protocol``), so the actor's ROS backend cannot tell the car from its twin.

    robot-rl-vesc --ros-args -r __ns:=/car -p port:=/dev/ttyACM0

Subscribes ``cmd_vel`` (speed m/s, yaw rate rad/s; reliable, depth 1): an ERPM or duty set-point
and a bicycle-model servo position, each clipped to its limits. Publishes ``odom`` (tachometer
distance, heading from the IMU's yaw rate or the steering), ``imu`` and ``/diagnostics``;
service ``estop``. ``vesc_link`` zeroes the motor and centres the servo on the watchdog, estop,
a silent VESC or a fault; a non-finite command or out-of-range sample is refused. Set the VESC's
own app timeout too: it stops the motor if this node dies.
"""

from __future__ import annotations

import math
import time
from dataclasses import fields

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu
from std_srvs.srv import SetBool

from robot_rl.drivers.car import vesc_protocol as proto
from robot_rl.drivers.car.configs import VescConfig
from robot_rl.drivers.car.vesc_kinematics import (
    CarGeometry,
    MotorLimits,
    ServoLimits,
    motor_setpoint,
    quaternion,
    servo_position,
    steering_for,
    steering_of_servo,
    tilt_from_accel,
)
from robot_rl.drivers.car.vesc_kinematics import Odometry as WheelOdometry
from robot_rl.drivers.car.vesc_link import LinkSettings, VescLink
from robot_rl.drivers.command_guard import non_finite_reason
from robot_rl.drivers.supervision import FAULT_SHOWN_S, SensorGate
from robot_rl.ros.convert import diagnostic_array, imu_msg, odometry_msg, twist_to_array
from robot_rl.ros.node_base import DeviceNode, ParameterError, declare_config, main_for
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, command_qos, sensor_qos

IMU_FRESH = 0.5
"""An IMU sample older than this (s) no longer turns the heading nor tilts the odometry."""
MAX_GYRO = math.radians(2000.0) * 1.01
"""rad/s: the widest range of the IMUs a VESC carries (BMI160, LSM6DS3, ICM-20948: 2000 deg/s),
with room for rounding; a larger yaw rate is a corrupt sample."""
MAX_ACCEL = 16.0 * proto.STANDARD_GRAVITY * 1.01
"""m/s^2: their widest accelerometer range (16 g)."""
MAX_ANGLE = math.pi + 1e-3
"""rad: roll, pitch and yaw come wrapped to [-pi, pi]."""
MAX_ERPM_READING = 500_000.0
"""ERPM beyond any motor a VESC drives (the firmware's own limit is far below): a corrupt one."""


class VescDriver(DeviceNode):
    """See the module docstring."""

    config_class = VescConfig

    def __init__(self, **kwargs):
        super().__init__("vesc", **kwargs)
        self.config = c = declare_config(self, VescConfig)
        if not c.servo_min <= c.servo_centre <= c.servo_max:
            raise ParameterError(
                f"{self.get_fully_qualified_name()}: servo_centre "
                f"{c.servo_centre} must lie in [servo_min {c.servo_min}, "
                f"servo_max {c.servo_max}]"
            )
        self.geometry = CarGeometry(c.wheel_radius, c.gear_ratio, c.motor_poles, c.wheelbase)
        self.motor = MotorLimits(c.mode, c.max_erpm, c.max_duty, c.duty_per_mps)
        self.servo = ServoLimits(
            c.servo_centre, c.servo_min, c.servo_max, c.servo_per_radian, c.max_steering
        )
        self.odometry = WheelOdometry(self.geometry, *c.initial_pose)
        self.link: VescLink | None = None
        self.steering = 0.0
        self.refused = 0
        self.last_refusal = ""
        self.last_values: proto.Values | None = None
        self._reconnects_seen = 0
        self._imu_state: tuple[float, float, float, float] | None = None
        self._gravity: np.ndarray | None = None
        self._last_stamp: float | None = None
        self.heading_source = "steering"
        self.samples = SensorGate()
        """Telemetry and IMU samples refused before they reached any state."""
        self._ros_ready = False

    def open_device(self) -> None:
        if not self._ros_ready:
            self._make_ros_interfaces()
        c = self.config
        # the link's settings are the config's fields of the same names
        settings = LinkSettings(**{f.name: getattr(c, f.name) for f in fields(LinkSettings)})
        link = VescLink(
            settings,
            self._on_values,
            self._on_imu if c.imu else None,
            self.log,
            on_fault=self._on_link_fault,
        )
        link.connect()  # raises ConnectError with one line
        self.link = link
        link.start()
        self.get_logger().info(f"VESC port {c.port} open ({c.mode} mode)")

    def enable_motion(self) -> None:
        self.link.enabled = True

    def safe_stop(self) -> None:
        if self.link is not None:
            self.link.enabled = False
            self.link.stop_now()

    def close_device(self) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None

    def _make_ros_interfaces(self) -> None:
        self._odom_pub = self.create_publisher(Odometry, "odom", sensor_qos())
        self._imu_pub = self.create_publisher(Imu, "imu", sensor_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self.create_subscription(Twist, "cmd_vel", self._on_cmd_vel, command_qos())
        self.create_service(SetBool, "estop", self._on_estop)
        if not self.config.imu and self.config.yaw_from_imu:
            self.create_subscription(Imu, "imu", self._on_imu_msg, sensor_qos())
        self.create_timer(1.0 / self.config.diagnostics_hz, self._publish_diagnostics)
        self._ros_ready = True

    def _refuse(self, reason: str) -> None:
        self.refused += 1
        self.last_refusal = reason
        self.get_logger().warning(f"cmd_vel refused: {reason}", throttle_duration_sec=1.0)

    def _on_cmd_vel(self, msg: Twist) -> None:
        velocity = twist_to_array(msg)
        speed, yaw_rate = float(velocity[0]), float(velocity[5])
        reason = non_finite_reason((speed, yaw_rate))
        link = self.link
        if reason is None and (link is None or not self.motion_enabled):
            reason = "the node is not active"
        elif reason is None and link.estopped:
            reason = "e-stop engaged"
        if reason is not None:
            self._refuse(reason)
            return
        # Twist has no stamp: its freshness is its arrival, which the link's watchdog bounds
        self.steering = steering_for(
            speed, yaw_rate, self.config.wheelbase, self.config.max_steering, self.steering
        )
        link.command(
            motor_setpoint(speed, self.geometry, self.motor),
            servo_position(self.steering, self.servo),
        )

    def _refuse_sample(self, name: str, values, bound: float) -> bool:
        """True (and counted, logged) if this sample must not reach any state."""
        if self.samples.admit(name, values, bound):
            return False
        self.get_logger().warning(
            f"sample refused: {self.samples.last_refusal}", throttle_duration_sec=1.0
        )
        return True

    # called from the link's thread
    def _on_link_fault(self, message: str) -> None:
        if self.context.ok() and self._ros_ready:
            self._publish_diagnostics()  # at once: the ERROR must not wait for the timer

    def _on_values(self, values: proto.Values, servo: float, stamp: float) -> None:
        if not self.context.ok():
            return
        if self._refuse_sample("erpm", (values.erpm,), MAX_ERPM_READING):
            return
        self.last_values = values
        odo = self.odometry
        if self.link is not None and self.link.reconnects != self._reconnects_seen:
            # a VESC that comes back may have rebooted: its tachometer no longer continues
            self._reconnects_seen = self.link.reconnects
            odo.restart_tachometer()
            self._last_stamp = None
        c = self.config
        imu = self._imu_state  # (monotonic time, gyro z, roll, pitch) or None
        fresh = imu is not None and time.monotonic() - imu[0] < IMU_FRESH
        yaw_rate = imu[1] if fresh and c.yaw_from_imu else None
        self.heading_source = "imu" if yaw_rate is not None else "steering"
        # a gap in the telemetry (a silent VESC) turns the heading by at most IMU_FRESH of yaw
        dt = min(stamp - self._last_stamp, IMU_FRESH) if self._last_stamp is not None else 0.0
        self._last_stamp = stamp
        odo.update(
            values.erpm, values.tachometer, steering_of_servo(servo, self.servo), yaw_rate, dt
        )
        # the odometry's yaw, tilted as the IMU sees the car (a flipped car shows it)
        roll, pitch = (imu[2], imu[3]) if fresh else (0.0, 0.0)
        quat = quaternion(roll, pitch, odo.yaw)
        self._odom_pub.publish(
            odometry_msg(
                (odo.x, odo.y, 0.0),
                quat,
                (odo.speed, 0.0, 0.0, 0.0, 0.0, odo.yaw_rate),
                stamp,
                c.odom_frame,
                c.base_frame,
            )
        )

    def _on_imu(self, imu: proto.ImuData, stamp: float) -> None:
        if not self.context.ok():
            return
        if (
            self._refuse_sample("imu gyro", imu.gyro, MAX_GYRO)
            or self._refuse_sample("imu accel", imu.accel, MAX_ACCEL)
            or self._refuse_sample("imu roll/pitch/yaw", imu.rpy, MAX_ANGLE)
        ):
            return
        roll, pitch, yaw = imu.rpy
        self._imu_state = (time.monotonic(), imu.gyro[2], roll, pitch)
        self._imu_pub.publish(
            imu_msg(quaternion(roll, pitch, yaw), imu.gyro, imu.accel, stamp, self.config.imu_frame)
        )

    def _on_imu_msg(self, msg: Imu) -> None:
        # another node's IMU (robot-rl-realsense-imu): no orientation, so the tilt comes from
        # the gravity direction, low-passed so that a bump does not read as a flip
        accel = np.array(
            [msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z]
        )
        if self._refuse_sample("imu topic accel", accel, MAX_ACCEL) or self._refuse_sample(
            "imu topic yaw rate", (msg.angular_velocity.z,), MAX_GYRO
        ):
            return
        self._gravity = accel if self._gravity is None else 0.9 * self._gravity + 0.1 * accel
        roll, pitch = tilt_from_accel(self._gravity)
        self._imu_state = (time.monotonic(), msg.angular_velocity.z, roll, pitch)

    def _on_estop(self, request, response):
        if self.link is None:
            response.success, response.message = False, "not configured"
            return response
        self.link.estopped = bool(request.data)
        if self.link.estopped:
            self.link.stop_now()
        self.get_logger().warning(f"e-stop {'engaged' if request.data else 'released'}")
        response.success = True
        response.message = "engaged" if request.data else "released"
        return response

    def _publish_diagnostics(self) -> None:
        link = self.link
        c = self.config
        if link is None:
            level, message, mode = DiagnosticStatus.WARN, "not configured", "unconfigured"
        elif link.loop.recent_fault(max(FAULT_SHOWN_S, 3.0 / c.diagnostics_hz)):
            level, message, mode = DiagnosticStatus.ERROR, link.loop.last_fault, "fault"
        elif link.stalled:
            level, mode = DiagnosticStatus.ERROR, "stalled"
            message = "the vesc-link thread hangs: motor zeroed by the watchdog"
        elif link.estopped:
            level, message, mode = DiagnosticStatus.ERROR, "e-stop engaged", "e-stop"
        elif not link.connected:
            level, mode = DiagnosticStatus.ERROR, "disconnected"
            message = f"no VESC on {c.port} ({link.last_error})"
        elif link.silent:
            level, mode = DiagnosticStatus.ERROR, "silent"
            message = f"the VESC on {c.port} does not answer: motor zeroed"
        elif link.applied[0] == 0.0 and link.applied[1] == c.servo_centre:
            level, message, mode = (
                DiagnosticStatus.WARN,
                "stopped (watchdog or no command yet)",
                "stopped",
            )
        else:
            level, message, mode = DiagnosticStatus.OK, "following cmd_vel", "driving"
        values = self.last_values
        if (
            link is not None
            and mode not in ("fault", "stalled")
            and link.connected
            and not link.silent
            and values is not None
        ):
            if values.fault:  # the VESC reports it (and has cut the motor itself)
                level = DiagnosticStatus.ERROR
                message = f"VESC fault {proto.fault_name(values.fault)} ({values.fault})"
            elif values.input_voltage < c.low_voltage:
                level = max(level, DiagnosticStatus.WARN)
                message = (
                    f"battery at {values.input_voltage:.1f} V, below {c.low_voltage:g} V; {message}"
                )
        odo = self.odometry
        fields = {
            "mode": mode,
            "motion_enabled": str(self.motion_enabled),
            "estop": str(bool(link and link.estopped)),
            "motor_setpoint": f"{link.applied[0]:g}" if link else "",
            "servo": f"{link.applied[1]:.3f}" if link else "",
            "erpm": f"{values.erpm:g}" if values else "",
            "tachometer": str(values.tachometer) if values else "",
            "input_voltage": f"{values.input_voltage:.1f}" if values else "",
            "fault_code": str(values.fault) if values else "",
            "heading_source": self.heading_source,
            "speed": f"{odo.speed:.3f}",
            "distance": f"{odo.distance:.3f}",
            "crc_errors": str(link.crc_errors if link else 0),
            "reconnects": str(link.reconnects if link else 0),
            "watchdog_stops": str(link.watchdog_stops if link else 0),
            "refused": str(self.refused),
            "last_refusal": self.last_refusal,
            "cycles": str(link.cycles if link else 0),
            "thread_faults": str(link.loop.faults if link else 0),
            "last_fault": link.loop.last_fault if link else "",
            "malformed_answers": str(link.malformed if link else 0),
            **self.samples.fields(),
        }
        self._diag_pub.publish(
            diagnostic_array(self, level, message, f"vesc/{c.port}", fields, time.time())
        )


main = main_for(VescDriver)

if __name__ == "__main__":
    main()
