"""The SO-101 in MuJoCo, as its servo bus peer's arm (``sim.cells.feetech_peer.ServoArm``): the
five joints and the moving jaw of the arm's published model (``drivers/arms/so101_kinematics``'s
chain, the links' masses and centres of mass from the same model, TheRobotStudio/SO-ARM100,
Apache-2.0), drawn as capsules, each joint driven by a position actuator that stands for an
STS3215 (stall torque about 2.9 Nm at 12 V, ``STALL_TORQUE``). Torque off releases the actuator:
the arm then hangs on gravity and its own damping.

Physics advances lazily to the wall clock whenever the peer asks for a servo's state (at most
``MAX_CATCH_UP`` at a time), so the arm moves in real time as a bus is polled.
"""

from __future__ import annotations

import threading
import time

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from robot_rl.drivers.arms import feetech_protocol as sts
from robot_rl.drivers.arms import so101_calibration as calibration
from robot_rl.drivers.arms import so101_kinematics as kin

STALL_TORQUE = 2.9
"""Nm: an STS3215's stall torque at 12 V (30 kg cm), each actuator's force range."""
STIFFNESS = 40.0
"""Nm/rad: the position loop's gain (a few ticks of sag under the arm's own weight)."""
MAX_CATCH_UP = 0.1
"""s of physics at most per call: a late poll does not run a long burst."""
INERTIALS = (  # per link after each joint: mass (kg), centre of mass in the link (m)
    (0.100006, (-0.0307604, -1.66727e-05, -0.0252713)),
    (0.103, (-0.0898471, -0.00838224, 0.0184089)),
    (0.104, (-0.0980701, 0.00324376, 0.0182831)),
    (0.079, (-0.000103312, -0.0386143, 0.0281156)),
    (0.087, (0.000213627, 0.000245138, -0.025187)),
)
JAW = ((0.0202, 0.0188, -0.0234), (1.5708, 0.0, 0.0), 0.012, (-0.00157495, -0.0300244, 0.0192755))
"""The moving jaw's joint in the gripper link (xyz, rpy), its mass and centre of mass."""


JAW_PAD = (0.003, 0.01, 0.01)
"""Each jaw's pad, a box (half sizes along the tool's x, y, z: thickness, width, length)."""
JAW_PAD_CENTRE = (0.0125, -0.004)
"""The fixed pad's grasping face this far behind the TCP along the tool's x, and both pads'
centres this far along the tool's z (m; their tips 6 mm beyond the TCP): a 2.5 cm cube gripped
between them is centred on the TCP, the jaw then at about 0.16 rad. The moving pad dips as the
jaw opens (it swings about a pivot 7.5 cm up the tool), hence short pads and a small opening."""
JAW_FRICTION = "1.5 0.01 0.001"
"""Sliding, torsional and rolling friction of the pads (rubber on printed plastic)."""


def _words(values) -> str:
    return " ".join(f"{v:.9g}" for v in values)


def _pad(name: str, frame: np.ndarray, face_x: float, side: float) -> str:
    """A pad whose grasping face lies at ``face_x`` on the tool's x axis, on the ``side`` (-1
    behind, +1 ahead) of it, given in ``frame`` (4x4 of the pad's body, in the wrist frame)."""
    thickness, _, _ = JAW_PAD
    centre = np.array([face_x + side * thickness, 0.0, JAW_PAD_CENTRE[1], 1.0])
    in_body = np.linalg.inv(frame) @ kin.TOOL_IN_WRIST
    pos = (in_body @ centre)[:3]
    quat = Rotation.from_matrix(in_body[:3, :3]).as_quat(scalar_first=True)
    return (
        f'<geom name="{name}" type="box" size="{_words(JAW_PAD)}" pos="{_words(pos)}" '
        f'quat="{_words(quat)}" contype="1" conaffinity="1" condim="4" solref="0.004 1" '
        f'friction="{JAW_FRICTION}" rgba="0.15 0.15 0.15 1"/>'
    )


def _jaw_pads() -> tuple[str, str]:
    """The fixed pad (in the wrist_roll link) and the moving one (in the jaw's body): they touch
    when the jaw is at its closed limit; the jaw turns about the tool's y, so they part along x."""
    jaw_xyz, jaw_rpy, _, _ = JAW
    face = -JAW_PAD_CENTRE[0]
    fixed = _pad("fixed_pad", np.eye(4), face, -1.0)
    closed = kin.transform(jaw_xyz, jaw_rpy) @ kin.rot_z(kin.GRIPPER_LIMITS[0])
    moving = _pad("moving_pad", closed, face, +1.0)
    return fixed, moving


