"""Scripted driver for car_lap: pure pursuit on the twin track's centreline.

Racing mode brakes for the turns ahead (speed from the curvature within the braking distance);
demonstration mode drives a slow, steady lap, the one that FastRLAP's operator drives once to
record the checkpoints (``record_demo_lap``). Run as a script it prints the checkpoints of the
default track for ``tasks/car_lap.py``.
"""

from __future__ import annotations

import numpy as np

from robot_rl.sim.car_track import DEFAULT_TRACK, centreline
from robot_rl.sim.car_twin import WHEELBASE
from robot_rl.sim.experts import register_expert

LATERAL_ACCEL = 4.0
"""Cornering limit the expert plans with (m/s^2), well inside the tyres' grip."""
BRAKING = 3.0
"""Deceleration the expert plans with (m/s^2)."""
HEADING_SLOW = 0.35
"""Angle to the look-ahead point (rad) beyond which the expert slows down to turn."""


@register_expert("car_lap")
class CarLapExpert:
    def __init__(self, task, noise: float = 0.0, demo_speed: float | None = None):
        self.task = task
        self.noise = noise
        self.demo_speed = demo_speed
        """Drive at this constant speed (the slow demonstration lap) instead of racing."""
        self.line = centreline(DEFAULT_TRACK)
        self._rng = np.random.default_rng(0)

    def reset(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def act(self, reading: dict[str, np.ndarray]) -> np.ndarray:
        x, y, yaw = reading["pose"]
        speed_now = max(float(reading["velocity"][0]), 0.0)
        index = self.line.nearest(np.array([x, y]))
        target_speed = self.demo_speed or self._racing_speed(index, speed_now)
        lookahead = float(np.clip(0.4 + 0.3 * max(speed_now, target_speed), 0.6, 1.8))
        goal = self.line.points[self.line.ahead(index, lookahead)]
        alpha = np.arctan2(goal[1] - y, goal[0] - x) - yaw
        steering = np.arctan2(2 * WHEELBASE * np.sin(alpha), lookahead)
        if abs(np.angle(np.exp(1j * alpha))) > HEADING_SLOW:
            # Pointed well off the line (e.g. just after a recovery): turn first, then go.
            target_speed = min(target_speed, 1.5)
        task = self.task
        action = np.array(
            [
                2 * (target_speed - task.min_speed) / (task.max_speed - task.min_speed) - 1,
                steering / task.max_steering,
            ]
        )
        if self.noise > 0:
            action = action + self._rng.normal(0.0, self.noise, 2)
        return np.clip(action, -1.0, 1.0).astype(np.float32)

    def _racing_speed(self, index: int, speed_now: float) -> float:
        horizon = 0.5 + speed_now**2 / (2 * BRAKING)
        steps = int(horizon / self.line.spacing)
        ahead = (index + np.arange(steps + 1)) % len(self.line)
        curvature = float(np.abs(self.line.curvature[ahead]).max())
        corner_speed = np.sqrt(LATERAL_ACCEL / max(curvature, 1e-6))
        return float(min(self.task.max_speed, corner_speed))


def record_demo_lap(task, speed: float = 1.0, seed: int = 0) -> np.ndarray:
    """Poses (N, 3) of one slow expert lap on the twin from the start of the track."""
    from robot_rl.sim.car_twin import make_car_twin

    twin = make_car_twin(task.replace(cameras=()))
    expert = CarLapExpert(task, demo_speed=speed)
    expert.reset(np.random.default_rng(seed))
    start, heading = expert.line.points[0], expert.line.headings[0]
    twin.place_car(float(start[0]), float(start[1]), float(heading))
    reading = twin.read()
    poses, travelled, previous = [reading["pose"]], 0, 0
    try:
        while travelled < len(expert.line):
            command, _ = task.to_command(expert.act(reading), reading)
            twin.send(command)
            twin.advance()
            reading = twin.read()
            poses.append(reading["pose"])
            index = expert.line.nearest(reading["pose"])
            travelled += (index - previous) % len(expert.line)
            previous = index
    finally:
        twin.close()
    return np.array(poses)


if __name__ == "__main__":
    from robot_rl.tasks.car_lap import CarLapTask, checkpoints_from_lap

    # Placeholder checkpoints: the demonstration lap only needs the task's action scaling.
    lap = record_demo_lap(CarLapTask(checkpoints=((0, 0), (1, 0), (0, 1))))
    points = checkpoints_from_lap(lap, spacing=1.5)
    print("DEFAULT_CHECKPOINTS = (")
    for px, py in points:
        print(f"    ({px:.3f}, {py:.3f}),")
    print(")")
