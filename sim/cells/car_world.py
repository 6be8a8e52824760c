"""The simulated car cell's physics, without ROS: the car twin (``sim/car_twin.py``) stepped on
the wall clock in a thread of its own, behind a VESC on a pseudo-terminal (``vesc_peer``), so
that the real VESC node drives it as it drives a car.

``TwinDrivetrain`` is the peer's model: COMM_SET_RPM / COMM_SET_DUTY become the twin's wheel
speed and COMM_SET_SERVO_POS its steering angle, through the same gear ratio, wheel radius,
motor poles and servo calibration the VESC node is configured with; COMM_GET_VALUES answers the
ERPM of the twin's forward speed and a tachometer that counts the distance it rolled (six steps
per electrical turn), COMM_GET_IMU_DATA the twin's IMU. Nothing else leaves the world: the true
pose goes to the cell's ``/sim/`` topics (its camera, evaluation), never to the car's topics.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import numpy as np

from robot_rl.drivers.car import vesc_protocol as proto
from robot_rl.drivers.car.vesc_kinematics import CarGeometry


@dataclass(frozen=True)
class Calibration:
    """What the VESC node must be configured with to drive this car (``car_sim.yaml``)."""

    geometry: CarGeometry
    servo_centre: float = 0.5
    servo_per_radian: float = -0.7
    duty_per_mps: float = 0.05


class TwinDrivetrain:
    """The VESC peer's model over a car twin; thread-safe (peer thread and physics thread)."""

    def __init__(self, twin, calibration: Calibration, lock: threading.Lock):
        self.twin = twin
        self.calibration = calibration
        self._lock = lock
        self.speed = 0.0
        self.steering = 0.0
        self.tachometer = 0.0
        self._forward = 0.0
        self._accel_peak: np.ndarray | None = None
        self._turned = np.zeros(3)  # the gyro integrated since the previous IMU answer (rad)
        self._turning_time = 0.0
        self.pace = 1.0
        """Simulated seconds per wall second of late (1 while the physics keeps up). A world
        that falls behind the wall clock (a loaded machine) moves slower in wall time than in
        its own: the rates it reports (ERPM, the gyro) are per wall second, as a car's are, so
        that the VESC node, integrating them over wall time, finds where the car really went
        (the tachometer counts distance and needs no such care)."""

    def apply(self, kind: str, value: float) -> None:
        c = self.calibration
        if kind == "rpm":
            self.speed = value / c.geometry.erpm_per_mps
        elif kind == "duty":
            self.speed = value / c.duty_per_mps
        elif kind == "brake" or (kind == "current" and value == 0.0):
            self.speed = 0.0
        elif kind == "servo":
            self.steering = (value - c.servo_centre) / c.servo_per_radian
        with self._lock:
            self.twin.send({"speed": np.array([self.speed]), "steering": np.array([self.steering])})

    def rolled(self, forward_speed: float, dt: float, accel_peak: np.ndarray, gyro=None) -> None:
        """The physics advanced ``dt`` at ``forward_speed``: the tachometer counts it, the
        accelerometer's peak of the step is kept for the next IMU answer, and so is the rotation
        (``gyro`` rad/s) it turned."""
        self._forward = forward_speed
        with self._lock:
            if gyro is not None:
                self._turned += np.asarray(gyro, np.float64) * dt
                self._turning_time += dt
            kept = self._accel_peak
            if kept is None or np.hypot(*accel_peak[:2]) >= np.hypot(*kept[:2]):
                self._accel_peak = np.array(accel_peak)
        self.tachometer += forward_speed * dt / self.calibration.geometry.metres_per_tach_count

    def values(self) -> proto.Values:
        erpm = self._forward * self.pace * self.calibration.geometry.erpm_per_mps
        tach = round(self.tachometer)
        return proto.Values(
            erpm=erpm,
            duty=self.speed * self.calibration.duty_per_mps,
            tachometer=tach,
            tachometer_abs=abs(tach),
            input_voltage=11.1,
        )

    def imu(self) -> proto.ImuData:
        """The twin's IMU; the acceleration is the sample of largest horizontal magnitude since
        the previous answer (a real IMU samples far faster than it is polled, and an impact
        between two polls must still reach the crash detector, as on the twin node), and the
        angular rate the mean since then (a real IMU filters its samples: polled every 20 ms or,
        on a loaded machine, every 100, a spin during a crash must still turn the odometry's
        heading by what the car turned)."""
        with self._lock:
            reading = self.twin.read()
            w, x, y, z = self.twin.data.qpos[3:7]
            peak, self._accel_peak = self._accel_peak, None
            turned, elapsed = self._turned, self._turning_time
            self._turned, self._turning_time = np.zeros(3), 0.0
        accel = reading["imu_accel"] if peak is None else peak
        roll = math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
        pitch = math.asin(max(-1.0, min(1.0, 2 * (w * y - z * x))))
        yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        gyro = turned / elapsed if elapsed > 0 else np.asarray(reading["imu_gyro"], np.float64)
        gyro = gyro * self.pace  # per wall second
        return proto.ImuData((roll, pitch, yaw), tuple(accel), tuple(gyro))


