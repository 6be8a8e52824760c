"""The robot workflow's recording steps on the simulated FR3 cell, as a robot owner types them
(issue 26, points 2 and 3): ``record-demos --hardware`` (its drivers brought up by the command
itself; the cell's operator in ``demonstrate`` mode from the hardware file, driving and judging
with the /teleop/joy buttons) and ``record-labels --hardware --no-start-drivers`` (the cell
already running; the operator switched to ``label`` mode while it runs, by a standard ROS 2
parameter set), then ``train-reward`` on those cell frames. Asserted: the artefacts (MCAP demos
with both cameras, each ending on the operator's success; a label file with both classes from
the robot's camera), precision and recall printed, and that no node of the recording processes
subscribes to a ``/sim/`` topic (rclpy graph introspection while they run). Speed is printed,
never asserted.
"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import pytest

pytest.importorskip("franky")
pytest.importorskip("franky_sim")
pytest.importorskip("mujoco")
pytest.importorskip("rclpy")

from process_helpers import ROBOT_RL, UP_ROBOT_TINY, CellProcesses, Proc, run_cli, wait_for
from ros_helpers import Spinner

from robot_rl.sim.cells.franka_harness import ArmClient, cell_hardware, loopback_host

OPERATOR = "/teleop/simulated_human"
LOADED_MACHINE = ["--ros.max-age", "0.6"]
"""The cell's cameras render on this machine's CPU, shared with everything else a test run
starts: under load their frames arrive 0.3-0.4 s old, past the 0.3 s bound their 10 Hz rate
gives, and every step holds. The staleness bound has tests of its own (test_ros_stale_step);
here it is widened so that a loaded machine records at all."""


def hardware_with_mode(host: str, directory: Path, mode: str) -> Path:
    """The cell's hardware file on ``host`` with the operator in ``mode`` from the start."""
    path = cell_hardware(host, directory)
    text = path.read_text()
    assert "mode: correct" in text
    out = directory / f"fr3_sim_{mode}.yaml"
    out.write_text(text.replace("mode: correct", f"mode: {mode}"))
    return out


