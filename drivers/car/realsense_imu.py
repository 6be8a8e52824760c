"""The IMU of a RealSense D435i (or D455) as ``sensor_msgs/Imu``: the motion module's gyroscope
and accelerometer streams through librealsense, in the car's body frame (``rotation``).

    robot-rl-realsense-imu --ros-args -r __ns:=/car -p serial:="'123456789012'"

One message per gyroscope sample, with the accelerometer sample of largest horizontal magnitude
since the previous one (the crash detector must see every impact), stamped on the host's clock;
orientation unknown (REP 145). ``/diagnostics`` gives the rates; silence for ``stale_after`` is
an error. A sample that is not finite or beyond the sensor's range is refused and counted; an
exception in librealsense's callback is reported (``thread_faults``), never lost.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from sensor_msgs.msg import Imu

from robot_rl.drivers.cameras.image_pipeline import DeviceClock
from robot_rl.drivers.cameras.realsense import connected_devices, find_device, host_stamp
from robot_rl.drivers.car.configs import RealSenseImuConfig
from robot_rl.drivers.supervision import FAULT_SHOWN_S, FaultLog, SensorGate
from robot_rl.ros.convert import diagnostic_array, imu_msg
from robot_rl.ros.node_base import DeviceNode, declare_config, main_for
from robot_rl.ros.qos import DIAGNOSTICS_DEPTH, sensor_qos

MAX_GYRO = np.radians(2000.0) * 1.01
"""rad/s: the D435i/D455 gyroscope's range (BMI055: 2000 deg/s), with room for rounding."""
MAX_ACCEL = 16.0 * 9.80665 * 1.01
"""m/s^2: the accelerometer's widest range (16 g)."""


class MotionStream:
    """The motion sensor of one device, started with a gyro and an accel profile; calls
    ``on_sample(gyro, accel, stamp)`` (body frame) from librealsense's thread for each gyro
    sample, with the accelerometer sample the module docstring says."""

    def __init__(
        self,
        config: RealSenseImuConfig,
        devices: Callable[[], Sequence],
        on_sample: Callable[[np.ndarray, np.ndarray, float], None],
    ):
        self.config = config
        self._devices = devices
        self._on_sample = on_sample
        self._sensor = None
        self._accel: np.ndarray | None = None
        self._accel_peak: np.ndarray | None = None
        self._rotation = np.asarray(config.rotation, float).reshape(3, 3)
        self._clock = DeviceClock()
        self._lock = threading.Lock()
        self.gyro_samples = 0
        self.accel_samples = 0
        self.last_sample: float | None = None
        self.serial = config.serial or "any"
        self.samples = SensorGate()
        self.fault_log = FaultLog("realsense-imu callback")

    def open(self) -> None:
        import pyrealsense2 as rs

        device = find_device(list(self._devices()), self.config.serial, RuntimeError, RuntimeError)
        self.serial = device.get_info(rs.camera_info.serial_number)
        c = self.config
        for sensor in device.query_sensors():
            profiles = {}
            for p in sensor.get_stream_profiles():
                kind, rate = p.stream_type(), p.fps()
                if p.format() != rs.format.motion_xyz32f:
                    continue
                if kind == rs.stream.gyro and rate == round(c.gyro_rate):
                    profiles["gyro"] = p
                elif kind == rs.stream.accel and rate == round(c.accel_rate):
                    profiles["accel"] = p
            if len(profiles) == 2:
                sensor.open([profiles["gyro"], profiles["accel"]])
                sensor.start(self._on_frame)
                self._sensor = sensor
                return
        raise RuntimeError(
            f"RealSense {self.serial} has no IMU streaming gyro at "
            f"{c.gyro_rate:g} Hz and accel at {c.accel_rate:g} Hz (a D435i "
            "offers gyro 200/400, accel 63/250)"
        )

    def _on_frame(self, frame) -> None:
        try:
            self._handle(frame)
        except Exception as error:  # librealsense's thread would swallow it: report it here
            self.fault_log.record(error, "sample dropped")

    def _handle(self, frame) -> None:
        import pyrealsense2 as rs

        arrival = time.time()
        data = frame.as_motion_frame().get_motion_data()
        value = np.array([data.x, data.y, data.z])
        accel = frame.get_profile().stream_type() == rs.stream.accel
        name, bound = ("accel", MAX_ACCEL) if accel else ("gyro", MAX_GYRO)
        if not self.samples.admit(name, value, bound):
            return  # refused before it reaches the peak, the clock or a message
        if accel:
            body = self._rotation @ value
            with self._lock:
                self._accel = body
                kept = self._accel_peak
                if kept is None or np.hypot(*body[:2]) >= np.hypot(*kept[:2]):
                    self._accel_peak = body
                self.accel_samples += 1
            return
        stamp = host_stamp(frame, self._clock, arrival)
        with self._lock:
            accel = self._accel if self._accel_peak is None else self._accel_peak
            self._accel_peak = None
            self.gyro_samples += 1
            self.last_sample = time.monotonic()
        if accel is not None:  # the first message waits for an accelerometer sample
            self._on_sample(self._rotation @ value, accel, stamp)

    def close(self) -> None:
        sensor, self._sensor = self._sensor, None
        if sensor is not None:
            sensor.stop()
            sensor.close()


