"""Fakes for the human-in-the-loop tests: a kinematic arm backend (the TCP goes exactly where it
is sent) and a teleop source that plays a script, so the tests need no MuJoCo and no ROS 2."""

from __future__ import annotations

import numpy as np

from robot_rl.envs.arm_geometry import down_quat
from robot_rl.envs.intervention import OperatorCommand


class KinematicArm:
    """``ArmBackend`` whose TCP reaches every target in one control period."""

    is_simulated = False
    control_hz = 10.0
    camera_names = ()

    def __init__(self, tcp_quat=None, cube_pos=(0.5, 0.0, 0.025)):
        self.tcp_pos = np.array([0.5, 0.0, 0.15])
        self.tcp_quat = down_quat(0.0) if tcp_quat is None else np.asarray(tcp_quat, float)
        self.cube_pos = np.asarray(cube_pos, float)
        self.gripper = 0.0
        self.sent: list[dict] = []

    def read(self):
        return {
            "tcp_pos": self.tcp_pos.copy(),
            "tcp_quat": self.tcp_quat.copy(),
            "tcp_vel": np.zeros(6),
            "gripper_pos": np.array([self.gripper]),
            "object/cube_pos": self.cube_pos.copy(),
        }

    def send(self, command):
        self.sent.append(command)
        self.tcp_pos = np.asarray(command["tcp_pos"], float).copy()
        if "gripper" in command:
            self.gripper = float(command["gripper"][0])

    def advance(self):
        pass

    def move_to(self, tcp_pos, tcp_quat, gripper):
        self.tcp_pos = np.asarray(tcp_pos, float).copy()
        self.gripper = gripper

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
