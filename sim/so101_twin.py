"""The SO-101 twin: the arm in MuJoCo (``so101_arm.model_xml``: the published chain, a servo-like
position actuator per joint, the jaws' pads) on a table with a small cube, a front and a wrist
camera, behind the ``ArmBackend`` contract.

A TCP pose command goes the way it goes on the arm: clipped into the workspace and to a step
from the measured TCP, turned into joint goals by the driver's own inverse kinematics
(``drivers/arms/so101_kinematics``), and the servos then move as their actuators let them; the
jaw's goal is its closed limit or ``GRIPPER_OPEN``, as the driver's. Readings are the driver's:
the TCP in the contract's tool frame, the jaw as 0 open .. 1 closed.
"""

from __future__ import annotations

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from robot_rl.drivers.arms import so101_kinematics as kin
from robot_rl.envs.arm_geometry import down_quat
from robot_rl.envs.backend import Command, Reading
from robot_rl.ros.arm_contract import BASE_FRAME, TCP_FRAME
from robot_rl.sim.rendering import TwinRendering
from robot_rl.sim.so101_arm import model_xml

WORKSPACE_LOW = np.array([0.08, -0.22, 0.005])
WORKSPACE_HIGH = np.array([0.32, 0.22, 0.25])
"""The TCP target's box (m, base frame), as the driver's ``workspace_min``/``max``."""
MAX_STEP = 0.03
"""Largest TCP target displacement from the measured TCP per command (m)."""
HOME_JOINTS = np.array([0.0, -0.6, 0.9, 0.4, 0.0])
"""The driver's ``reset_joints``: where the arm starts and each IK solve may begin."""
CUBE_HALF = 0.0125
"""A 2.5 cm cube."""
SETTLE_STEPS = 100
"""Physics steps after a teleport (``move_to``): the servos take the load."""


def _words(values) -> str:
    return " ".join(f"{v:.6g}" for v in values)


def _camera(name: str, pos, look_along, up) -> str:
    """A camera at ``pos`` looking along ``look_along`` with ``up`` up (in its body's frame)."""
    forward = np.asarray(look_along, float) / np.linalg.norm(look_along)
    right = np.cross(forward, up)
    right /= np.linalg.norm(right)
    image_up = np.cross(right, forward)
    return f'<camera name="{name}" pos="{_words(pos)}" xyaxes="{_words([*right, *image_up])}"/>'


def _wrist_camera() -> str:
    """Behind the fixed jaw and above the TCP, looking past the jaws' tips."""
    tool = kin.TOOL_IN_WRIST
    rot, tcp = tool[:3, :3], tool[:3, 3]
    pos = tcp + rot @ np.array([-0.07, 0.0, -0.11])
    look = rot @ np.array([0.55, 0.0, 1.0])
    return _camera("wrist", pos, look, rot @ np.array([1.0, 0.0, 0.0]))


def scene_xml(cube_half: float = CUBE_HALF) -> str:
    """The table, the cube and the front camera (the world body's part of the model)."""
    eye, at = (0.4, 0.0, 0.2), (0.19, 0.0, 0.02)
    front = _camera("front", eye, np.subtract(at, eye), (0.0, 0.0, 1.0))
    h = cube_half
    return (
        '<geom name="table" type="plane" size="0.6 0.6 0.01" rgba="0.55 0.5 0.45 1" '
        'contype="1" conaffinity="1" friction="1 0.005 0.0001"/>'
        f'<body name="cube" pos="0.2 0 {h}"><freejoint name="cube"/>'
        f'<geom type="box" size="{h} {h} {h}" mass="0.01" contype="1" conaffinity="1" '
        'condim="4" solref="0.004 1" friction="1.5 0.01 0.001" rgba="0.85 0.2 0.15 1"/></body>'
        f"{front}"
    )


def so101_twin_model(task=None) -> mujoco.MjModel:
    """The twin's world (what a camera twin renders)."""
    half = getattr(task, "cube_half", CUBE_HALF)
    return mujoco.MjModel.from_xml_string(model_xml(scene_xml(half), _wrist_camera()))


