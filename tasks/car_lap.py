"""car_lap: an RC car learns to drive laps fast, FastRLAP-style, on the real car and the twin.

The checkpoints come from one slow lap a person drives (``robot-rl record-lap``; ``--checkpoints
FILE``; the twin's default ``car_lap_checkpoints/twin_track.json``); the policy is conditioned on
the next two and rewarded for progress towards the current one. A crash (IMU impact, flip) or
getting stuck ends the episode; the reset recovers alone (``robot_rl.resets.car_recovery``).
Observation, reward and recovery use only what the car knows (odometry pose, speeds, IMU,
camera); the twin's true pose only places the car and rights it after a flip.
State (13, float32, car frame): 0-2 forward, lateral m/s, yaw rate rad/s; 3-4 IMU acceleration
x, y in g; 5-7 next checkpoint unit direction x, y and distance / 5 m (clipped at 10 m); 8-10 the
one after; 11-12 the previous applied action, normalised. Action (2, [-1, 1]): speed
``min_speed`` .. ``max_speed`` m/s; steering -0.5 rad (right) .. +0.5 rad (left).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import gymnasium as gym
import numpy as np

from robot_rl.data.lap_checkpoints import checkpoints_from_lap, load_checkpoints
from robot_rl.envs.backend import Backend, Command, Reading
from robot_rl.envs.task import Task, register_task
from robot_rl.resets.car_recovery import StuckDetector, crashed, odometry_pose, recover

__all__ = ["DEFAULT_CHECKPOINTS", "CarLapTask", "checkpoints_from_lap"]

TWIN_TRACK_CHECKPOINTS = Path(__file__).parent / "car_lap_checkpoints" / "twin_track.json"
"""The twin track's checkpoints: one slow lap driven in the twin through its ROS 2 node and
recorded by ``robot-rl record-lap`` (how: the file's own "how" entry); a real car records its
own lap and passes ``--checkpoints FILE``."""
DEFAULT_CHECKPOINTS: tuple[tuple[float, float], ...] = load_checkpoints(TWIN_TRACK_CHECKPOINTS)

DISTANCE_SCALE = 5.0
MAX_DISTANCE = 10.0


@dataclass
class LapProgress:
    """The mutable side of the frozen task: progress of the current episode and run totals.
    One task instance drives one env at a time."""

    backend: object = None
    target: int = 0
    """The current checkpoint; it carries over episodes, as in FastRLAP."""
    last_reading: dict | None = None
    fresh: bool = True
    prev_distance: float = 0.0
    step_reward: float = 0.0
    lap_done: bool = False
    crash: bool = False
    stuck: bool = False
    steps: int = 0
    lap_start: int = 0
    reached: int = 0
    laps: int = 0
    lap_time: float = 0.0
    last_action: np.ndarray = field(default_factory=lambda: np.zeros(2, np.float32))
    commanded_speed: float = 0.0
    detector: StuckDetector | None = None
    crashes: int = 0
    stucks: int = 0
    recoveries: int = 0


@register_task
@dataclass(frozen=True)
class CarLapTask(Task):
    name = "car_lap"
    robot = "car"
    teleop_axes = ("linear.x", "angular.z")
    recipe = MappingProxyType({"total_steps": 30_000, "demos": 5, "start_steps": 500})
    # A finished lap does not end the episode: practice goes on and the next lap is timed (the
    # time limit truncates). Progress is then a plain reward, not a cost.
    ends_on_success = False

    max_episode_steps: int = 300
    """30 s at 10 Hz: three expert laps, or one lap at a cautious ~1 m/s."""
    max_speed: float = 4.0
    min_speed: float = 0.0
    max_steering: float = 0.5
    checkpoints: tuple[tuple[float, float], ...] = DEFAULT_CHECKPOINTS
    checkpoint_radius: float = 0.8
    """Wider than the corridor's half-width, so driving past a checkpoint always reaches it."""
    checkpoint_bonus: float = 1.0
    crash_penalty: float = 5.0
    _lap: LapProgress = field(default_factory=LapProgress, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.checkpoints) < 3:
            raise ValueError("car_lap needs at least 3 checkpoints (record a demonstration lap)")
        if not 0 < self.max_speed <= 5.0 or self.min_speed > self.max_speed:
            raise ValueError("need 0 < max_speed <= 5 m/s and min_speed <= max_speed")
        if not 0 < self.max_steering <= 0.5:
            raise ValueError("max_steering must be in (0, 0.5] rad")

    @property
    def checkpoint_array(self) -> np.ndarray:
        return np.asarray(self.checkpoints, np.float64)

    def state_space(self) -> gym.spaces.Box:
        return gym.spaces.Box(-np.inf, np.inf, (13,), np.float32)

    def action_space(self) -> gym.spaces.Box:
        return gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def observe(self, reading: Reading) -> dict[str, np.ndarray]:
        lap = self._update(reading)
        cps = self.checkpoint_array
        x, y, yaw = odometry_pose(reading)
        goals = []
        for k in (lap.target, lap.target + 1):
            dx, dy = cps[k % len(cps)] - (x, y)
            c, s = np.cos(yaw), np.sin(yaw)
            local = np.array([c * dx + s * dy, -s * dx + c * dy])
            dist = float(np.hypot(*local))
            goals += [*(local / max(dist, 1e-6)), min(dist, MAX_DISTANCE) / DISTANCE_SCALE]
        accel = reading["imu_accel"][:2] / 9.81
        state = np.concatenate([reading["velocity"], accel, goals, lap.last_action])
        return self.observation(state, reading)

    def to_command(self, action: np.ndarray, reading: Reading) -> tuple[Command, np.ndarray]:
        applied = np.clip(np.asarray(action, np.float32), -1.0, 1.0)
        speed = self.min_speed + (applied[0] + 1) / 2 * (self.max_speed - self.min_speed)
        steering = applied[1] * self.max_steering
        self._lap.last_action = applied.copy()
        self._lap.commanded_speed = float(speed)
        return {"speed": np.array([speed]), "steering": np.array([steering])}, applied.copy()

    def dense_reward(self, reading: Reading) -> float:
        return self._update(reading).step_reward

    def success(self, reading: Reading) -> bool:
        """A lap (every checkpoint in order, by the car's odometry) finished at this step;
        crashes end episodes, so any lap that finishes is crash-free."""
        return self._update(reading).lap_done

    def failure(self, reading: Reading) -> bool:
        """A crash or getting stuck. It terminates rather than truncates: what follows is a
        recovery the policy does not control, so the value after a crash is not that of the
        state the car is left in; bootstrapping through it would tell the critic that hitting
        a wall costs only the penalty."""
        lap = self._update(reading)
        return lap.crash or lap.stuck

    def info(self, reading: Reading) -> dict:
        lap = self._update(reading)
        return {
            "laps": lap.laps,
            "lap_time": lap.lap_time,
            "checkpoints_reached": lap.reached,
            "target_checkpoint": lap.target,
            "crashes": lap.crashes,
            "stuck": lap.stucks,
            "recoveries": lap.recoveries,
        }

    def reset(self, backend: Backend, rng: np.random.Generator) -> None:
        lap = self._lap
        first = lap.backend is not backend
        if first:
            lap.backend = backend
            lap.crashes = lap.stucks = lap.recoveries = 0
            if not backend.is_simulated and self.checkpoints == DEFAULT_CHECKPOINTS:
                # right for the twin's ROS nodes and cells, wrong for any real track: say so
                logging.getLogger(__name__).warning(
                    "car_lap over ROS with the twin track's checkpoints: a real car needs its "
                    "own lap (robot-rl record-lap, then --checkpoints FILE)"
                )
            if backend.is_simulated:
                backend.place_car(*self._random_start(rng))
            lap.target = self._checkpoint_ahead(odometry_pose(backend.read()))
            back_up = False
        else:
            back_up = lap.crash or lap.stuck or crashed(backend.read())
            lap.recoveries += int(back_up)
        recover(backend, self._resume_target, rng, back_up=back_up)
        lap.detector = StuckDetector(backend.control_hz)
        lap.last_reading, lap.fresh = None, True
        lap.crash = lap.stuck = lap.lap_done = False
        lap.steps = lap.lap_start = lap.reached = lap.laps = 0
        lap.lap_time = 0.0
        lap.last_action = np.zeros(2, np.float32)
        lap.commanded_speed = 0.0

    def _random_start(self, rng: np.random.Generator) -> tuple[float, float, float]:
        """A random point near the centreline (the polyline through the checkpoints)."""
        cps = self.checkpoint_array
        k = int(rng.integers(len(cps)))
        a, b = cps[k], cps[(k + 1) % len(cps)]
        heading = np.arctan2(*(b - a)[::-1])
        normal = np.array([-np.sin(heading), np.cos(heading)])
        xy = a + rng.uniform(0.2, 0.8) * (b - a) + rng.uniform(-0.15, 0.15) * normal
        return float(xy[0]), float(xy[1]), float(heading + rng.uniform(-0.2, 0.2))

    def _resume_target(self, reading: Reading) -> np.ndarray:
        """The current checkpoint during a recovery, skipping it once the car has passed it
        (a car still rolling from the last episode may coast by): resuming towards a point
        behind the car would turn it into the wall."""
        lap, cps = self._lap, self.checkpoint_array
        position = odometry_pose(reading)[:2]
        target, after = cps[lap.target], cps[(lap.target + 1) % len(cps)]
        close = np.linalg.norm(target - position) < self.checkpoint_radius
        if close or np.linalg.norm(after - position) < np.linalg.norm(after - target):
            lap.target = (lap.target + 1) % len(cps)
        return cps[lap.target]

    def _checkpoint_ahead(self, pose: np.ndarray) -> int:
        cps = self.checkpoint_array
        k = int(np.argmin(np.linalg.norm(cps - pose[:2], axis=1)))
        heading = np.array([np.cos(pose[2]), np.sin(pose[2])])
        return (k + 1) % len(cps) if np.dot(cps[k] - pose[:2], heading) < 0 else k

    def _update(self, reading: Reading) -> LapProgress:
        """Advance the episode's progress once per new reading (every hook calls this)."""
        lap = self._lap
        if reading is lap.last_reading:
            return lap
        lap.last_reading = reading
        cps = self.checkpoint_array
        position = odometry_pose(reading)[:2]
        distance = float(np.linalg.norm(cps[lap.target] - position))
        lap.step_reward, lap.lap_done = 0.0, False
        if lap.fresh:  # the reset's reading: a baseline for progress, no reward
            lap.fresh = False
            if distance < self.checkpoint_radius:  # reached while recovering: move on quietly
                lap.target = (lap.target + 1) % len(cps)
                distance = float(np.linalg.norm(cps[lap.target] - position))
            lap.prev_distance = distance
            return lap
        lap.steps += 1
        lap.step_reward = lap.prev_distance - distance
        if distance < self.checkpoint_radius:
            lap.step_reward += self.checkpoint_bonus
            lap.reached += 1
            lap.target = (lap.target + 1) % len(cps)
            distance = float(np.linalg.norm(cps[lap.target] - position))
            if lap.reached % len(cps) == 0:
                lap.laps += 1
                lap.lap_done = True
                lap.lap_time = (lap.steps - lap.lap_start) / lap.detector.control_hz
                lap.lap_start = lap.steps
        lap.prev_distance = distance
        lap.crash = crashed(reading)
        lap.stuck = not lap.crash and lap.detector.update(reading, lap.commanded_speed)
        lap.crashes += int(lap.crash)
        lap.stucks += int(lap.stuck)
        if lap.crash or lap.stuck:
            lap.step_reward -= self.crash_penalty
        return lap
