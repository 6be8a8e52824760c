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
import socket
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from process_helpers import (
    PREFIX,
    Proc,
    Processes,
    alive_pids,
    process_env,
    require_launch,
    ros2_env,
)
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


def launch(tmp: Path, launch_file: str, domain: int | None = None, **arguments: str) -> Proc:
    """``ros2 launch robot_rl FILE ARGS`` in a session of its own, output in a file."""
    command = [require_launch(), "launch", "robot_rl", launch_file]
    command += [f"{k}:={v}" for k, v in arguments.items()]
    env = ros2_env(tmp / "ros_log")
    if domain is not None:
        env["ROS_DOMAIN_ID"] = str(domain)
    return Proc(command, tmp / f"{launch_file}.log", env=env, cwd=tmp)


def spare_domains(case: int) -> tuple[int, int]:
    """Two ROS domains of this run's own beside its shared one (conftest.py), one pair for each
    ``case`` (0 or 1), so that the graph one stack leaves behind (a participant is only
    forgotten when its lease runs out) and the graph of another test never reach the one under
    test. Fast DDS's default ports allow domains up to 232."""
    base = 102 + int(os.environ["ROS_DOMAIN_ID"]) % 32 + 64 * case
    return base, base + 32


class GraphProbe:
    """A node of the test's own that reads the ROS graph: nodes, topics and services."""

    NAME = "launch_graph_probe"

    def __init__(self, domain: int):
        import rclpy
        from rclpy.context import Context

        self.context = Context()
        rclpy.init(context=self.context, args=[], domain_id=domain)
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


def settled_graph(probe: GraphProbe, expected_nodes: set[str], timeout: float, proc) -> dict:
    """The graph once every expected node is there and nothing changed for 5 s."""
    proc.wait_for(
        lambda: expected_nodes <= probe.snapshot()["nodes"],
        timeout,
        f"nodes {sorted(expected_nodes)}",
        interval=0.5,
    )
    last, since = probe.snapshot(), time.monotonic()
    while time.monotonic() - since < 5:
        time.sleep(0.5)
        now = probe.snapshot()
        if now != last:
            last, since = now, time.monotonic()
    return last


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


@pytest.fixture(scope="class", params=["", "front"], ids=["state", "camera"])
def sim_launch(request, tmp_path_factory):
    """``robot-rl up sim``'s ROS graph (up then stopped), then ``sim.launch.py`` with the same
    options running, its graph settled; without and with a camera. Each in a domain of its own,
    with a probe there."""
    require_launch()
    pytest.importorskip("rclpy")
    pytest.importorskip("mujoco")
    cameras = request.param
    up_domain, launch_domain = spare_domains(int(bool(cameras)))
    tmp_path = tmp_path_factory.mktemp("sim_launch")
    expected = {"/arm/arm_twin", "/actor"} | (
        {f"/{cameras}_cam/{cameras}_camera"} if cameras else set()
    )
    camera_args = ["--cameras", cameras, "--image-size", "32"] if cameras else []
    processes = Processes(tmp_path)
    probe = GraphProbe(up_domain)
    try:
        up = processes.start(
            "up", "up", "sim", "--task", "pick_cube", "--speedup", "2", "--total-steps",
            "100000", "--eval-episodes", "0", "--run-dir", str(tmp_path / "up"),
            *camera_args, *TINY_UP, env=process_env({"ROS_DOMAIN_ID": str(up_domain)}))  # fmt: skip
        up_graph = settled_graph(probe, expected, 240, up)
        assert up.interrupt(120, group=False) == 130, up.tail()
    finally:
        probe.close()
        processes.close()

    camera_args = {"cameras": cameras, "image_size": "32"} if cameras else {}
    probe = GraphProbe(launch_domain)
    sim = launch(
        tmp_path,
        "sim.launch.py",
        domain=launch_domain,
        task="pick_cube",
        speedup="2.0",
        total_steps="100000",
        run_dir=str(tmp_path / "launch"),
        learner=f"tcp://127.0.0.1:{free_port()}",
        learner_args=TINY_LEARNER,
        **camera_args,
    )
    try:
        launch_graph = settled_graph(probe, expected, 240, sim)
        yield SimpleNamespace(
            cameras=cameras,
            expected=expected,
            up_graph=up_graph,
            launch_graph=launch_graph,
            proc=sim,
            probe=probe,
        )
    finally:
        sim.stop(grace=0)
        probe.close()