PACE_WINDOW = 0.2
"""Wall seconds over which the physics' pace is measured (``TwinDrivetrain.pace``)."""


class CarWorld:
    """The twin, paced to wall time at ``physics_hz`` (``realtime: false``: as fast as it
    goes), its VESC peer on ``port``, and the ground truth for the cell's own topics."""

    def __init__(
        self,
        port: str,
        calibration: Calibration,
        start_pose=(0.0, -3.25, 0.0),
        physics_hz: float = 100.0,
        realtime: bool = True,
    ):
        from robot_rl.sim.car_twin import CarTwin
        from robot_rl.sim.cells.vesc_peer import VescPeer

        self.twin = CarTwin(control_hz=physics_hz)
        self.start_pose = tuple(float(v) for v in start_pose)
        self.twin.place_car(*self.start_pose)
        self.lock = threading.Lock()
        self.drivetrain = TwinDrivetrain(self.twin, calibration, self.lock)
        self.peer = VescPeer(port, self.drivetrain)
        self.period = 1.0 / physics_hz
        self.realtime = realtime
        self.steps = 0
        self.collisions = 0
        self.error: BaseException | None = None
        self._collided = False
        self._running = False
        self._thread: threading.Thread | None = None
        self._started: float | None = None

    def start(self) -> None:
        self.peer.start()
        self._running = True
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="car-world", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._running = False
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        self.peer.close()
        self.twin.close()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def realtime_factor(self) -> float:
        if self._started is None:
            return 0.0
        elapsed = time.monotonic() - self._started
        return self.steps * self.period / elapsed if elapsed > 0 else 0.0

    def _run(self) -> None:
        due = window_start = time.monotonic()
        window_steps = 0
        try:
            while self._running:
                with self.lock:
                    self.twin.advance()
                    reading = self.twin.read()
                self.steps += 1
                peak = reading.get("imu_accel_peak", reading["imu_accel"])
                self.drivetrain.rolled(
                    float(reading["velocity"][0]), self.period, peak, reading["imu_gyro"]
                )
                hit = bool(reading["collision"][0] > 0.5)
                self.collisions += int(hit and not self._collided)
                self._collided = hit
                now = time.monotonic()
                window_steps += 1
                if self.realtime and now - window_start >= PACE_WINDOW:
                    pace = min(1.0, window_steps * self.period / (now - window_start))
                    self.drivetrain.pace = 0.5 * self.drivetrain.pace + 0.5 * pace
                    window_start, window_steps = now, 0
                due = max(due + self.period, now) if self.realtime else now
                time.sleep(max(0.0, due - now))
        except BaseException as error:  # reported on /diagnostics; the car stops answering
            self.error = error

    def truth(self) -> tuple[float, np.ndarray, bool]:
        """(wall stamp, qpos, touching a wall) as the world is now."""
        with self.lock:
            return time.time(), np.array(self.twin.data.qpos), self._collided
