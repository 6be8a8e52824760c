"""The twin nodes as real processes, driven through ROS by RobotEnv + the ROS backend.

Starts the arm twin node and two camera nodes (``python -m``, faster than real time), runs
pick_cube steps through the topics, kills a camera (the step is truncated with a stale
reason, not a crash), restarts it (steps resume), and e-stops the arm (commands are ignored).
Every process group is killed in the fixture's teardown.
"""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import numpy as np
import pytest
from process_helpers import Processes, node_command, wait_for
from ros_helpers import Watcher

pytest.importorskip("rclpy")
pytest.importorskip("mujoco")

pytestmark = pytest.mark.timeout(150)

SPEEDUP = 2.0
IMAGE_SIZE = 32
CAMERAS = ("front", "wrist")


class TwinNodes(Processes):
    """The twin's node processes (``python -m robot_rl.sim.nodes.MODULE``)."""

    def node(self, name: str, module: str, namespace: str, **params) -> None:
        self.command(name, node_command(f"robot_rl.sim.nodes.{module}", namespace, **params))

    def start_camera(self, camera: str) -> None:
        self.node(
            f"{camera}_cam",
            "camera_node",
            f"/{camera}_cam",
            camera=camera,
            width=IMAGE_SIZE,
            height=IMAGE_SIZE,
            rate=20.0,
        )

    def log(self, name: str) -> str:
        return self[name].output()[-3000:]


def _probe_topics():
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import CameraInfo, Image, JointState
    from std_msgs.msg import Float64MultiArray

    topics = {
        "/arm/joint_states": JointState,
        "/arm/ee_pose": PoseStamped,
        "/arm/ee_twist": TwistStamped,
        "/arm/ee_wrench": WrenchStamped,
        "/arm/gripper/joint_states": JointState,
        "/sim/objects/cube/pose": PoseStamped,
        "/sim/state": Float64MultiArray,
        "/clock": Clock,
        "/diagnostics": DiagnosticArray,
    }
    for camera in CAMERAS:
        topics[f"/{camera}_cam/image_raw"] = Image
        topics[f"/{camera}_cam/camera_info"] = CameraInfo
    return topics


@pytest.fixture(scope="class")
def twin(tmp_path_factory):
    nodes = TwinNodes(tmp_path_factory.mktemp("ros_twin"))
    try:
        nodes.node(
            "arm", "arm_twin_node", "/arm", speedup=SPEEDUP, task="pick_cube", watchdog_timeout=0.5
        )
        for camera in CAMERAS:
            nodes.start_camera(camera)
        yield nodes
    finally:
        nodes.close()


@pytest.fixture(scope="class")
def ros_env(twin):
    """pick_cube as a RobotEnv on the ROS backend over the twin's topics, reset once, and a
    probe counting every topic of the contract."""
    from robot_rl.envs.robot_env import RobotEnv
    from robot_rl.envs.task import make_task
    from robot_rl.ros.backend import RosArmBackend, RosBackendConfig

    task = make_task("pick_cube", cameras=CAMERAS, image_size=IMAGE_SIZE)
    config = RosBackendConfig(max_age=1.0, slop=0.3, clock_timeout=3.0, ready_timeout=40.0)
    probe = Watcher(_probe_topics(), name="topic_probe")
    backend = RosArmBackend(task, config)
    env = RobotEnv(task, backend)
    try:
        try:
            backend.wait_until_ready(timeout=60)
            obs, _ = env.reset(seed=0)
        except Exception:
            print({name: proc.output()[-3000:] for name, proc in twin.started.items()})
            raise
        yield SimpleNamespace(env=env, backend=backend, probe=probe, first=obs)
    finally:
        env.close()
        probe.close()


def _synchronised(backend, timeout: float = 30.0) -> dict:
    """``backend.read()`` once every topic is within the sync slop again: on a loaded machine a
    camera render can lag the arm's pose for a moment (a stale read, as the backend should say),
    which is not what the tests below are about."""
    from robot_rl.envs.backend import StaleReadingError

    def reading():
        try:
            return backend.read()
        except StaleReadingError:
            return None

    return wait_for(reading, timeout, "a reading with every topic in sync", interval=0.1)


def _step_until(env, action, predicate, max_steps):
    for _ in range(max_steps):
        result = env.step(action)
        if predicate(result):
            return result
    return None


