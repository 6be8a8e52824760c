"""The tests' shared fakes: an arm behind the ``ArmBackend`` contract with no physics, a car behind
the ``CarBackend`` contract, a teleop source that plays a script, and the learner as an actor's
transport client sees it, so tests of the env, resets, interventions and pacing need no MuJoCo,
no ROS 2 and no learner. One fake arm serves them all; its options say which behaviour a test
leans on."""

from __future__ import annotations

import threading

import numpy as np

from robot_rl.envs.arm_geometry import down_quat
from robot_rl.envs.backend import StaleReadingError
from robot_rl.envs.intervention import OperatorCommand

FINGER_SPAN = 0.08
"""The fake gripper's full opening (m), as the twin's and the Franka's."""


TABLE_CUBE = (0.5, 0.0, 0.025)
"""A cube resting on the table under the fake arm's default TCP."""


class FakeArm:
    """A kinematic arm.

    - ``send`` sets the target: with ``max_step`` None the TCP is there at once, otherwise each
      ``advance`` moves it at most ``max_step`` metres towards it. ``move_to`` goes straight
      there.
    - The fingers close at once, stopping on an object of ``object_width`` when the TCP is at it
      (within 5 mm); a held object moves with the TCP.
    - ``read`` gives what the Franka driver gives, plus ``object/cube_*`` when ``cube_pos``
      is set (a task's privileged state, as the twin gives it); with ``stale`` it raises
      ``StaleReadingError`` as a backend with an old sensor does.
    - ``simulated`` True is a twin (``place_object`` works); False is a robot (it refuses).
    """

    control_hz = 10.0
    camera_names = ()

    def __init__(
        self,
        tcp_pos=(0.5, 0.0, 0.15),
        tcp_quat=None,
        object_pos=None,
        object_width=0.03,
        held=False,
        cube_pos=None,
        max_step=None,
        simulated=False,
    ):
        self.is_simulated = simulated
        self.tcp_pos = np.array(tcp_pos, float)
        self.tcp_quat = down_quat(0.0) if tcp_quat is None else np.asarray(tcp_quat, float)
        self.target = self.tcp_pos.copy()
        self.object_pos = None if object_pos is None else np.array(object_pos, float)
        self.object_width = object_width
        self.held = held
        self.opening = object_width if held else FINGER_SPAN
        self.cube_pos = None if cube_pos is None else np.asarray(cube_pos, float)
        self.max_step = max_step
        self.stale = False
        self.sent: list[dict] = []  # every command sent
        self.moves: list[tuple[np.ndarray, float]] = []  # every move_to: (position, gripper)
        self.resets_begun = 0
        self.driver_reset_pos = None  # where a driver's own reset (begin_reset) takes the TCP
        self.advances = 0

    def read(self):
        if self.stale:
            raise StaleReadingError("/front_cam/image_raw: newest message is 0.900 s old")
        reading = {
            "tcp_pos": self.tcp_pos.copy(),
            "tcp_quat": self.tcp_quat.copy(),
            "tcp_vel": np.zeros(6),
            "gripper_pos": np.array([1.0 - self.opening / FINGER_SPAN]),
            "joint_pos": np.zeros(7),
            "joint_vel": np.zeros(7),
            "wrench": np.zeros(6),
        }
        if self.cube_pos is not None:
            reading["object/cube_pos"] = self.cube_pos.copy()
            reading["object/cube_quat"] = np.array([1.0, 0.0, 0.0, 0.0])
        return reading

    def _grip(self, closed: float) -> None:
        wanted = FINGER_SPAN * (1.0 - closed)
        near = (
            self.object_pos is not None and np.linalg.norm(self.object_pos - self.tcp_pos) < 0.005
        )
        if (self.held or near) and wanted < self.object_width:
            self.opening, self.held = self.object_width, True
        else:
            self.opening, self.held = wanted, False

    def _go(self, pos) -> None:
        if self.held:
            self.object_pos = self.object_pos + (pos - self.tcp_pos)
        self.tcp_pos = np.array(pos, float)

    def begin_reset(self):
        """A robot's driver reset: to ``driver_reset_pos`` when one is given."""
        self.resets_begun += 1
        if self.driver_reset_pos is not None:
            self._go(np.asarray(self.driver_reset_pos, float))

    def move_to(self, tcp_pos, tcp_quat, gripper):
        self.moves.append((np.array(tcp_pos, float), float(gripper)))
        self.tcp_quat = np.asarray(tcp_quat, float)
        self._go(tcp_pos)
        self._grip(gripper)

    def send(self, command):
        self.sent.append(command)
        self.target = np.asarray(command["tcp_pos"], float)
        self.tcp_quat = np.asarray(command.get("tcp_quat", self.tcp_quat), float)
        if self.max_step is None:
            self._go(self.target)
        if "gripper" in command:
            self._grip(float(command["gripper"][0]))

    def advance(self):
        self.advances += 1
        if self.max_step is None:
            return
        step = self.target - self.tcp_pos
        norm = np.linalg.norm(step)
        limit = self.max_step
        self._go(self.tcp_pos + (step if norm <= limit else step * limit / norm))

    def place_object(self, name, pos, quat):
        if not self.is_simulated:
            raise AssertionError("a robot cannot place objects")

    def close(self):
        pass