class GraphProbe:
    """A test node that reads the ROS 2 graph: which nodes there are, what each subscribes to."""

    def __init__(self):
        import rclpy

        context = rclpy.Context()
        rclpy.init(context=context)
        self.node = rclpy.create_node("graph_probe", context=context)
        self.spinner = Spinner(self.node, context)

    def nodes(self) -> set[str]:
        pairs = self.node.get_node_names_and_namespaces()
        return {f"{ns.rstrip('/')}/{name}" for name, ns in pairs}

    def subscriptions(self, names) -> dict[str, list[str]]:
        """Each of ``names`` that is on the graph -> the topics it subscribes to."""
        out = {}
        for full in names:
            namespace, _, name = full.rpartition("/")
            try:
                topics = self.node.get_subscriber_names_and_types_by_node(name, namespace or "/")
            except Exception:  # it left the graph meanwhile
                continue
            out[full] = sorted(topic for topic, _ in topics)
        return out

    def set_mode(self, mode: str):
        """``ros2 param set /teleop/simulated_human mode MODE``, as a harness or person does."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        client = self.node.create_client(SetParameters, f"{OPERATOR}/set_parameters")
        assert client.wait_for_service(timeout_sec=60.0), "the operator's parameter service"
        request = SetParameters.Request(
            parameters=[Parameter("mode", value=mode).to_parameter_msg()]
        )
        future = client.call_async(request)
        wait_for(future.done, 60.0, "the parameter set's answer")
        return future.result().results[0]

    def close(self):
        self.spinner.close()


def watch_recording(proc: Proc, probe: GraphProbe, own: set[str], cell: set[str]):
    """While ``proc`` runs: once its own nodes ``own`` are on the graph, every node outside the
    cell's ``cell`` and the probe (so the recording process's, whatever they are called) and
    what they subscribe to."""
    proc.wait_for(lambda: own <= probe.nodes(), 300.0, f"the recorder's nodes {sorted(own)}")
    others = probe.nodes() - cell - {"/graph_probe"}
    return wait_for(
        lambda: (subs := probe.subscriptions(others)) and own <= set(subs) and subs,
        60.0,
        "the recorder's subscriptions",
    )


def assert_no_sim_topic(subscriptions: dict[str, list[str]]) -> None:
    sim = {
        node: [t for t in topics if t.startswith("/sim/")] for node, topics in subscriptions.items()
    }
    assert not any(sim.values()), f"robot-mode processes subscribe to /sim/ topics: {sim}"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("record_on_robot")


@pytest.fixture(scope="module")
def probe():
    graph = GraphProbe()
    yield graph
    graph.close()


def cell_nodes(hardware: Path) -> set[str]:
    from robot_rl.hardware import load_hardware

    return {f"{n.namespace.rstrip('/')}/{n.name}" for n in load_hardware(hardware).nodes}


@pytest.fixture(scope="module")
def demos(workdir, probe):
    """record-demos --hardware: its drivers brought up by the command itself, the operator in
    demonstrate mode from the hardware file."""
    hardware = hardware_with_mode(loopback_host(41), workdir, "demonstrate")
    out = workdir / "demos"
    args = ["--hardware", str(hardware), "--task", "pick_cube", "--cameras", "front", "wrist"]
    proc = Proc(
        [*ROBOT_RL, "record-demos", *args, "--episodes", "2", "--out", str(out), *LOADED_MACHINE],
        workdir / "record-demos.log",
    )
    started = time.monotonic()
    try:
        subscriptions = watch_recording(
            proc,
            probe,
            {"/record_demos", "/teleop_source", "/operator_buttons"},
            cell_nodes(hardware),
        )
        code = proc.wait_exit(600)
    finally:
        proc.stop()
    text = proc.output()
    print(text[-3000:])
    assert code == 0, text[-3000:]
    return out, subscriptions, text, time.monotonic() - started


def test_record_demos_on_the_robot_keeps_what_the_operator_says_succeeded(demos):
    from robot_rl.data.mcap_demos import demo_files, read_episode

    out, subscriptions, text, seconds = demos
    assert_no_sim_topic(subscriptions)
    assert {"/front_cam/image_raw", "/wrist_cam/image_raw", "/arm/ee_pose"} <= set(
        subscriptions["/record_demos"]
    )
    assert "/teleop/joy" in subscriptions["/operator_buttons"]
    assert "drivers active" in text and "drivers stopped" in text  # brought up and down here
    files = demo_files(out)
    assert [f.name for f in files] == ["episode_000.mcap", "episode_001.mcap"]
    for file in files:
        episode = read_episode(file).episode
        assert episode.observations[0]["front"].shape == episode.observations[0]["wrist"].shape
        assert episode.observations[0]["state"].shape == (7,)  # no cube pose: robot mode
        assert episode.terminated[-1] and episode.rewards[-1] == 1.0  # the success press
        assert episode.rewards[:-1].sum() == 0 and not episode.terminated[:-1].any()
        assert episode.info["judge"] == "joy" and episode.info["source"] == "teleop"
        # the drivers' camera_info, fitted to the images; the TCP each step; no mounts (the
        # hardware file does not give them). fovy: the cell's cameras (sim/cells/fr3_scene.py)
        topics = decoded_topics(file)
        for camera, fovy in (("front", 45.0), ("wrist", 75.0)):
            size = episode.observations[0][camera].shape[0]
            infos = topics[f"/{camera}_cam/camera_info"]
            assert len(infos) == len(episode) + 1
            assert (infos[0].width, infos[0].height) == (size, size)
            assert infos[0].k[4] == pytest.approx(0.5 * size / math.tan(math.radians(fovy) / 2))
        assert len(topics["/tf"]) == len(episode) + 1 and "/tf_static" not in topics
    attempts = int(re.search(r"\((\d+) attempts", text).group(1))
    print(f"demos: 2 kept of {attempts} attempts, {seconds:.0f} s with the drivers' bring-up")


def decoded_topics(path) -> dict[str, list]:
    """Every message of an MCAP file, decoded from its own schemas, by topic."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    topics: dict[str, list] = {}
    with open(path, "rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        for _, channel, _, decoded in reader.iter_decoded_messages():
            topics.setdefault(channel.topic, []).append(decoded)
    return topics


@pytest.fixture(scope="module")
def labels(workdir, probe):
    """The cell started as a robot's drivers are by another terminal, the operator switched to
    label mode while it runs, then record-labels --no-start-drivers."""
    hardware = cell_hardware(loopback_host(43), workdir)  # the operator starts correcting
    (workdir / "cell").mkdir()
    cell = CellProcesses(hardware, workdir / "cell")
    arm = ArmClient("/arm")
    out = workdir / "labels.npz"
    try:
        wait_for(
            lambda: arm.driver_status("/arm/franka_driver").get("motion_enabled") == "True",
            300.0,
            "the Franka node to become active",
        )
        refused = probe.set_mode("paint")
        assert not refused.successful and "mode must be one of" in refused.reason
        assert probe.set_mode("label").successful
        proc = Proc(
            [*ROBOT_RL, "record-labels", "--hardware", str(hardware), "--no-start-drivers",
             "--episodes", "4", "--max-steps", "120", "--out", str(out), *LOADED_MACHINE],
            workdir / "record-labels.log",
        )  # fmt: skip
        try:
            subscriptions = watch_recording(
                proc, probe, {"/record_labels", "/teleop_source", "/operator_buttons"},
                cell_nodes(hardware),
            )  # fmt: skip
            code = proc.wait_exit(600)
        finally:
            proc.stop()
        text = proc.output()
        print(text[-3000:])
        assert code == 0, text[-3000:]
        assert "drivers active" not in text  # it used the running ones
        yield out, subscriptions, text
    finally:
        arm.close()
        cell.stop()


def test_record_labels_on_the_robot_labels_the_cameras_frames_by_the_button(labels):
    from robot_rl.rewards.labels import load_labels

    out, subscriptions, text = labels
    assert_no_sim_topic(subscriptions)
    assert "/front_cam/image_raw" in subscriptions["/record_labels"]
    label_set = load_labels(out)
    assert label_set.images.shape[1:] == (64, 64, 3)
    assert 0 < label_set.positives < len(label_set)  # both classes
    assert sorted(set(label_set.episodes.tolist())) == [0, 1, 2, 3]
    assert label_set.meta["labeler"] == "button" and label_set.meta["hardware"]
    print(re.findall(r"labels: .*", text)[-1])


@pytest.fixture(scope="module")
def classifier(labels, workdir):
    out, _, _ = labels
    checkpoint = workdir / "classifier"
    # a fixed threshold keeps every other episode for training (no validation split); seed 0
    # holds out the 4th (low_lift), so the clean pick's success frames are trained on
    result = run_cli(
        "train-reward", "--labels", str(out), "--steps", "100", "--threshold", "0.5",
        "--out", str(checkpoint), timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    print(result.stdout)
    return checkpoint, result.stdout


def test_train_reward_on_the_cells_frames_reports_precision_and_recall(classifier):
    checkpoint, text = classifier
    assert "frames from the robot of" in text
    assert re.search(r"precision (\d+\.\d%|n/a), recall (\d+\.\d%|n/a)", text)
    assert any(checkpoint.iterdir())


def test_up_robot_on_the_recorded_demos_and_classifier_(demos, classifier, workdir, probe):
    """The workflow's chain (issue 26, point 10): RL in the cell from what the stages above
    recorded and trained, for a time budget, then the final checkpoint evaluated on the robot
    and judged by the cell's ground truth. Asserted: each stage's artefact, and that neither
    the stack's nor the evaluation's own nodes subscribe to a /sim/ topic."""
    import json

    from robot_rl.agents.checkpoint import latest_checkpoint

    (demo_dir, *_), (checkpoint, _) = demos, classifier
    (workdir / "rl").mkdir()
    hardware = cell_hardware(loopback_host(45), workdir / "rl")  # the operator corrects
    run_dir = workdir / "up"
    # no update in this chain (updates have their tests in test_up_robot_cell): a first update's
    # compile on a loaded machine can outlast the stop's grace, and the learner's final
    # checkpoint and summary with it
    tiny = [*UP_ROBOT_TINY]
    tiny[tiny.index("--start-steps") + 1] = "100000"
    proc = Proc(
        [*ROBOT_RL, "up", "robot", "--hardware", str(hardware), "--task", "pick_cube",
         "--cameras", "front", "wrist", "--image-size", "64", "--demo-path", str(demo_dir),
         "--reward-classifier", str(checkpoint), "--relabel-false-positives", "--operator", "joy",
         "--minutes", "1", "--run-dir", str(run_dir), *tiny, "--max-age", "0.6"],
        workdir / "up.log",
    )  # fmt: skip
    try:
        subscriptions = watch_recording(
            proc, probe, {"/actor", "/teleop_source", "/operator_buttons"}, cell_nodes(hardware)
        )
        code = proc.wait_exit(900)
    finally:
        proc.stop(60)
    text = proc.output()
    print(text[-3000:])
    assert code == 0, text[-3000:]
    assert_no_sim_topic(subscriptions)
    assert "time budget spent" in text
    report = json.loads((run_dir / "report.json").read_text())
    # transitions reached the learner
    assert report["learner"]["received"] > 0
    final = latest_checkpoint(run_dir / "learner" / "checkpoints")
    assert final is not None
    print(f"up robot: {report['learner']['received']} steps, final checkpoint {final.name}")
