"""The launch files through the real ``ros2 launch`` (launch, launch_ros and ros2cli from
../shared/wheels/ros2-launch, found by ``AMENT_PREFIX_PATH`` as scripts/setup.sh sets it up).

- the package is indexed under the venv prefix, with links to this checkout's files;
- ``sim.launch.py`` brings up the ROS graph that ``robot-rl up sim`` brings up (node names,
  topics with their types, services), without and with a camera, labels each process by its
  node name, and stops every process with no escalation and no crash: on SIGINT to the launch
  process (state only), and on a terminal's Ctrl-C, which reaches every process twice (camera);
- ``robot.launch.py`` with a driver that is not installed exits non-zero with one error line;
- ``learner.launch.py`` writes the learner's checkpoint on SIGINT.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from launch_helpers import PREFIX, require_launch, ros2_env
from process_helpers import Processes
from ros_helpers import Spinner

ROOT = Path(__file__).resolve().parents[1]
TINY_LEARNER = (
    "--agent.num-critics 2 --agent.hidden-dims 32 32 --batch-size 32 --demos 0 "
    "--start-steps 50 --utd-ratio 1"
)
TINY_UP = ["--agent.num-critics", "2", "--agent.hidden-dims", "32", "32", "--batch-size", "32",
           "--demos", "0", "--start-steps", "50", "--utd-ratio", "1"]  # fmt: skip
ESCALATION = re.compile(r"escalating to '?SIG(TERM|KILL)")

pytestmark = pytest.mark.timeout(600)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Launch:
    """``ros2 launch robot_rl FILE ARGS`` in a session of its own, output in a file."""

    def __init__(self, tmp: Path, launch_file: str, **arguments: str):
        self.log = tmp / f"{launch_file}.log"
        self._out = open(self.log, "w")  # noqa: SIM115 (closed in close)
        command = [
            require_launch(),
            "launch",
            "robot_rl",
            launch_file,
            *(f"{k}:={v}" for k, v in arguments.items()),
        ]
        self.popen = subprocess.Popen(
            command,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=ros2_env(tmp / "ros_log"),
            start_new_session=True,
            cwd=tmp,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def interrupt(self, timeout: float = 120, terminal: bool = False) -> int:
        """SIGINT to the launch process alone (as ``kill -INT``), or to its whole process
        group as a terminal's Ctrl-C does (every process then gets launch's SIGINT too); then
        launch's exit code."""
        if terminal:
            os.killpg(self.popen.pid, signal.SIGINT)
        else:
            self.popen.send_signal(signal.SIGINT)
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"ros2 launch still running {timeout} s after SIGINT:\n" + self.output()[-4000:]
            ) from None

    def close(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)
        self._out.close()


class GraphProbe:
    """A node of the test's own that reads the ROS graph: nodes, topics and services."""

    NAME = "launch_graph_probe"

    def __init__(self):
        import rclpy
        from rclpy.context import Context

        self.context = Context()
        rclpy.init(context=self.context, args=[])
        self.node = rclpy.create_node(self.NAME, context=self.context)
        self.spinner = Spinner(self.node, self.context)

    def snapshot(self) -> dict[str, set]:
        own = f"/{self.NAME}"
        node = self.node
        nodes = {
            (ns.rstrip("/") + "/" + name)
            for name, ns in node.get_node_names_and_namespaces()
            if name != self.NAME
        }
        # launch_ros may add a node of its own (launch_ros_<pid>) for its event handlers
        nodes = {n for n in nodes if not n.rsplit("/", 1)[-1].startswith("launch_ros_")}
        services = {
            (name, tuple(types))
            for name, types in node.get_service_names_and_types()
            if not name.startswith(own + "/")
        }
        topics = {(name, tuple(types)) for name, types in node.get_topic_names_and_types()}
        return {"nodes": nodes, "topics": topics, "services": services}

    def close(self):
        self.spinner.close()


def wait_for(condition, timeout: float, what: str, log=None, popen=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if popen is not None and popen.poll() is not None:
            raise AssertionError(
                f"{what}: the process exited ({popen.returncode}):\n"
                + (log()[-4000:] if log else "")
            )
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}" + (f":\n{log()[-4000:]}" if log else ""))


