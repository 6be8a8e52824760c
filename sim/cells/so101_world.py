"""The SO-101 cell's physics, without ROS: the SO-101 twin's world (the arm, a table, a 2.5 cm
cube, a front and a wrist camera: ``sim/so101_twin``) behind a bus of Feetech servos on a
pseudo-terminal (``feetech_peer``), which the real SO-101 node opens as it opens an arm's USB
adapter. The physics advances to the wall clock whenever the bus is polled or the world is read
(``so101_arm.MujocoServoArm``), and what only the world knows (where the cube is, whether the
task succeeded) is read between two steps.
"""

from __future__ import annotations

import time
from pathlib import Path

import mujoco
import numpy as np

from robot_rl.drivers.arms import so101_kinematics as kin
from robot_rl.sim.cells.cell_world import GroundTruth
from robot_rl.sim.cells.feetech_peer import FeetechPeer
from robot_rl.sim.so101_arm import MujocoServoArm
from robot_rl.sim.so101_twin import HOME_JOINTS, so101_twin_model

QUIET = 0.5
"""Seconds without a byte from the driver after which it counts as gone (it polls at 50 Hz)."""


class So101CellWorld:
    """See the module docstring. ``start`` plugs the bus (the adapter's link at ``port``)."""

    def __init__(self, port: str | Path, task: str = "so101_pick_cube", seed: int = 0):
        from robot_rl.envs.task import make_task

        self.task = make_task(task)
        if getattr(self.task, "robot", None) != "so101":
            raise ValueError(f"task {task!r} is not an SO-101 task (try so101_pick_cube)")
        self.rng = np.random.default_rng(seed)
        self.arm = MujocoServoArm(
            dict(zip(kin.JOINTS, HOME_JOINTS, strict=True)), so101_twin_model(self.task)
        )
        model = self.arm.model
        self.peer = FeetechPeer(port, [m.id for m in self.arm.motors.values()], self.arm)
        self._cube = model.body("cube").id
        joint = model.body("cube").jntadr[0]
        self._cube_qpos, self._cube_dof = model.jnt_qposadr[joint], model.jnt_dofadr[joint]
        self._tcp, self._jaw = model.site("tcp").id, model.joint(kin.GRIPPER).qposadr[0]
        self.placements = 0
        self.error: BaseException | None = None

    @property
    def port(self) -> Path:
        return self.peer.link

    def start(self) -> None:
        with self.arm.lock:
            self._place(*self.random_cube_pose())
        self.peer.start()

    def linger(self, timeout: float) -> None:
        """Keep answering while the driver still talks on the bus (it stops the arm and turns
        the torque off as it stops), until it has been quiet for ``QUIET`` s, ``timeout`` s at
        most: a robot's servos stay powered while their driver stops."""
        deadline = time.monotonic() + timeout
        while self.alive and time.monotonic() < deadline:
            if time.monotonic() - self.peer.last_heard > QUIET:
                return
            time.sleep(0.05)

    def close(self) -> None:
        self.peer.close()

    @property
    def alive(self) -> bool:
        return self.peer.serving

    @property
    def steps(self) -> int:
        return round(self.arm.data.time / self.arm.model.opt.timestep)

    @property
    def realtime_factor(self) -> float:
        return self.arm.realtime_factor

    def read_now(self) -> GroundTruth:
        """The world as it is now (the physics brought up to the wall clock first)."""
        arm = self.arm
        with arm.lock:
            arm.advance()
            d = arm.data
            cube_pos, cube_quat = d.xpos[self._cube].copy(), d.xquat[self._cube].copy()
            reading = {
                "tcp_pos": d.site_xpos[self._tcp].copy(),
                "gripper_pos": np.array([kin.closed_fraction(float(d.qpos[self._jaw]))]),
                "object/cube_pos": cube_pos,
            }
            sim_time, qpos = float(d.time), d.qpos.copy()
        return GroundTruth(
            stamp=time.time(),
            sim_time=sim_time,
            cube_pos=cube_pos,
            cube_quat=cube_quat,
            success=bool(self.task.success(reading)),
            qpos=qpos,
        )

    def random_cube_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Where a person puts the cube: where the task's twin reset does, 1 mm up."""
        return self.task.random_cube_pose(self.rng, above=0.001)

    def reset_objects(self) -> np.ndarray:
        """Put the cube at a random place now; returns where."""
        pos, quat = self.random_cube_pose()
        with self.arm.lock:
            self.arm.advance()
            self._place(pos, quat)
        return pos

    def _place(self, pos: np.ndarray, quat: np.ndarray) -> None:
        d = self.arm.data
        d.qpos[self._cube_qpos : self._cube_qpos + 3] = pos
        d.qpos[self._cube_qpos + 3 : self._cube_qpos + 7] = quat
        d.qvel[self._cube_dof : self._cube_dof + 6] = 0.0
        mujoco.mj_forward(self.arm.model, d)
        self.placements += 1
