"""The scripted arm reset, shared by every arm task, on any ``ArmBackend`` (twin or robot).

Readings in, commands out (pure numpy, no MuJoCo, no ROS 2), so the real arm runs the twin's very
sequence: ``ArmBackend.begin_reset`` (a robot's driver goes to its own reset pose first, so every
reading after it sees the arm where that left it), ``lift_clear`` (straight up, the gripper as it
is, so the next move never sweeps through the scene), ``move_to_reset_pose`` (over at the
clearance height, then down, with a random offset and heading), and ``regrasp`` for tasks that
start with an object in the hand (peg_insert, put_down_cube). ``ArmBackend.move_to`` is the
backend's own "go there and settle"; moves that carry an object or wait for the fingers go
through ``send``/``advance``, as the policy's commands do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robot_rl.envs.arm_geometry import down_quat
from robot_rl.envs.backend import ArmBackend, Reading

GRIPPER_CLOSED_READING = 0.1
"""A gripper reading above this means the fingers are (being) closed: 'keep' keeps them closed."""


class GraspFailedError(RuntimeError):
    """The gripper reading says the fingers did not stop on the object (or lost it lifting)."""


def kept_gripper(reading: Reading) -> float:
    """The gripper command that keeps the gripper as it is: closed (on an object or on nothing)
    stays closed, open stays open. ``move_to`` needs a command, not a reading: commanding the
    measured opening of fingers stopped on an object would release the squeeze."""
    return 1.0 if float(reading["gripper_pos"][0]) > GRIPPER_CLOSED_READING else 0.0


@dataclass(frozen=True)
class ArmResetPose:
    """A task's reset pose and how it is randomised."""

    pos: tuple[float, float, float]
    """Nominal TCP position (m, robot base frame)."""
    noise: tuple[float, float, float]
    """Uniform TCP offset per axis: the reset lands within pos +- noise (m)."""
    gripper: float | None
    """Gripper command at the reset pose: 0 open .. 1 closed; None keeps it as it is."""
    clearance: float
    """TCP height (m) to lift to before travelling, so nothing in the scene is swept."""
    yaw: float = 0.0
    """Nominal tool heading about world z (rad; 0: the tool's x axis along the base's x)."""
    yaw_noise: float = 0.0
    """Uniform heading offset: the reset heading lies within yaw +- yaw_noise (rad)."""

    def __post_init__(self) -> None:
        if len(self.pos) != 3 or len(self.noise) != 3:
            raise ValueError(f"pos and noise need 3 entries, got {self.pos} and {self.noise}")
        if min(self.noise) < 0 or self.yaw_noise < 0:
            raise ValueError(f"noise must be >= 0, got {self.noise} and {self.yaw_noise}")
        if self.gripper is not None and not 0.0 <= self.gripper <= 1.0:
            raise ValueError(f"gripper must be in [0, 1] or None, got {self.gripper}")

    def sample(self, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        """A reset TCP position and heading: the position offset is drawn first, then the
        heading (only when it is randomised), so tasks keep their random streams."""
        noise = np.asarray(self.noise, np.float64)
        pos = np.asarray(self.pos, np.float64) + rng.uniform(-noise, noise)
        yaw = self.yaw + (rng.uniform(-1, 1) * self.yaw_noise if self.yaw_noise else 0.0)
        return pos, float(yaw)


def lift_clear(backend: ArmBackend, clearance: float) -> Reading:
    """Straight up to ``clearance`` (m) at the current position and heading, gripper kept; does
    nothing when the tool is already that high. Returns the newest reading."""
    reading = backend.read()
    tcp = np.asarray(reading["tcp_pos"], np.float64)
    if tcp[2] < clearance - 0.005:  # settled a hair below counts as there
        up = np.array([tcp[0], tcp[1], clearance])
        backend.move_to(up, reading["tcp_quat"], kept_gripper(reading))
        reading = backend.read()
    return reading


def travel(
    backend: ArmBackend, pos: np.ndarray, quat: np.ndarray, gripper: float | None, clearance: float
) -> Reading:
    """Up to the clearance height, across to above ``pos``, down to it: the gripper is kept on
    the way (a held object stays held) and set to ``gripper`` only at the end."""
    reading = lift_clear(backend, clearance)
    keep = kept_gripper(reading)
    pos = np.asarray(pos, np.float64)
    if np.linalg.norm(reading["tcp_pos"][:2] - pos[:2]) > 0.01:
        above = np.array([pos[0], pos[1], max(clearance, pos[2])])
        backend.move_to(above, quat, keep)
    backend.move_to(pos, quat, keep if gripper is None else gripper)
    return backend.read()


def move_to_reset_pose(
    backend: ArmBackend, pose: ArmResetPose, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """Draw the randomised reset pose and go there; returns the drawn TCP position and yaw."""
    pos, yaw = pose.sample(rng)
    travel(backend, pos, down_quat(yaw), pose.gripper, pose.clearance)
    return pos, yaw


def reset_arm(
    backend: ArmBackend, pose: ArmResetPose, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """The whole arm reset: the driver's own reset, lift clear, then the randomised reset
    pose."""
    backend.begin_reset()
    lift_clear(backend, pose.clearance)
    return move_to_reset_pose(backend, pose, rng)


@dataclass(frozen=True)
class GraspSpec:
    """Where a pre-grasped task's object waits to be picked and how to tell that it is held."""

    pick_pos: tuple[float, float, float]
    """TCP position that grasps the object where it waits (its holder, or the table spot where
    the twin puts it), m."""
    holding_range: tuple[float, float]
    """Gripper readings that mean the fingers stopped on the object: below, they did not close;
    above, they closed on nothing. About 1 - width / opening of the fingers (0.08 m)."""
    lift_height: float = 0.1
    """Lift the grasped object this far above the pick pose (m)."""
    pick_yaw: float = 0.0
    """Tool heading for the grasp (rad)."""
    approach_height: float = 0.08
    """Come down onto the pick pose from this far above it (m)."""
    clearance: float = 0.15
    """TCP height (m) to lift to before travelling to the pick pose."""
    twin_object: str | None = None
    """On the twin: the free object to put back at the pick pose before grasping it. None: the
    twin's hand holds the object rigidly (the peg), so it is always in the hand."""
    twin_object_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Object reading position minus TCP position when grasped (twin placement), m."""
    close_periods: int = 5
    """Control periods given to the fingers to close (or open)."""
    lift_periods: int = 30
    """At most this many control periods to reach the lifted pose."""
    attempts: int = 2
    """Grasp attempts before giving up with GraspFailedError."""

    def holding(self, reading: Reading) -> bool:
        low, high = self.holding_range
        return bool(low <= float(reading["gripper_pos"][0]) <= high)


def _pose_command(pos: np.ndarray, quat: np.ndarray, gripper: float) -> dict:
    return {
        "tcp_pos": np.asarray(pos, np.float64),
        "tcp_quat": np.asarray(quat, np.float64),
        "gripper": np.array([gripper], np.float64),
    }


def servo_to(
    backend: ArmBackend,
    pos: np.ndarray,
    quat: np.ndarray,
    gripper: float,
    max_periods: int,
    tolerance: float = 0.005,
) -> Reading:
    """Stream one target pose through ``send``/``advance`` until the TCP is within ``tolerance``
    (or ``max_periods`` pass): the backend's own step limits pace the motion, and a held object
    comes along, on the twin as on a robot."""
    command = _pose_command(pos, quat, gripper)
    reading = backend.read()
    for _ in range(max_periods):
        backend.send(command)
        backend.advance()
        reading = backend.read()
        speed = float(np.linalg.norm(reading["tcp_vel"][:3])) if "tcp_vel" in reading else 0.0
        if np.linalg.norm(reading["tcp_pos"] - command["tcp_pos"]) < tolerance and speed < 0.05:
            break
    return reading


def hold_for(backend: ArmBackend, pos: np.ndarray, quat: np.ndarray, gripper: float, periods: int):
    """Hold a pose for ``periods`` control periods with a gripper command (fingers move)."""
    command = _pose_command(pos, quat, gripper)
    for _ in range(periods):
        backend.send(command)
        backend.advance()
    return backend.read()


def regrasp(backend: ArmBackend, spec: GraspSpec) -> Reading:
    """Get the object into the hand and lifted, ``spec.lift_height`` above its pick pose.

    The twin puts a free object back at its pick pose first; an object that the twin's hand
    holds rigidly is in the hand already. A robot whose gripper reading says it still holds the
    object only lifts clear. Otherwise, on the twin as on a robot: above the pick pose, down,
    close, check the gripper reading, lift, check again; after a failed attempt the fingers open
    and the arm backs off straight up. Raises GraspFailedError after ``spec.attempts``.
    """
    pick = np.asarray(spec.pick_pos, np.float64)
    quat = down_quat(spec.pick_yaw)
    if backend.is_simulated and spec.twin_object is None:
        return backend.read()
    reading = lift_clear(backend, spec.clearance)
    if not backend.is_simulated and spec.holding(reading):
        return reading
    if backend.is_simulated:
        c, s = np.cos(spec.pick_yaw / 2), np.sin(spec.pick_yaw / 2)
        place = pick + np.asarray(spec.twin_object_offset)
        backend.place_object(spec.twin_object, place, np.array([c, 0.0, 0.0, s]))
    above = pick + np.array([0.0, 0.0, spec.approach_height])
    lifted = pick + np.array([0.0, 0.0, spec.lift_height])
    readings = []
    for _ in range(spec.attempts):
        travel(backend, above, quat, 0.0, spec.clearance)
        backend.move_to(pick, quat, 0.0)
        reading = hold_for(backend, pick, quat, 1.0, spec.close_periods)
        readings.append(float(reading["gripper_pos"][0]))
        if spec.holding(reading):
            reading = servo_to(backend, lifted, quat, 1.0, spec.lift_periods)
            readings[-1] = float(reading["gripper_pos"][0])
            if spec.holding(reading):  # still in the hand after the lift
                return reading
        # open and back off straight up before trying again
        hold_for(backend, reading["tcp_pos"], quat, 0.0, spec.close_periods)
        lift_clear(backend, spec.clearance)
    raise GraspFailedError(
        f"no grasp after {spec.attempts} attempts at {np.round(pick, 3).tolist()}: gripper "
        f"readings {np.round(readings, 3).tolist()}, holding means {spec.holding_range} "
        "(is the object at its pick pose?)"
    )