def settled_graph(probe: GraphProbe, expected_nodes: set[str], timeout: float, log, popen) -> dict:
    """The graph once every expected node is there and nothing changed for 5 s."""
    wait_for(
        lambda: expected_nodes <= probe.snapshot()["nodes"],
        timeout,
        f"nodes {sorted(expected_nodes)}",
        log,
        popen,
    )
    last, since = probe.snapshot(), time.monotonic()
    while time.monotonic() - since < 5:
        time.sleep(0.5)
        now = probe.snapshot()
        if now != last:
            last, since = now, time.monotonic()
    return last


def gone(pids) -> bool:
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        with open(f"/proc/{pid}/stat") as f:
            if f.read().split()[2] != "Z":
                alive.append(pid)
    return not alive


@pytest.fixture
def probe():
    pytest.importorskip("rclpy")
    pytest.importorskip("mujoco")
    require_launch()
    graph = GraphProbe()
    yield graph
    graph.close()


def test_robot_rl_is_indexed_under_the_venv_prefix(tmp_path):
    """What setup leaves under the prefix (for an editable install: links to the checkout),
    and ``ros2 pkg prefix`` finding it there."""
    ros2 = require_launch()
    assert (PREFIX / "share/ament_index/resource_index/packages/robot_rl").is_file()
    share = PREFIX / "share/robot_rl"
    assert (share / "package.xml").read_text() == (ROOT / "package.xml").read_text()
    for name in ("sim.launch.py", "robot.launch.py", "learner.launch.py"):
        assert (share / "launch" / name).read_text() == (ROOT / "launch" / name).read_text()
    shipped = sorted(p.name for p in (ROOT / "hardware").glob("*.yaml"))
    assert shipped and sorted(p.name for p in (share / "hardware").glob("*.yaml")) == shipped
    if os.environ.get("ROBOT_RL_VENV"):  # a shell that sourced scripts/setup.sh
        prefixes = os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)
        assert os.environ["ROBOT_RL_VENV"] in prefixes
    found = subprocess.run(
        [ros2, "pkg", "prefix", "robot_rl"],
        capture_output=True,
        text=True,
        env=ros2_env(tmp_path),
        timeout=120,
        check=False,
    )
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()) == PREFIX