class TestSimLaunchBringsUpWhatUpBringsUp:
    """In this order: the graph, the learner's training, the stop."""

    def test_the_same_nodes_topics_and_services(self, sim_launch):
        up_graph, launch_graph = sim_launch.up_graph, sim_launch.launch_graph
        # a topic or service that shows up late in one of them: wait for it in the other
        deadline = time.monotonic() + 60
        while launch_graph != up_graph and time.monotonic() < deadline:
            time.sleep(1)
            launch_graph = sim_launch.probe.snapshot()
        for key in ("nodes", "topics", "services"):
            assert launch_graph[key] == up_graph[key], (
                f"{key}: only under ros2 launch {sorted(launch_graph[key] - up_graph[key])}, "
                f"only under robot-rl up {sorted(up_graph[key] - launch_graph[key])}"
            )
        if sim_launch.cameras:
            assert ("/diagnostics", ("diagnostic_msgs/msg/DiagnosticArray",)) in launch_graph[
                "topics"
            ]

    def test_the_learner_trains(self, sim_launch):
        """So that its checkpoint on SIGINT is a real one."""
        sim = sim_launch.proc
        sim.wait_for(
            lambda: (
                "updates" in sim.output()
                and re.search(r"\[learner-\d+\] transitions \d+ .*updates [1-9]", sim.output())
            ),
            300,
            "learner updates",
            interval=0.5,
        )

    def test_sigint_stops_every_process_by_itself_with_no_escalation(self, sim_launch):
        """SIGINT to the launch process (state only), or a terminal's Ctrl-C, which reaches
        every process twice (camera)."""
        sim, expected = sim_launch.proc, sim_launch.expected
        pids = [int(p) for p in re.findall(r"process started with pid \[(\d+)\]", sim.output())]
        assert len(pids) == len(expected) + 1  # the nodes and the learner
        code = sim.interrupt(group=bool(sim_launch.cameras))  # Ctrl-C in a terminal, with a camera
        out = sim.output()
        assert code == 0, out[-4000:]
        assert not ESCALATION.search(out), out[-4000:]
        assert not alive_pids(pids)
        labels = set(re.findall(r"\[INFO\] \[(\w+)-\d+\]: process started", out))
        names = {n.rsplit("/", 1)[-1] for n in expected} | {"learner"}
        assert labels == names, f"process labels {labels}, expected the node names {names}"
        # each one stopped by itself, as asked: a clean exit, no ERROR line
        assert not re.search(r"\[ERROR\] \[[\w-]+\]: process has died", out), out[-4000:]
        for name in names:
            assert re.search(rf"\[INFO\] \[{name}-\d+\]: process has finished cleanly", out), (
                name,
                out[-4000:],
            )
        assert "checkpoint written" in out


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
    robot = launch(
        tmp_path,
        "robot.launch.py",
        hardware=str(hardware),
        task="pick_cube",
        run_dir=str(tmp_path / "run"),
    )
    try:
        code = robot.wait_exit(180)
    finally:
        robot.stop(grace=0)
    out = robot.output()
    assert code != 0, out
    errors = [line for line in out.splitlines() if "[ERROR]" in line]
    assert len(errors) == 1, out
    assert "robot-rl-no-such-arm, robot-rl-no-such-camera" in errors[0]
    assert "not installed" in errors[0] and "Traceback" not in out
    assert "process started" not in out  # nothing was started, the actor least of all


def test_learner_launch_writes_its_checkpoint_on_sigint(tmp_path):
    pytest.importorskip("mujoco")
    run_dir = tmp_path / "run"
    learner = launch(
        tmp_path,
        "learner.launch.py",
        task="pick_cube",
        run_dir=str(run_dir),
        learner=f"tcp://127.0.0.1:{free_port()}",
        learner_args=TINY_LEARNER,
    )
    try:
        learner.wait_for(
            lambda: "[learner-1] learner pick_cube on tcp://" in learner.output(),
            240,
            "the learner to serve",
            interval=0.5,
        )
        code = learner.interrupt(group=False)
    finally:
        learner.stop(grace=0)
    out = learner.output()
    assert code == 0 and not ESCALATION.search(out), out
    assert "checkpoint written" in out
    assert sorted((run_dir / "learner" / "checkpoints").glob("step_*")), out


def test_a_missing_component_skips_saying_how_and_fails_where_required():
    """A clone without the launch wheels skips these tests with one line that says how to get
    them; CI (.ci/run sets ROBOT_RL_REQUIRE=launch) fails instead, and CI=true alone does not."""
    from skips import required

    assert not required("launch", {})
    assert not required("launch", {"CI": "true"})
    assert required("launch", {"ROBOT_RL_REQUIRE": "launch"})
    assert required("launch", {"ROBOT_RL_REQUIRE": "rendering, launch"})
    assert required("launch", {"ROBOT_RL_REQUIRE": "all"})
    assert not required("launch", {"ROBOT_RL_REQUIRE": "rendering"})
    ci_run = (ROOT / ".ci" / "run").read_text()
    assert 'ROBOT_RL_REQUIRE="${ROBOT_RL_REQUIRE:-launch}"' in ci_run
