"""The tests' shared fakes: an arm behind the ``ArmBackend`` contract with no physics, and a teleop
source that plays a script, so tests of the env, resets and interventions need no MuJoCo and no
ROS 2. One fake arm serves them all; its options say which behaviour a test leans on."""

from __future__ import annotations

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