def model_xml(scene: str = "", tool: str = "") -> str:
    """The arm as MJCF: chain bodies with hinge joints about z, one position actuator each, the
    jaws' pads colliding (the links do not); ``scene``: more MJCF for the world body, ``tool``
    for the wrist_roll link (a wrist camera; ``kin.TOOL_IN_WRIST`` places things there)."""
    jaw_xyz, jaw_rpy, jaw_mass, jaw_com = JAW
    low, high = kin.GRIPPER_LIMITS
    fixed_pad, moving_pad = _jaw_pads()
    body = (
        f'<site name="tcp" pos="{_words(kin.TCP[0])}" euler="{_words(kin.TCP[1])}"/>'
        f"{fixed_pad}{tool}"
        f'<body name="{kin.GRIPPER}" pos="{_words(jaw_xyz)}" euler="{_words(jaw_rpy)}">'
        f'<joint name="{kin.GRIPPER}" range="{low} {high}"/>'
        f'<inertial pos="{_words(jaw_com)}" mass="{jaw_mass}" diaginertia="2e-6 2e-6 2e-6"/>'
        f"{moving_pad}</body>"
    )
    chain = list(zip(kin.JOINTS, kin.ORIGINS, kin.LIMITS, INERTIALS, strict=True))
    for name, (xyz, rpy), (lo, hi), (mass, com) in reversed(chain):
        body = (
            f'<body name="{name}" pos="{_words(xyz)}" euler="{_words(rpy)}">'
            f'<joint name="{name}" range="{lo} {hi}"/>'
            f'<inertial pos="{_words(com)}" mass="{mass}" diaginertia="4e-5 4e-5 4e-5"/>'
            f'<geom type="capsule" size="0.012" fromto="0 0 0 {_words(com)}"/>{body}</body>'
        )
    actuators = "".join(
        f'<position name="{name}" joint="{name}" kp="{STIFFNESS}" '
        f'forcerange="-{STALL_TORQUE} {STALL_TORQUE}"/>'
        for name in calibration.MOTORS
    )
    return (
        '<mujoco model="so101"><compiler angle="radian" eulerseq="XYZ"/>'
        '<option timestep="0.002" cone="elliptic" impratio="10"/>'
        # small images on a CPU renderer (llvmpipe): MuJoCo's default 4096 px shadow map and
        # multisampling made a 64 px frame cost about 65 ms there
        '<visual><quality shadowsize="0" offsamples="0"/>'
        '<global offwidth="256" offheight="256"/></visual>'
        '<default><joint axis="0 0 1" damping="0.3" armature="0.01" limited="true"/>'
        '<geom contype="0" conaffinity="0" rgba="1 0.82 0.12 1"/></default>'
        f'<worldbody><light pos="0 0 2"/>{scene}'
        f'<body name="base" euler="0 0 {kin.BASE_YAW}">'
        '<geom type="cylinder" size="0.04 0.04" pos="0.02 0 0.04"/>'
        f"{body}</body></worldbody><actuator>{actuators}</actuator></mujoco>"
    )


class MujocoServoArm:
    """``ServoArm`` for ``FeetechPeer``: servo ``motor.id`` drives the joint of that motor of
    ``model`` (default: the arm alone; the SO-101 cell's world passes its own, with a table, a
    cube and cameras). ``lock`` guards ``data``; whoever reads or changes the world takes it and
    calls ``advance`` first, so everyone sees the physics at the wall clock."""

    def __init__(self, start: dict[str, float] | None = None, model: mujoco.MjModel | None = None):
        self.model = model if model is not None else mujoco.MjModel.from_xml_string(model_xml())
        self.data = mujoco.MjData(self.model)
        self.motors = calibration.default()
        self._names = {m.id: name for name, m in self.motors.items()}
        self._gain = self.model.actuator_gainprm[:, 0].copy()
        self._bias = self.model.actuator_biasprm[:, 1].copy()
        for name, angle in (start or {}).items():
            self.data.joint(name).qpos[0] = angle
            self.data.actuator(name).ctrl[0] = angle
        mujoco.mj_forward(self.model, self.data)
        self.lock = threading.Lock()
        self.started = self._last = time.monotonic()

    def advance(self) -> None:
        """Step the physics up to now (at most ``MAX_CATCH_UP``: a late call loses time), under
        ``lock``."""
        now, timestep = time.monotonic(), self.model.opt.timestep
        if now - self._last > MAX_CATCH_UP:  # a late call: the physics loses the time beyond
            self._last = now - MAX_CATCH_UP
        steps = int((now - self._last) / timestep)
        if steps:
            mujoco.mj_step(self.model, self.data, nstep=steps)
            self._last += steps * timestep  # the remainder carries over to the next call

    @property
    def realtime_factor(self) -> float:
        """Simulated seconds per wall second since start (1: the physics keeps up)."""
        elapsed = time.monotonic() - self.started
        return float(self.data.time) / elapsed if elapsed > 0 else 0.0

    def command(self, servo: int, goal: int, torque: bool) -> None:
        name = self._names[servo]
        index = self.model.actuator(name).id
        with self.lock:
            self.advance()
            self.data.ctrl[index] = self.motors[name].to_radians(goal)
            on = 1.0 if torque else 0.0
            self.model.actuator_gainprm[index, 0] = self._gain[index] * on
            self.model.actuator_biasprm[index, 1] = self._bias[index] * on

    def state(self, servo: int) -> tuple[int, int, int]:
        name = self._names[servo]
        motor = self.motors[name]
        with self.lock:
            self.advance()
            angle = float(self.data.joint(name).qpos[0])
            speed = float(self.data.joint(name).qvel[0])
            force = float(self.data.actuator(name).force[0])
        ticks_per_radian = sts.TICKS_PER_TURN / (2.0 * np.pi)
        return (
            motor.to_ticks(angle),
            round(speed * ticks_per_radian),
            round(1000.0 * force / STALL_TORQUE),
        )