class So101Twin(TwinRendering):
    """``ArmBackend`` over the SO-101 in MuJoCo; objects: ``cube``."""

    is_simulated = True
    mount_frames = ((BASE_FRAME, "body", "world"), (TCP_FRAME, "site", "tcp"))
    joint_names = kin.JOINTS

    def __init__(self, model: mujoco.MjModel, control_hz: float = 10.0,
                 cameras: tuple[str, ...] = (), image_size: int = 64):  # fmt: skip
        self.model, self.data = model, mujoco.MjData(model)
        self.control_hz = float(control_hz)
        self._substeps = max(1, round(1.0 / (self.control_hz * model.opt.timestep)))
        self._open_cameras(cameras, image_size)
        self._tcp = model.site("tcp").id
        self._joints = [model.joint(name) for name in kin.JOINTS]
        self._qpos = np.array([j.qposadr[0] for j in self._joints])
        self._qvel = np.array([j.dofadr[0] for j in self._joints])
        self._actuators = np.array([model.actuator(name).id for name in kin.JOINTS])
        self._jaw = model.joint(kin.GRIPPER).qposadr[0]
        self._jaw_actuator = model.actuator(kin.GRIPPER).id
        self._cube = model.body("cube").id
        self._cube_joint = model.body("cube").jntadr[0]
        self._velocity = np.zeros(6)
        self._goal = HOME_JOINTS.copy()
        self.move_to(kin.forward(HOME_JOINTS)[:3, 3], down_quat(0.0), 0.0)

    def _tcp_pose(self) -> tuple[np.ndarray, np.ndarray]:
        d = self.data
        rot = d.site_xmat[self._tcp].reshape(3, 3) @ kin.TOOL_AXES
        return d.site_xpos[self._tcp].copy(), Rotation.from_matrix(rot).as_quat(scalar_first=True)

    def _pose_goal(self, pos: np.ndarray, quat: np.ndarray) -> None:
        target = np.eye(4)
        target[:3, :3] = Rotation.from_quat(quat, scalar_first=True).as_matrix()
        target[:3, 3] = pos
        self._goal = kin.inverse(target, self._goal).q
        self.data.ctrl[self._actuators] = self._goal

    def _set_gripper(self, closed: float) -> None:
        self.data.ctrl[self._jaw_actuator] = kin.jaw_goal(closed)  # as the driver's defaults

    def send(self, command: Command) -> None:
        pos = np.asarray(command["tcp_pos"], np.float64).reshape(3)
        quat = np.asarray(command.get("tcp_quat", down_quat(0.0)), np.float64).reshape(4)
        gripper = command.get("gripper")
        values = [pos, quat] + ([] if gripper is None else [np.asarray(gripper)])
        if not all(np.all(np.isfinite(v)) for v in values) or np.linalg.norm(quat) < 1e-6:
            raise ValueError(f"non-finite or zero arm command refused: {command}")
        current = self.data.site_xpos[self._tcp]
        pos = np.clip(pos, WORKSPACE_LOW, WORKSPACE_HIGH)
        step = pos - current
        if np.linalg.norm(step) > MAX_STEP:
            pos = current + step * (MAX_STEP / np.linalg.norm(step))
        self._pose_goal(pos, quat / np.linalg.norm(quat))
        if gripper is not None:  # none: the jaw keeps its last command, as on the driver
            self._set_gripper(float(np.asarray(gripper).reshape(-1)[0]))

    def advance(self) -> None:
        mujoco.mj_step(self.model, self.data, nstep=self._substeps)
        mujoco.mj_forward(self.model, self.data)

    def read(self) -> Reading:
        m, d = self.model, self.data
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, self._tcp, self._velocity, 0)
        pos, quat = self._tcp_pose()
        reading = {
            "tcp_pos": pos,
            "tcp_quat": quat,
            "tcp_vel": np.concatenate([self._velocity[3:], self._velocity[:3]]),
            "gripper_pos": np.array([kin.closed_fraction(float(d.qpos[self._jaw]))]),
            "joint_pos": d.qpos[self._qpos].copy(),
            "joint_vel": d.qvel[self._qvel].copy(),
            "object/cube_pos": d.xpos[self._cube].copy(),
            "object/cube_quat": d.xquat[self._cube].copy(),
        }
        for camera, image in self._render().items():
            reading[f"image/{camera}"] = image.copy()
        return reading

    def begin_reset(self) -> None:
        """Nothing to do: the task's reset places the scene itself (``place_object``)."""

    def move_to(self, tcp_pos: np.ndarray, tcp_quat: np.ndarray, gripper: float) -> None:
        """Teleport the arm to the IK solution from the home posture, then let it settle."""
        pos = np.clip(np.asarray(tcp_pos, np.float64), WORKSPACE_LOW, WORKSPACE_HIGH)
        quat = np.asarray(tcp_quat, np.float64)
        self._goal = HOME_JOINTS.copy()
        self._pose_goal(pos, quat / np.linalg.norm(quat))
        d = self.data
        d.qpos[self._qpos], d.qvel[self._qvel] = self._goal, 0.0
        self._set_gripper(gripper)
        d.qpos[self._jaw] = d.ctrl[self._jaw_actuator]
        d.qacc_warmstart[:] = 0.0
        mujoco.mj_forward(self.model, d)
        mujoco.mj_step(self.model, d, nstep=SETTLE_STEPS)
        mujoco.mj_forward(self.model, d)

    def place_object(self, name: str, pos: np.ndarray, quat: np.ndarray) -> None:
        if name != "cube":
            raise ValueError(f"no placeable object {name!r}; have ('cube',)")
        m, d = self.model, self.data
        qadr, vadr = m.jnt_qposadr[self._cube_joint], m.jnt_dofadr[self._cube_joint]
        quat = np.asarray(quat, np.float64).reshape(4)
        d.qpos[qadr : qadr + 3] = np.asarray(pos, np.float64).reshape(3)
        d.qpos[qadr + 3 : qadr + 7] = quat / np.linalg.norm(quat)
        d.qvel[vadr : vadr + 6] = 0.0
        mujoco.mj_forward(m, d)
        self._images_time = -1.0


def make_so101_twin(task, seed: int | None = None) -> So101Twin:
    """The twin for ``task``: its cube, control rate and cameras (``seed``: for symmetry; the
    physics is deterministic, the task's reset randomises)."""
    return So101Twin(
        so101_twin_model(task),
        control_hz=task.control_hz,
        cameras=tuple(task.cameras),
        image_size=task.image_size,
    )
