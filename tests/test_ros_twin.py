"""The twin nodes as real processes, driven through ROS by RobotEnv + the ROS backend.

Starts the arm twin node and two camera nodes (``python -m``, faster than real time), runs
pick_cube steps through the topics, kills a camera (the step is truncated with a stale
reason, not a crash), restarts it (steps resume), and e-stops the arm (commands are ignored).
Every process group is killed in the fixture's teardown.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from ros_helpers import Spinner

pytest.importorskip("rclpy")
pytest.importorskip("mujoco")

pytestmark = pytest.mark.timeout(150)

SPEEDUP = 2.0
IMAGE_SIZE = 32
CAMERAS = ("front", "wrist")


class NodeProcesses:
    """Node processes, each in its own process group, logging into ``log_dir``."""

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.procs: dict[str, subprocess.Popen] = {}
        self.env = {
            **os.environ,
            "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"),
            "PYTHONUNBUFFERED": "1",
        }
        self.env.setdefault("PYOPENGL_PLATFORM", self.env["MUJOCO_GL"])

    def start(self, name: str, module: str, namespace: str, **params) -> None:
        args = [
            sys.executable,
            "-m",
            f"robot_rl.sim.nodes.{module}",
            "--ros-args",
            "-r",
            f"__ns:={namespace}",
        ]
        for key, value in params.items():
            args += ["-p", f"{key}:={value}"]
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 (closed in stop)
        self.procs[name] = subprocess.Popen(
            args, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()

    def start_camera(self, camera: str) -> None:
        self.start(
            f"{camera}_cam",
            "camera_node",
            f"/{camera}_cam",
            camera=camera,
            width=IMAGE_SIZE,
            height=IMAGE_SIZE,
            rate=20.0,
        )

    def kill(self, name: str, sig=signal.SIGKILL) -> None:
        proc = self.procs.pop(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.kill(name, signal.SIGTERM)

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text(errors="replace")[-3000:]


class TopicProbe:
    """Counts messages per topic on its own node and thread."""

    def __init__(self, topics):
        import rclpy
        from rclpy.context import Context

        from robot_rl.ros.qos import sensor_qos

        self.counts = dict.fromkeys(topics, 0)
        self.context = Context()
        rclpy.init(context=self.context, args=[])
        self.node = rclpy.create_node("topic_probe", context=self.context)
        for topic, msg_type in topics.items():
            qos = 10 if topic == "/diagnostics" else sensor_qos()
            self.node.create_subscription(msg_type, topic, self._counter(topic), qos)
        self.spinner = Spinner(self.node, self.context)

    def _counter(self, topic):
        def count(_msg):
            self.counts[topic] += 1

        return count

    def close(self):
        self.spinner.close()


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


@pytest.fixture
def twin(tmp_path):
    nodes = NodeProcesses(tmp_path)
    try:
        nodes.start(
            "arm", "arm_twin_node", "/arm", speedup=SPEEDUP, task="pick_cube", watchdog_timeout=0.5
        )
        for camera in CAMERAS:
            nodes.start_camera(camera)
        yield nodes
    finally:
        nodes.stop_all()


def _step_until(env, action, predicate, max_steps):
    for _ in range(max_steps):
        result = env.step(action)
        if predicate(result):
            return result
    return None


def test_pick_cube_through_ros_twin(twin):
    from robot_rl.envs.robot_env import RobotEnv
    from robot_rl.envs.task import make_task
    from robot_rl.ros.backend import RosArmBackend, RosBackendConfig

    task = make_task("pick_cube", cameras=CAMERAS, image_size=IMAGE_SIZE)
    config = RosBackendConfig(max_age=1.0, slop=0.3, clock_timeout=3.0, ready_timeout=40.0)
    probe = TopicProbe(_probe_topics())
    backend = RosArmBackend(task, config)
    env = RobotEnv(task, backend)
    try:
        try:
            backend.wait_until_ready(timeout=60)
            obs, _ = env.reset(seed=0)
        except Exception:
            print({name: twin.log(name) for name in twin.procs})
            raise
        assert env.observation_space.contains(obs)
        assert set(backend.read()) >= {"object/cube_pos", "image/front", "image/wrist"}

        # valid steps: the arm moves down as commanded, images are real renders
        start = backend.read()["tcp_pos"]
        for _ in range(5):
            obs, reward, terminated, truncated, info = env.step(
                np.array([0.0, 0.0, -1.0, 0.0], np.float32)
            )
            assert "stale" not in info, info["stale"]
            assert env.observation_space.contains(obs) and np.isfinite(reward)
        assert backend.read()["tcp_pos"][2] < start[2] - 0.02
        for camera in CAMERAS:
            assert obs[camera].shape == (IMAGE_SIZE, IMAGE_SIZE, 3)
            assert obs[camera].std() > 1.0  # not a blank frame
        # The probe is a node of its own: DDS discovery may match it later than the backend.
        deadline = time.monotonic() + 30
        silent = [topic for topic, count in probe.counts.items() if count == 0]
        while silent and time.monotonic() < deadline:
            time.sleep(0.2)
            silent = [topic for topic, count in probe.counts.items() if count == 0]
        assert not silent, f"topics that never published: {silent}"

        # a camera dies: a truncated step naming it, never a crash or a termination
        hold = np.zeros(4, np.float32)
        twin.kill("wrist_cam")
        result = _step_until(env, hold, lambda r: "stale" in r[4], max_steps=60)
        assert result is not None, "killing a camera never made a step stale"
        _, _, terminated, truncated, info = result
        assert truncated and not terminated
        assert "/wrist_cam/image_raw" in info["stale"]

        # it comes back: steps resume with fresh observations
        twin.start_camera("wrist")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            _, _, _, _, info = env.step(hold)
            if "stale" not in info:
                break
        assert "stale" not in info, f"steps did not resume: {info['stale']}"

        # e-stop: motion commands are ignored; released, the arm follows again
        assert backend.estop(True) == "engaged"
        before = backend.read()["tcp_pos"]
        for _ in range(5):
            _, _, _, _, info = env.step(np.array([0.0, 1.0, 0.0, 0.0], np.float32))
        after = backend.read()["tcp_pos"]
        assert np.linalg.norm(after - before) < 0.005, (before, after)
        assert backend.estop(False) == "released"
        for _ in range(5):
            env.step(np.array([0.0, 1.0, 0.0, 0.0], np.float32))
        assert backend.read()["tcp_pos"][1] > after[1] + 0.02
        assert twin.procs["arm"].poll() is None, twin.log("arm")
    finally:
        env.close()
        probe.close()