@pytest.mark.parametrize("cameras", ["", "front"], ids=["state", "camera"])
def test_sim_launch_brings_up_what_up_brings_up_and_stops_cleanly(cameras, probe, tmp_path):
    processes = Processes(tmp_path)
    expected = {"/arm/arm_twin", "/actor"} | (
        {f"/{cameras}_cam/{cameras}_camera"} if cameras else set()
    )
    camera_args = ["--cameras", cameras, "--image-size", "32"] if cameras else []
    try:
        up = processes.start(
            "up", "up", "sim", "--task", "pick_cube", "--speedup", "2", "--total-steps",
            "100000", "--eval-episodes", "0", "--run-dir", str(tmp_path / "up"),
            *camera_args, *TINY_UP)  # fmt: skip
        up_graph = settled_graph(probe, expected, 240, up.output, up.popen)
        up.popen.send_signal(signal.SIGINT)
        assert up.wait_exit(120) == 130, up.tail()
        wait_for(lambda: not (expected & probe.snapshot()["nodes"]), 60, "up's nodes to go")
    finally:
        processes.close()

    camera_args = {"cameras": cameras, "image_size": "32"} if cameras else {}
    launch = Launch(
        tmp_path,
        "sim.launch.py",
        task="pick_cube",
        speedup="2.0",
        total_steps="100000",
        run_dir=str(tmp_path / "launch"),
        learner=f"tcp://127.0.0.1:{free_port()}",
        learner_args=TINY_LEARNER,
        **camera_args,
    )
    try:
        launch_graph = settled_graph(probe, expected, 240, launch.output, launch.popen)
        # a topic or service that shows up late in one of them: wait for it in the other
        deadline = time.monotonic() + 60
        while launch_graph != up_graph and time.monotonic() < deadline:
            time.sleep(1)
            launch_graph = probe.snapshot()
        for key in ("nodes", "topics", "services"):
            assert launch_graph[key] == up_graph[key], (
                f"{key}: only under ros2 launch {sorted(launch_graph[key] - up_graph[key])}, "
                f"only under robot-rl up {sorted(up_graph[key] - launch_graph[key])}"
            )
        if cameras:
            assert ("/diagnostics", ("diagnostic_msgs/msg/DiagnosticArray",)) in launch_graph[
                "topics"
            ]
        # the learner has trained, so its checkpoint on SIGINT is a real one
        wait_for(
            lambda: (
                "updates" in launch.output()
                and re.search(r"\[learner-\d+\] transitions \d+ .*updates [1-9]", launch.output())
            ),
            300,
            "learner updates",
            launch.output,
            launch.popen,
        )
        pids = [int(p) for p in re.findall(r"process started with pid \[(\d+)\]", launch.output())]
        assert len(pids) == len(expected) + 1  # the nodes and the learner
        code = launch.interrupt(terminal=bool(cameras))  # Ctrl-C in a terminal, with a camera
        out = launch.output()
        assert code == 0, out[-4000:]
        assert not ESCALATION.search(out), out[-4000:]
        assert gone(pids)
        labels = set(re.findall(r"\[INFO\] \[(\w+)-\d+\]: process started", out))
        names = {n.rsplit("/", 1)[-1] for n in expected} | {"learner"}
        assert labels == names, f"process labels {labels}, expected the node names {names}"
        for name in names:  # each one stopped by itself: a clean exit or its interrupted 130
            ends = re.findall(
                rf"\[INFO\] \[{name}-\d+\]: process has finished cleanly|"
                rf"\[ERROR\] \[{name}-\d+\]: process has died \[pid \d+, exit code "
                rf"(-?\d+)",
                out,
            )
            assert ends and all(code in ("", "130") for code in ends), (name, ends)
        assert "checkpoint written" in out
    finally:
        launch.close()


def test_robot_launch_with_a_missing_driver_fails_with_one_message(tmp_path):
    require_launch()
    hardware = tmp_path / "cell.yaml"
    hardware.write_text(
        "robot: {kind: arm, namespace: /arm}\n"
        "nodes:\n"
        "  - {name: arm_driver, executable: robot-rl-no-such-arm, namespace: /arm}\n"
        "  - {name: front_camera, executable: robot-rl-no-such-camera, role: camera,\n"
        "     camera: front, namespace: /front_cam}\n"
    )
    launch = Launch(
        tmp_path,
        "robot.launch.py",
        hardware=str(hardware),
        task="pick_cube",
        run_dir=str(tmp_path / "run"),
    )
    try:
        code = launch.popen.wait(180)
    finally:
        launch.close()
    out = launch.output()
    assert code != 0, out
    errors = [line for line in out.splitlines() if "[ERROR]" in line]
    assert len(errors) == 1, out
    assert "robot-rl-no-such-arm, robot-rl-no-such-camera" in errors[0]
    assert "not installed" in errors[0] and "Traceback" not in out
    assert "process started" not in out  # nothing was started, the actor least of all


def test_learner_launch_writes_its_checkpoint_on_sigint(tmp_path):
    pytest.importorskip("mujoco")
    run_dir = tmp_path / "run"
    launch = Launch(
        tmp_path,
        "learner.launch.py",
        task="pick_cube",
        run_dir=str(run_dir),
        learner=f"tcp://127.0.0.1:{free_port()}",
        learner_args=TINY_LEARNER,
    )
    try:
        wait_for(
            lambda: "[learner-1] learner pick_cube on tcp://" in launch.output(),
            240,
            "the learner to serve",
            launch.output,
            launch.popen,
        )
        code = launch.interrupt()
    finally:
        launch.close()
    out = launch.output()
    assert code == 0 and not ESCALATION.search(out), out
    assert "checkpoint written" in out
    assert sorted((run_dir / "learner" / "checkpoints").glob("step_*")), out
