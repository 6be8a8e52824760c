"""The FR3 cell's physics, without ROS: franky-sim serving the libfranka protocol (robot on port
1337, hand on 1338) on one loopback address, stepping the cell's MuJoCo world (``fr3_scene``)
at 1 kHz in a thread of its own, and what only the world knows: where the cube is and whether
the task succeeded.

The control loop is franky-sim's ``SimulationServer.run_once`` (commands in, one 1 ms physics
step, state out), paced to wall time when it can keep up; when it cannot, the robot's time
simply runs slower than the wall clock (``realtime_factor`` says by how much), as libfranka's
client waits for each state packet. Object placements requested from other threads are applied,
and the ground truth is read (``read_now``: stamped when it is read, so a camera frame's age is
its true age), between two steps, so nothing sees a half-written state.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from dataclasses import dataclass

import numpy as np

from robot_rl.sim.cells.fr3_scene import CUBE_BODY, TCP_SITE, build_simulator

HAND_MAX_WIDTH = 0.08
"""The Franka Hand's opening (m): the driver's gripper reading is 1 - width / this."""


@dataclass(frozen=True)
class GroundTruth:
    stamp: float
    """Wall time of the physics step it was read at."""
    sim_time: float
    """Seconds of simulated time since start."""
    cube_pos: np.ndarray
    cube_quat: np.ndarray
    """w-x-y-z."""
    success: bool
    qpos: np.ndarray
    """The whole state of the world's bodies (a camera renders it)."""


def check_loopback(host: str) -> str:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"host {host!r} is not an IP address") from None
    if not address.is_loopback:
        raise ValueError(
            f"host {host} is not a loopback address (127.x.y.z): a simulated "
            "cell serves this machine only"
        )
    return host


class CellWorld:
    """See the module docstring. ``start`` binds the ports and runs the loop; ``close`` stops."""

    def __init__(self, host: str, task: str = "pick_cube", seed: int = 0, realtime: bool = True):
        from robot_rl.envs.task import make_task

        self.host = check_loopback(host)
        self.task = make_task(task)
        self.realtime = realtime
        self.rng = np.random.default_rng(seed)
        self.sim = build_simulator(task)
        self.server = None
        self.steps = 0
        self.placements = 0
        self._started_wall: float | None = None
        self._lock = threading.Lock()
        self._step_lock = threading.Lock()
        self._due = 0.0
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._truth: GroundTruth | None = None
        self._thread: threading.Thread | None = None
        self._running = False
        self.error: BaseException | None = None

    def start(self) -> None:
        """Bind the robot's and the hand's ports on ``host`` and start stepping."""
        import franky_sim

        self.server = franky_sim.SimulationServer(self.sim, hostname_candidates=[self.host])
        try:
            self.server.init()  # binds, then compiles and starts the MuJoCo world
        except OSError as error:
            raise OSError(
                f"cannot serve the Franka protocol on {self.host}: {error} (another "
                "cell on this address?)"
            ) from None
        model = self.sim.model
        self._cube_qpos = int(model.jnt_qposadr[model.body(CUBE_BODY).jntadr[0]])
        self._cube_dof = int(model.jnt_dofadr[model.body(CUBE_BODY).jntadr[0]])
        self._place(*self.random_cube_pose())
        self._read_truth()
        self._running = True
        self._started_wall = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="franky-sim", daemon=True)
        self._thread.start()

    @property
    def clients(self) -> int:
        """Connections to the robot's and the hand's servers (the Franka node holds two)."""
        if self.server is None:
            return 0
        robots = self.server.robot_servers
        servers = [s for rs in robots for s in (rs, rs.gripper_server) if s is not None]
        return sum(bool(s.tcp_connected) for s in servers)

    def linger(self, timeout: float) -> None:
        """Keep serving until every client has disconnected, at most ``timeout`` s: a robot
        stays on while its driver stops the arm and disconnects (a driver that loses its robot
        in the middle of stopping waits for it)."""
        deadline = time.monotonic() + timeout
        while self.alive and self.clients and time.monotonic() < deadline:
            time.sleep(0.05)

    def close(self) -> None:
        self._running = False
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        if self.server is not None:
            self.server.cleanup()
            self.server = None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        try:
            while self._running:
                with self._step_lock:
                    with self._lock:
                        pending, self._pending = self._pending, []
                    for pos, quat in pending:
                        self._place(pos, quat)
                    self.server.run_once(False)
                    self.steps += 1
                self._pace()
        except BaseException as error:  # reported by the node; the robot stops answering
            self.error = error

    def _pace(self) -> None:
        """Keep 1 kHz of robot time per wall second where the machine allows (never catching
        up after a delay: the robot's time just falls behind), and let other threads in."""
        now = time.monotonic()
        self._due = max(self._due + 1e-3, now) if self.realtime else now
        time.sleep(max(0.0, self._due - now))

    def read_now(self) -> GroundTruth:
        """The ground truth of the world as it is now, stamped now (between two steps)."""
        with self._step_lock:
            self._read_truth()
        return self.truth()

    def _read_truth(self) -> None:
        data = self.sim.data
        cube = data.body(CUBE_BODY)
        robot = self.sim.robots[0]
        width = float(robot._get_hand_width())
        gripper = float(np.clip(1.0 - width / HAND_MAX_WIDTH, 0.0, 1.0))
        tcp = np.array(data.site(TCP_SITE).xpos)
        cube_pos, cube_quat = np.array(cube.xpos), np.array(cube.xquat)
        reading = {"tcp_pos": tcp, "gripper_pos": np.array([gripper]), "object/cube_pos": cube_pos}
        truth = GroundTruth(
            stamp=time.time(),
            sim_time=float(data.time),
            cube_pos=cube_pos,
            cube_quat=cube_quat,
            success=bool(self.task.success(reading)),
            qpos=np.array(data.qpos),
        )
        with self._lock:
            self._truth = truth

    def truth(self) -> GroundTruth | None:
        with self._lock:
            return self._truth

    @property
    def realtime_factor(self) -> float:
        """Simulated seconds per wall second since start (1: franky-sim keeps its 1 kHz)."""
        if self._started_wall is None:
            return 0.0
        elapsed = time.monotonic() - self._started_wall
        return self.steps * 1e-3 / elapsed if elapsed > 0 else 0.0

    def random_cube_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Where a person puts the cube: where the task's twin reset does, 1 mm up."""
        return self.task.random_cube_pose(self.rng, above=0.001)

    def reset_objects(self) -> np.ndarray:
        """Put the cube at a random place (at the next step); returns where."""
        pos, quat = self.random_cube_pose()
        with self._lock:
            self._pending.append((pos, quat))
        return pos

    def _place(self, pos: np.ndarray, quat: np.ndarray) -> None:
        import mujoco

        data = self.sim.data
        data.qpos[self._cube_qpos : self._cube_qpos + 3] = pos
        data.qpos[self._cube_qpos + 3 : self._cube_qpos + 7] = quat
        data.qvel[self._cube_dof : self._cube_dof + 6] = 0.0
        mujoco.mj_forward(self.sim.model, data)
        self.placements += 1