class RealSenseImuNode(DeviceNode):
    """See the module docstring."""

    config_class = RealSenseImuConfig

    def __init__(self, devices: Callable[[], Sequence] | None = None, **kwargs):
        super().__init__("realsense_imu", **kwargs)

        self.config = declare_config(self, RealSenseImuConfig)
        self._devices = devices or connected_devices
        self.stream: MotionStream | None = None
        self.published = 0
        self._pub = self.create_publisher(Imu, "imu", sensor_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_DEPTH)
        self.create_timer(1.0 / self.config.diagnostics_hz, self._publish_diagnostics)

    def open_device(self) -> None:
        stream = MotionStream(self.config, self._devices, self._on_sample)
        stream.open()  # raises with one line
        self.stream = stream
        self.get_logger().info(f"streaming the IMU of RealSense {stream.serial}")

    def close_device(self) -> None:
        if self.stream is not None:
            self.stream.close()
            self.stream = None

    def _on_sample(self, gyro: np.ndarray, accel: np.ndarray, stamp: float) -> None:
        if not self.context.ok():
            return
        msg = imu_msg((1.0, 0.0, 0.0, 0.0), gyro, accel, stamp, self.config.frame_id)
        msg.orientation_covariance[0] = -1.0  # no orientation estimate (REP 145)
        self._pub.publish(msg)
        self.published += 1

    def _publish_diagnostics(self) -> None:
        s = self.stream
        age = None if s is None or s.last_sample is None else time.monotonic() - s.last_sample
        if s is None:
            level, message = DiagnosticStatus.WARN, "not configured"
        elif age is None or age > self.config.stale_after:
            level, message = (
                DiagnosticStatus.ERROR,
                "no IMU samples" if age is None else f"no IMU sample for {age:.1f} s",
            )
        else:
            level, message = DiagnosticStatus.OK, "streaming"
        fault = (
            s.fault_log.recent(max(FAULT_SHOWN_S, 3.0 / self.config.diagnostics_hz)) if s else None
        )
        if fault is not None:
            level, message = DiagnosticStatus.ERROR, fault
        values = {
            "serial": s.serial if s else self.config.serial,
            "gyro_samples": str(s.gyro_samples if s else 0),
            "accel_samples": str(s.accel_samples if s else 0),
            "published": str(self.published),
            **(s.samples.fields() if s else {}),
            **(s.fault_log.fields() if s else {}),
        }
        self._diag_pub.publish(
            diagnostic_array(
                self, level, message, f"realsense-imu/{values['serial']}", values, time.time()
            )
        )


main = main_for(RealSenseImuNode)

if __name__ == "__main__":
    main()
