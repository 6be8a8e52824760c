"""The car's MuJoCo twin: a CarBackend over ``models/car.xml`` (RC car in a walled track).

It speaks the readings and commands of ``robot_rl.envs.backend`` so that a task cannot tell it
from the real car, except that it can ``place_car`` and that ``pose`` is the true pose (twin
only: placement, experts, evaluation). What the car itself knows is ``odom_pose``: wheel
odometry (the drive's wheel speed, as a VESC's ERPM gives it) turned by the IMU's yaw rate,
integrated every physics step, so it drifts when the wheels slip or the car is knocked sideways;
and ``imu_accel_peak``, the accelerometer sample of largest horizontal magnitude since the last
read (a real IMU streams far faster than the policy: its driver keeps the peak of a period).

The policy-rate command is turned into actuation here: steering becomes per-wheel
Ackermann angles for the steering servos, speed becomes the set-point of the wheel velocity servo
(an open differential, see the tendon in the XML) whose torque limit bounds the acceleration.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from robot_rl.envs.backend import Command, Reading
from robot_rl.sim.rendering import FrameRenderer, TwinRendering, overview_camera

MODEL_XML = Path(__file__).parent / "models" / "car.xml"

MAX_SPEED = 5.0
"""Hard speed limit in m/s (the real car's ESC limit plays this role)."""
MAX_STEERING = 0.5
"""Hard steering limit in rad (the virtual centre wheel of the bicycle model)."""
WHEEL_RADIUS = 0.05
WHEELBASE = 0.26
TRACK_WIDTH = 0.2
FLIP_UP_Z = 0.3
"""The car counts as flipped when its up-axis has a world z below this (~73 degrees of tilt)."""
REST_HEIGHT = 0.06
"""Chassis origin height with the wheels on the floor."""


def ackermann_angles(steering: float) -> tuple[float, float]:
    """Left and right wheel angles for a bicycle-model steering angle: the inner wheel turns
    more, so that both wheels roll around the same centre."""
    if abs(steering) < 1e-6:
        return steering, steering
    turn_radius = WHEELBASE / np.tan(steering)  # signed: > 0 for a left turn
    left = np.arctan(WHEELBASE / (turn_radius - TRACK_WIDTH / 2))
    right = np.arctan(WHEELBASE / (turn_radius + TRACK_WIDTH / 2))
    return float(left), float(right)


class CarTwin(TwinRendering):
    """In-process twin of the RC car; ``advance()`` integrates one control period."""

    is_simulated = True
    camera_names = ("front",)
    mount_frames = (("base", "body", "car"),)
    """The camera rides on the car's body: the odometry's child frame (``base``)."""

    def __init__(
        self,
        cameras: tuple[str, ...] = (),
        image_size: int = 64,
        control_hz: float = 10.0,
        seed: int | None = None,
    ):
        unknown = set(cameras) - set(self.camera_names)
        if unknown:
            raise ValueError(f"unknown car cameras {sorted(unknown)}; have {self.camera_names}")
        self.model = mujoco.MjModel.from_xml_path(str(MODEL_XML))
        self.data = mujoco.MjData(self.model)
        self.control_hz = float(control_hz)
        self._substeps = max(1, round(1.0 / (self.control_hz * self.model.opt.timestep)))
        self.cameras = tuple(cameras)
        self.image_size = int(image_size)
        # The twin itself is deterministic; the seed is accepted for the factory's signature.
        self.seed = seed
        model = self.model
        self._drive = model.actuator("drive").id
        self._steer = (model.actuator("steer_fl").id, model.actuator("steer_fr").id)
        adr = {name: model.sensor(name).adr[0] for name in ("imu_accel", "imu_gyro", "velocity")}
        self._sensor = {name: slice(a, a + 3) for name, a in adr.items()}
        walls = [model.geom(i).name.startswith("wall") for i in range(model.ngeom)]
        self._is_wall = np.array(walls)
        self._collided = False
        self._drive_tendon = model.tendon("drive").id
        self._accel_peak = np.zeros(3)
        size = self.image_size
        self._renderer = mujoco.Renderer(model, size, size) if self.cameras else None
        # Videos look down on the whole track from above its centre.
        self._video = FrameRenderer(model, overview_camera((0.0, 0.0, 0.0), 11.0, -70.0))
        mujoco.mj_forward(model, self.data)
        self._odom = self._true_pose()

    def read(self) -> Reading:
        d = self.data
        x, y = d.qpos[4:6]
        up_z = 1 - 2 * (x * x + y * y)
        sensors = d.sensordata
        velocity = sensors[self._sensor["velocity"]]
        gyro = sensors[self._sensor["imu_gyro"]]
        reading = {
            "pose": self._true_pose(),
            "velocity": np.array([velocity[0], velocity[1], gyro[2]]),
            "imu_accel": sensors[self._sensor["imu_accel"]].copy(),
            "imu_gyro": gyro.copy(),
            "collision": np.array([float(self._collided or self._touching_wall())]),
            "odom_pose": np.array([*self._odom[:2], np.angle(np.exp(1j * self._odom[2]))]),
            "imu_accel_peak": self._accel_peak.copy(),
            "flipped": np.array([float(up_z < FLIP_UP_Z)]),
        }
        if self._renderer is not None:
            for camera in self.cameras:
                self._renderer.update_scene(d, camera=camera)
                reading[f"image/{camera}"] = self._renderer.render()
        return reading

    def send(self, command: Command) -> None:
        speed = float(np.asarray(command["speed"], np.float64).reshape(-1)[0])
        steering = float(np.asarray(command["steering"], np.float64).reshape(-1)[0])
        if not (np.isfinite(speed) and np.isfinite(steering)):
            raise ValueError(f"non-finite car command refused: {command}")
        speed = float(np.clip(speed, -MAX_SPEED, MAX_SPEED))
        steering = float(np.clip(steering, -MAX_STEERING, MAX_STEERING))
        self.data.ctrl[self._drive] = speed / WHEEL_RADIUS
        left, right = ackermann_angles(steering)
        self.data.ctrl[self._steer[0]] = left
        self.data.ctrl[self._steer[1]] = right

    def advance(self) -> None:
        # Contacts are checked every physics step: at 4 m/s the car can hit a wall and bounce
        # off within one control period, and that must still count as a collision.
        collided, peak = False, np.zeros(3)
        dt = self.model.opt.timestep
        for _ in range(self._substeps):
            mujoco.mj_step(self.model, self.data)
            collided = collided or self._touching_wall()
            accel = self.data.sensordata[self._sensor["imu_accel"]]
            if np.hypot(accel[0], accel[1]) > np.hypot(peak[0], peak[1]):
                peak = accel.copy()
            speed = self.data.ten_velocity[self._drive_tendon] * WHEEL_RADIUS
            yaw_rate = self.data.sensordata[self._sensor["imu_gyro"]][2]
            heading = self._odom[2] + 0.5 * yaw_rate * dt
            self._odom += (
                speed * np.cos(heading) * dt,
                speed * np.sin(heading) * dt,
                yaw_rate * dt,
            )
        self._collided = collided
        self._accel_peak = peak

    def place_car(self, x: float, y: float, yaw: float) -> None:
        """Put the car down at a pose; its odometry keeps the drift it had (it only knows
        where it was put relative to where it believes it was)."""
        drift = self._odom - self._true_pose()
        d = self.data
        d.qpos[:] = self.model.qpos0
        d.qpos[:3] = (x, y, REST_HEIGHT)
        d.qpos[3:7] = (np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2))
        d.qvel[:] = 0.0
        d.ctrl[:] = 0.0
        d.act[:] = 0.0
        mujoco.mj_forward(self.model, d)
        self._collided = False
        self._accel_peak = np.zeros(3)
        self._odom = self._true_pose() + drift

    def _true_pose(self) -> np.ndarray:
        w, x, y, z = self.data.qpos[3:7]
        yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        return np.array([self.data.qpos[0], self.data.qpos[1], yaw])

    def _touching_wall(self) -> bool:
        d = self.data
        return d.ncon > 0 and bool(self._is_wall[d.contact.geom[: d.ncon]].any())


def car_twin_model(task) -> mujoco.MjModel:
    """The car's MuJoCo model (the track is the same for every car task)."""
    return mujoco.MjModel.from_xml_path(str(MODEL_XML))


def make_car_twin(task, seed: int | None = None) -> CarTwin:
    """The twin for a car task: its cameras at its image size, advancing at its control rate."""
    return CarTwin(
        cameras=tuple(task.cameras),
        image_size=task.image_size,
        control_hz=task.control_hz,
        seed=seed,
    )
