"""Scripted driver for car_lap: pure pursuit on the twin track's centreline.

Racing mode brakes for the turns ahead (speed from the curvature within the braking distance);
demonstration mode drives a slow, steady lap, the one that FastRLAP's operator drives once to
record the checkpoints. ``TeleopLapDriver`` is that operator at a simulated gamepad
(``/teleop/twist``), and ``record_twin_lap`` runs ``robot-rl record-lap`` on the twin's ROS 2 node
with it; run as a script, that writes the twin track's checkpoints file
(``tasks/car_lap_checkpoints/twin_track.json``).
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
    """Poses (N, 3) of one slow expert lap on the in-process twin from the start of the track."""
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


class TeleopLapDriver:
    """The twin's simulated person at the gamepad for ``robot-rl record-lap``: looks at the twin
    (as a person looks at the track), drives the slow demonstration lap and publishes it as a
    gamepad would, on ``/teleop/twist`` (linear.x speed and angular.z steering deflections in
    [-1, 1]) at ``rate_hz`` wall Hz from a ``BackgroundNode`` (its own rclpy context and
    thread). ``reading()`` gives the twin's current reading."""

    def __init__(
        self, reading, task, speed: float = 1.0, max_speed: float = 1.5, rate_hz: float = 30.0
    ):
        from geometry_msgs.msg import TwistStamped

        from robot_rl.ros.background_node import BackgroundNode
        from robot_rl.ros.qos import teleop_qos
        from robot_rl.ros.teleop import TWIST_TOPIC

        self._reading, self.task, self.max_speed = reading, task, max_speed
        self.expert = CarLapExpert(task, demo_speed=speed)
        self._ros = BackgroundNode("simulated_lap_driver", [])
        self._node, self._msg_type = self._ros.node, TwistStamped
        self._pub = self._node.create_publisher(TwistStamped, TWIST_TOPIC, teleop_qos())
        self._node.create_timer(1.0 / rate_hz, self._publish)

    def deflections(self, reading) -> tuple[float, float]:
        action = self.expert.act(reading)
        task = self.task
        speed = task.min_speed + (action[0] + 1) / 2 * (task.max_speed - task.min_speed)
        return float(np.clip(speed / self.max_speed, -1, 1)), float(action[1])

    def _publish(self) -> None:
        reading = self._reading()
        if reading is None:
            return
        speed, steering = self.deflections(reading)
        msg = self._msg_type()
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.twist.linear.x, msg.twist.angular.z = speed, steering
        self._pub.publish(msg)

    def close(self) -> None:
        self._ros.close()


def record_twin_lap(out, speedup: float = 2.0, drive: bool = True, **options):
    """Run ``robot-rl record-lap`` on the car twin's ROS 2 node, driven by ``TeleopLapDriver``:
    the twin node publishes what a car's drivers publish, the driver publishes /teleop, and
    record-lap sees nothing else (``drive=False``: nobody drives). Returns record-lap's exit
    code. ``options``: more ``RecordLapConfig`` fields."""
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    from robot_rl.commands.record_lap import RecordLapConfig, run
    from robot_rl.ros.config import RosBackendConfig
    from robot_rl.sim.nodes.car_twin_node import CarTwinNode
    from robot_rl.tasks.car_lap import CarLapTask

    context = Context()
    rclpy.init(
        context=context, args=["--ros-args", "-p", f"speedup:={speedup}", "-r", "__ns:=/car"]
    )
    node = CarTwinNode(context=context)
    executor = SingleThreadedExecutor(context=context)
    driver = spinner = None
    try:
        if not node.start():
            raise RuntimeError("the car twin node did not come up")
        line = centreline(DEFAULT_TRACK)
        # the person puts the car on the start line before the node's physics runs
        node.twin.place_car(
            float(line.points[0][0]), float(line.points[0][1]), float(line.headings[0])
        )
        node._publish_all()
        executor.add_node(node)
        import threading

        spinner = threading.Thread(target=_spin, args=(executor, context), daemon=True)
        spinner.start()
        if drive:
            driver = TeleopLapDriver(lambda: node.reading, CarLapTask())
        ros = RosBackendConfig(
            use_sim_time=True, max_age=1.0, slop=0.3, clock_timeout=5.0, ready_timeout=60.0
        )
        return run(RecordLapConfig(out=str(out), ros=ros, **options))
    finally:
        if driver is not None:
            driver.close()
        executor.shutdown(timeout_sec=1.0)
        if spinner is not None:  # no callback may run on a destroyed node
            spinner.join(timeout=10.0)
        node.destroy_node()
        context.try_shutdown()


def _spin(executor, context) -> None:
    try:
        executor.spin()
    except Exception:
        if context.ok():
            raise


if __name__ == "__main__":
    # Regenerates tasks/car_lap_checkpoints/twin_track.json: one record-lap on the twin node.
    import json
    import tempfile
    from pathlib import Path

    from robot_rl.tasks.car_lap import TWIN_TRACK_CHECKPOINTS

    with tempfile.TemporaryDirectory() as directory:
        if record_twin_lap(directory) != 0:
            raise SystemExit(1)
        document = json.loads((Path(directory) / "checkpoints.json").read_text())
    document["how"] = (
        "robot-rl record-lap on the car twin's ROS 2 node, driven over /teleop by "
        "the twin's simulated person: python -m robot_rl.sim.experts.car_lap"
    )
    for key in ("mcap", "recorded", "hardware"):
        document.pop(key, None)
    from robot_rl.data.lap_checkpoints import write_checkpoints

    points = document.pop("points")
    write_checkpoints(
        TWIN_TRACK_CHECKPOINTS,
        np.array(points),
        spacing=document.pop("spacing"),
        lap_length=document.pop("lap_length"),
        start=document.pop("start"),
        **{k: v for k, v in document.items() if k not in ("format", "frame")},
    )
    print(f"wrote {TWIN_TRACK_CHECKPOINTS} ({len(points)} checkpoints)")