class ScriptedSource:
    """Plays one entry per poll: None, or (action, button); then None for ever."""

    def __init__(self, script, clock=lambda: 0.0):
        self.script = list(script)
        self.clock = clock
        self.polls = 0
        self.resets = 0

    def poll(self, reading):
        self.polls += 1
        if not self.script:
            return None
        entry = self.script.pop(0)
        if entry is None:
            return None
        action, button = entry
        return OperatorCommand(np.asarray(action, np.float32), button, self.clock())

    def reset(self):
        self.resets += 1


WALL_Y = 1.0
"""The fake track's only wall: the line y = 1."""
BODY = 0.15
"""Distance from the car's centre to its bumper (m)."""


class FakeCar:
    """A kinematic bicycle on a floor with one wall, behind the CarBackend contract; a real car
    as far as recovery can tell (``is_simulated`` False: nothing can be placed)."""

    is_simulated = False
    control_hz = 10.0
    camera_names = ()

    def __init__(self, x=0.0, y=0.0, yaw=0.0, flipped_periods=0):
        self.pose = np.array([x, y, yaw], float)
        self.speed = 0.0
        self.command = (0.0, 0.0)
        self.flipped_periods = flipped_periods  # a person rights the car after this many
        self.commands = []
        self.touching = False
        self.impact = 0.0  # the IMU's peak deceleration (m/s^2) in the last period

    def read(self):
        return {
            "pose": self.pose.copy(),
            "odom_pose": self.pose.copy(),
            "velocity": np.array([self.speed, 0.0, 0.0]),
            "imu_accel": np.zeros(3),
            "imu_accel_peak": np.array([-self.impact, 0.0, 9.81]),
            "imu_gyro": np.zeros(3),
            "collision": np.array([float(self.touching)]),
            "flipped": np.array([float(self.flipped_periods > 0)]),
        }

    def send(self, command):
        self.command = (float(command["speed"][0]), float(command["steering"][0]))
        self.commands.append(self.command)

    def advance(self):
        dt = 1.0 / self.control_hz
        if self.flipped_periods > 0:
            self.flipped_periods -= 1
            return
        speed, steering = self.command
        self.speed += np.clip(speed - self.speed, -0.5, 0.5)  # 5 m/s^2 at most
        x, y, yaw = self.pose
        yaw += self.speed / 0.26 * np.tan(steering) * dt
        x += self.speed * np.cos(yaw) * dt
        y += self.speed * np.sin(yaw) * dt
        front = y + BODY * np.sin(yaw) * np.sign(self.speed or 1.0)
        self.touching = front >= WALL_Y
        self.impact = 0.0
        if self.touching:  # the wall stops the car where it hits, within ~20 ms
            y = min(y, WALL_Y - BODY * abs(np.sin(yaw)))
            self.impact = abs(self.speed) / 0.02
            self.speed = 0.0
        self.pose = np.array([x, y, yaw])

    def place_car(self, x, y, yaw):
        raise AssertionError("a real car cannot be placed")

    def close(self):
        pass


class ScriptedClient:
    """The transport client as the pacer sees it: connected, with a lag the test sets."""

    def __init__(self, lag: int):
        self.connected = True
        self.refused_reason = self.data_refused = None
        self.lag = lag
        self.polled = threading.Event()

    def estimated_lag(self) -> int:
        self.polled.set()
        return self.lag
