"""The arm twin: a MuJoCo Franka-like arm behind the ``ArmBackend`` contract.

A Cartesian impedance (operational-space) controller turns the commanded TCP pose into joint
torques at every physics step (500 Hz), with gravity/Coriolis compensation and a nullspace pull
towards the home posture, as the real Franka's impedance controller does; ``advance()`` runs one
policy period of it. The driver's hard limits hold here too: targets are clipped to a workspace
box and to a maximum step per control period, and a non-finite command is refused.
"""

from __future__ import annotations

import mujoco
import numpy as np

from robot_rl.envs.backend import Command, Reading
from robot_rl.ros.arm_contract import BASE_FRAME, TCP_FRAME
from robot_rl.sim.arm_scenes import ArmScene, scene_of
from robot_rl.sim.rendering import TwinRendering

HOME_JOINTS = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
"""Franka's usual ready posture (TCP about 0.31 m ahead of the base, pointing down)."""
WORKSPACE_LOW = np.array([0.15, -0.45, -0.03])
WORKSPACE_HIGH = np.array([0.85, 0.45, 0.65])
"""The driver-side workspace box for the TCP target (m, world frame)."""
MAX_STEP = 0.08
"""Largest TCP target displacement from the measured TCP per control period (m)."""
MAX_ROTATION_STEP = 0.5
"""Largest TCP target rotation away from the measured orientation per control period (rad)."""
FINGER_RANGE = 0.04
"""Each finger's travel (m): 0 closed, 0.04 open."""

# Controller gains, as accelerations (the operational-space inertia scales them to forces), so
# the response is the same everywhere in the workspace: about 4.5 Hz, critically damped.
KP_POS, KP_ROT = 800.0, 800.0
KD_POS, KD_ROT = 2 * np.sqrt(KP_POS), 2 * np.sqrt(KP_ROT)
KP_NULL, KD_NULL = 20.0, 3.0
MAX_POS_ERROR = 0.05
"""The position error the controller acts on is clipped (m): bounded force in contact."""
DYNAMICS_EVERY = 2
"""Physics steps between updates of the inertia-dependent terms (they change slowly)."""
_LAMBDA_DAMPING = 1e-3 * np.eye(6)
_EYE7 = np.eye(7)


def quat_to_mat(quat: np.ndarray) -> np.ndarray:
    mat = np.empty(9)
    mujoco.mju_quat2Mat(mat, np.asarray(quat, np.float64))
    return mat.reshape(3, 3)


def mat_to_quat(mat: np.ndarray) -> np.ndarray:
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(mat, np.float64).reshape(9))
    return quat