HOLD = np.zeros(4, np.float32)


class TestPickCubeThroughTheRosTwin:
    """Steps through the topics; then, in this order, a camera dies and comes back, and the arm
    is e-stopped and released."""

    def test_reset_gives_an_observation_with_the_privileged_state_and_both_cameras(self, ros_env):
        assert ros_env.env.observation_space.contains(ros_env.first)
        assert set(ros_env.backend.read()) >= {"object/cube_pos", "image/front", "image/wrist"}

    def test_valid_steps_move_the_arm_down_with_real_renders(self, ros_env):
        env, backend = ros_env.env, ros_env.backend
        start = backend.read()["tcp_pos"]
        down = np.array([0.0, 0.0, -1.0, 0.0], np.float32)

        def lowered(result) -> bool:
            obs, reward, _, _, info = result
            assert "stale" not in info, info["stale"]
            assert env.observation_space.contains(obs) and np.isfinite(reward)
            return backend.read()["tcp_pos"][2] < start[2] - 0.02

        # 2 cm takes a few steps; a loaded machine that delays commands may take more
        result = _step_until(env, down, lowered, max_steps=25)
        assert result is not None, f"the arm did not go 2 cm down: {backend.read()['tcp_pos']}"
        obs = result[0]
        for camera in CAMERAS:
            assert obs[camera].shape == (IMAGE_SIZE, IMAGE_SIZE, 3)
            assert obs[camera].std() > 1.0  # not a blank frame

    def test_the_backend_keeps_each_cameras_info_for_recordings(self, ros_env):
        from robot_rl.data.camera_model import recorded_cameras

        cameras = recorded_cameras(ros_env.env)  # what record-demos writes as camera_info
        assert set(cameras) == set(CAMERAS)
        for camera, fovy in (("front", 45.0), ("wrist", 75.0)):  # sim/models/arm.xml
            model = cameras[camera]
            assert (model.width, model.height, model.mount) == (IMAGE_SIZE, IMAGE_SIZE, None)
            assert model.fy == pytest.approx(0.5 * IMAGE_SIZE / math.tan(math.radians(fovy) / 2))

    def test_every_topic_of_the_contract_publishes(self, ros_env):
        # The probe is a node of its own: DDS discovery may match it later than the backend.
        probe = ros_env.probe
        deadline = time.monotonic() + 30
        silent = [topic for topic, count in probe.counts.items() if count == 0]
        while silent and time.monotonic() < deadline:
            time.sleep(0.2)
            silent = [topic for topic, count in probe.counts.items() if count == 0]
        assert not silent, f"topics that never published: {silent}"

    def test_a_dead_camera_truncates_the_step_naming_it(self, twin, ros_env):
        """Never a crash or a termination."""
        twin["wrist_cam"].kill()
        result = _step_until(ros_env.env, HOLD, lambda r: "stale" in r[4], max_steps=60)
        assert result is not None, "killing a camera never made a step stale"
        _, _, terminated, truncated, info = result
        assert truncated and not terminated
        assert "/wrist_cam/image_raw" in info["stale"]

    def test_steps_resume_with_fresh_observations_when_the_camera_comes_back(self, twin, ros_env):
        if not twin["wrist_cam"].alive():
            twin.start_camera("wrist")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            _, _, _, _, info = ros_env.env.step(HOLD)
            if "stale" not in info:
                break
        assert "stale" not in info, f"steps did not resume: {info['stale']}"

    def test_the_estop_ignores_motion_and_once_released_the_arm_follows_again(self, twin, ros_env):
        env, backend = ros_env.env, ros_env.backend
        sideways = np.array([0.0, 1.0, 0.0, 0.0], np.float32)
        assert backend.estop(True) == "engaged"
        before = _synchronised(backend)["tcp_pos"]
        for _ in range(5):
            env.step(sideways)
        after = _synchronised(backend)["tcp_pos"]
        assert np.linalg.norm(after - before) < 0.005, (before, after)
        assert backend.estop(False) == "released"
        # A step whose reading is stale holds the arm: step until it has moved, within a bound.
        moved = None
        for _ in range(40):
            env.step(sideways)
            moved = _synchronised(backend)["tcp_pos"]
            if moved[1] > after[1] + 0.02:
                break
        assert moved[1] > after[1] + 0.02, (after, moved)
        assert twin["arm"].alive(), twin.log("arm")