def rotation_error(current: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Small-angle rotation vector taking ``current`` to ``target`` (world frame):
    half the sum of the column cross products, written out (np.cross is slow at this size)."""
    m = current @ target.T
    return 0.5 * np.array([m[1, 2] - m[2, 1], m[2, 0] - m[0, 2], m[0, 1] - m[1, 0]])


def limit_rotation(current: np.ndarray, target: np.ndarray, max_angle: float) -> np.ndarray:
    """``target`` moved back towards ``current`` so that they differ by at most max_angle."""
    q_cur, q_tgt = mat_to_quat(current), mat_to_quat(target)
    if np.dot(q_cur, q_tgt) < 0:
        q_tgt = -q_tgt
    angle = 2 * np.arccos(np.clip(np.dot(q_cur, q_tgt), -1.0, 1.0))
    if angle <= max_angle:
        return target
    fraction = max_angle / angle
    half = angle / 2
    q = (np.sin((1 - fraction) * half) * q_cur + np.sin(fraction * half) * q_tgt) / np.sin(half)
    return quat_to_mat(q / np.linalg.norm(q))


class ArmTwin(TwinRendering):
    """``ArmBackend`` over MuJoCo; ``scene`` picks the task's objects (see arm_scenes)."""

    is_simulated = True
    mount_frames = ((BASE_FRAME, "body", "world"), (TCP_FRAME, "site", "tcp"))
    """The world is the arm's base frame (``ee_pose``'s); the wrist camera rides with the TCP."""

    def __init__(
        self,
        scene: ArmScene,
        control_hz: float = 10.0,
        cameras: tuple[str, ...] = (),
        image_size: int = 64,
    ):
        self.scene = scene
        self.model = model = mujoco.MjModel.from_xml_string(scene.xml)
        self.data = mujoco.MjData(model)
        self.control_hz = float(control_hz)
        self._substeps = max(1, round(1.0 / (self.control_hz * model.opt.timestep)))
        self._open_cameras(cameras, image_size)  # videos from the front camera

        self._tcp = model.site("tcp").id
        arm = [model.joint(f"joint{i}") for i in range(1, 8)]
        self._arm_dofs = np.array([joint.dofadr[0] for joint in arm])
        self._arm_qpos = np.array([joint.qposadr[0] for joint in arm])
        fingers = [model.joint(name) for name in ("finger_left", "finger_right")]
        self._fingers_qpos = np.array([joint.qposadr[0] for joint in fingers])
        self._fingers_dofs = np.array([joint.dofadr[0] for joint in fingers])
        self._gripper_actuator = model.actuator("gripper").id
        self._joint_low = model.jnt_range[[joint.id for joint in arm], 0].copy()
        self._joint_high = model.jnt_range[[joint.id for joint in arm], 1].copy()
        force, torque = model.sensor("ft_force").adr[0], model.sensor("ft_torque").adr[0]
        self._wrench = np.r_[force : force + 3, torque : torque + 3]
        self._jac = np.zeros((6, model.nv))
        self._minv_jac = np.zeros((6, model.nv))
        self._velocity = np.zeros(6)
        self._dynamics_age = 0

        self._target_pos = np.zeros(3)
        self._target_rot = np.eye(3)
        self._posture = HOME_JOINTS.copy()
        down = quat_to_mat([0.0, 1.0, 0.0, 0.0])
        self.move_to(np.array([0.45, 0.0, 0.3]), mat_to_quat(down), 0.0)

    def _arm_jacobian(self) -> np.ndarray:
        mujoco.mj_jacSite(self.model, self.data, self._jac[:3], self._jac[3:], self._tcp)
        return self._jac[:, self._arm_dofs]

    def _update_dynamics(self, jac: np.ndarray) -> None:
        # M^-1 J^T through MuJoCo's sparse factorisation (rows: one per task-space axis)
        mujoco.mj_solveM(self.model, self.data, self._minv_jac, self._jac)
        minv_jac = self._minv_jac[:, self._arm_dofs]
        # operational-space inertia, damped so that it stays finite near singular postures
        self._lam = np.linalg.inv(jac @ minv_jac.T + _LAMBDA_DAMPING)
        # dynamically consistent nullspace: the posture pull cannot disturb the TCP
        self._nullspace = _EYE7 - jac.T @ (self._lam @ minv_jac)

    def _control_torques(self) -> np.ndarray:
        """Operational-space impedance law; needs positions and velocities computed (step1)."""
        d = self.data
        jac = self._arm_jacobian()
        qvel = d.qvel[self._arm_dofs]
        if self._dynamics_age % DYNAMICS_EVERY == 0:
            self._update_dynamics(jac)
        self._dynamics_age += 1
        lam, nullspace = self._lam, self._nullspace
        velocity = jac @ qvel
        pos_error = self._target_pos - d.site_xpos[self._tcp]
        norm = np.linalg.norm(pos_error)
        if norm > MAX_POS_ERROR:
            pos_error *= MAX_POS_ERROR / norm
        rot_error = rotation_error(d.site_xmat[self._tcp].reshape(3, 3), self._target_rot)
        accel = np.concatenate(
            [KP_POS * pos_error - KD_POS * velocity[:3], KP_ROT * rot_error - KD_ROT * velocity[3:]]
        )
        posture = KP_NULL * (self._posture - d.qpos[self._arm_qpos]) - KD_NULL * qvel
        return jac.T @ (lam @ accel) + nullspace @ posture + d.qfrc_bias[self._arm_dofs]

    def _physics_step(self) -> None:
        mujoco.mj_step1(self.model, self.data)
        self.data.ctrl[:7] = self._control_torques()
        mujoco.mj_step2(self.model, self.data)

    def send(self, command: Command) -> None:
        pos = np.asarray(command["tcp_pos"], np.float64).reshape(3)
        quat = np.asarray(command.get("tcp_quat", mat_to_quat(self._target_rot)), np.float64)
        gripper = command.get("gripper")
        values = [pos, quat.reshape(4)] + ([] if gripper is None else [np.asarray(gripper)])
        if not all(np.all(np.isfinite(v)) for v in values):
            raise ValueError(f"non-finite arm command refused: {command}")
        current = self.data.site_xpos[self._tcp]
        pos = np.clip(pos, WORKSPACE_LOW, WORKSPACE_HIGH)
        step = pos - current
        norm = np.linalg.norm(step)
        if norm > MAX_STEP:
            pos = current + step * (MAX_STEP / norm)
        norm_q = np.linalg.norm(quat)
        if norm_q < 1e-6:
            raise ValueError("tcp_quat must be a non-zero quaternion")
        current_rot = self.data.site_xmat[self._tcp].reshape(3, 3)
        target_rot = quat_to_mat(quat / norm_q)
        self._target_rot = limit_rotation(current_rot, target_rot, MAX_ROTATION_STEP)
        self._target_pos = pos
        # no gripper entry: the gripper keeps its last command, as the real driver does
        if gripper is not None:
            self._set_gripper(float(np.asarray(gripper).reshape(-1)[0]))

    def _set_gripper(self, closed: float) -> None:
        self.data.ctrl[self._gripper_actuator] = FINGER_RANGE * (1.0 - np.clip(closed, 0.0, 1.0))

    def advance(self) -> None:
        for _ in range(self._substeps):
            self._physics_step()
        mujoco.mj_forward(self.model, self.data)  # readings describe the state after the step

    def read(self) -> Reading:
        m, d = self.model, self.data
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, self._tcp, self._velocity, 0)
        fingers = d.qpos[self._fingers_qpos].sum()
        reading = {
            "tcp_pos": d.site_xpos[self._tcp].copy(),
            "tcp_quat": mat_to_quat(d.site_xmat[self._tcp]),
            "tcp_vel": np.concatenate([self._velocity[3:], self._velocity[:3]]),
            "gripper_pos": np.array([np.clip(1.0 - fingers / (2 * FINGER_RANGE), 0.0, 1.0)]),
            "joint_pos": d.qpos[self._arm_qpos].copy(),
            "joint_vel": d.qvel[self._arm_dofs].copy(),
            "wrench": d.sensordata[self._wrench],
        }
        for name in self.scene.free_objects + self.scene.mocap_objects:
            body = m.body(name).id
            reading[f"object/{name}_pos"] = d.xpos[body].copy()
            reading[f"object/{name}_quat"] = d.xquat[body].copy()
        for name, site in self.scene.object_sites.items():
            site_id = m.site(site).id
            reading[f"object/{name}_pos"] = d.site_xpos[site_id].copy()
            reading[f"object/{name}_quat"] = mat_to_quat(d.site_xmat[site_id])
        for camera, image in self._render().items():
            reading[f"image/{camera}"] = image.copy()
        return reading

    def begin_reset(self) -> None:
        """Nothing to do: the task's reset places the scene itself (``place_object``)."""

    def move_to(self, tcp_pos: np.ndarray, tcp_quat: np.ndarray, gripper: float) -> None:
        """Teleport the arm by damped least-squares IK from the home posture, then settle."""
        m, d = self.model, self.data
        pos = np.clip(np.asarray(tcp_pos, np.float64), WORKSPACE_LOW, WORKSPACE_HIGH)
        rot = quat_to_mat(np.asarray(tcp_quat, np.float64) / np.linalg.norm(tcp_quat))
        q = HOME_JOINTS.copy()
        for _ in range(40):
            d.qpos[self._arm_qpos] = q
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            rot_error = rotation_error(d.site_xmat[self._tcp].reshape(3, 3), rot)
            error = np.concatenate([pos - d.site_xpos[self._tcp], rot_error])
            if np.linalg.norm(error) < 1e-5:
                break
            jac = self._arm_jacobian()
            dq = jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(6), error)
            q = np.clip(q + dq, self._joint_low, self._joint_high)
        d.qpos[self._arm_qpos] = q
        d.qvel[self._arm_dofs] = 0.0
        opening = FINGER_RANGE * (1.0 - np.clip(gripper, 0.0, 1.0))
        d.qpos[self._fingers_qpos] = opening
        d.qvel[self._fingers_dofs] = 0.0
        # the next trajectory must not depend on the previous one
        d.qacc_warmstart[:] = 0.0
        self._dynamics_age = 0
        self._set_gripper(gripper)
        self._target_pos, self._target_rot = pos, rot
        self._posture = q.copy()  # hold this arm configuration's elbow, not the home one's
        mujoco.mj_forward(m, d)
        for _ in range(50):
            self._physics_step()
        mujoco.mj_forward(m, d)

    def place_object(self, name: str, pos: np.ndarray, quat: np.ndarray) -> None:
        m, d = self.model, self.data
        pos = np.asarray(pos, np.float64).reshape(3)
        quat = np.asarray(quat, np.float64).reshape(4)
        quat = quat / np.linalg.norm(quat)
        if name in self.scene.free_objects:
            joint = m.body(name).jntadr[0]
            qadr, vadr = m.jnt_qposadr[joint], m.jnt_dofadr[joint]
            d.qpos[qadr : qadr + 3], d.qpos[qadr + 3 : qadr + 7] = pos, quat
            d.qvel[vadr : vadr + 6] = 0.0
        elif name in self.scene.mocap_objects:
            mocap = m.body(name).mocapid[0]
            d.mocap_pos[mocap], d.mocap_quat[mocap] = pos, quat
        else:
            objects = self.scene.free_objects + self.scene.mocap_objects
            raise ValueError(f"no placeable object {name!r}; have {objects}")
        mujoco.mj_forward(m, d)
        self._images_time = -1.0  # the scene changed at the same simulated time: render afresh


def arm_twin_model(task) -> mujoco.MjModel:
    """The MuJoCo model of ``task``'s scene (what the camera twins render)."""
    return mujoco.MjModel.from_xml_string(scene_of(task).xml)


def make_arm_twin(task, seed: int | None = None) -> ArmTwin:
    """The twin for ``task``: its scene, its control rate, only its cameras rendered.

    ``seed`` is accepted for symmetry with other backends; the physics is deterministic and all
    randomisation comes from the task's reset with the env's generator.
    """
    return ArmTwin(
        scene_of(task),
        control_hz=task.control_hz,
        cameras=tuple(task.cameras),
        image_size=task.image_size,
    )
