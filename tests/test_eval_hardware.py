"""``robot-rl eval --hardware FILE`` (issue 17, point 8): a checkpoint a learner wrote from robot
data is evaluated on the robot, with success from the operator, never from the twin.

The robot here is the twin's arm node posing as hardware (a hardware file that names it as the
driver; it keeps simulated time, so ``--ros.use-sim-time``), started by eval as ``up robot``
starts drivers. The operator is a real /teleop/joy publisher: it presses the success button in
the first episode and not in the second. Also: the learner records the backend its data came
from, eval refuses a robot checkpoint on the twin unless --on-twin, and on a robot it refuses to
run without a success source.
"""

from __future__ import annotations

import json
import queue
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("mujoco")
pytest.importorskip("rclpy")

from operator_helpers import JoyDevice
from process_helpers import ROBOT_RL, Proc, run_cli, wait_for

from robot_rl.agents.config import AgentConfig

TASK = "pick_cube"
SMALL = AgentConfig(num_critics=2, hidden_dims=(32, 32))


def robot_checkpoint(directory: Path, hardware: str) -> Path:
    """A robot-mode (state only) checkpoint as a learner fed by `up robot` writes it."""
    from robot_rl.agents.checkpoint import save_checkpoint
    from robot_rl.agents.sac import SACAgent
    from robot_rl.envs.task import make_task
    from robot_rl.runtime.observation_mode import ObservationMode

    mode = ObservationMode(robot_mode=True)
    task = make_task(TASK, **mode.task_options(TASK))
    agent = SACAgent.create(0, task.observation_space(), task.action_space(), SMALL)
    meta = {
        "task": TASK,
        "backend": "robot",
        "hardware": hardware,
        "env_id": "",
        "observation": mode.metadata(TASK),
    }
    return save_checkpoint(directory / "checkpoints", 100, agent, metadata=meta)


def twin_hardware(directory: Path) -> Path:
    path = directory / "twin_as_hardware.yaml"
    path.write_text(
        "name: twin_as_hardware\n"
        "robot: {kind: arm, model: franka_fr3, namespace: /arm}\n"
        "nodes:\n"
        "  - name: arm_twin\n"
        "    executable: robot-rl-arm-twin\n"
        "    namespace: /arm\n"
        f"    parameters: {{task: {TASK}, speedup: 4.0, seed: 0}}\n"
    )
    return path


def one_line(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, (done.returncode, lines)
    return lines[0]


@pytest.fixture(scope="module")
def robot_eval(tmp_path_factory):
    """``eval --hardware`` of a robot checkpoint over two episodes: the operator holds the
    success button in the first until eval counts it, and presses nothing in the second."""
    tmp_path = tmp_path_factory.mktemp("eval_hardware")
    hardware = twin_hardware(tmp_path)
    checkpoint = robot_checkpoint(tmp_path / "run", str(hardware))
    report = tmp_path / "report.jsonl"
    evaluation = Proc(
        [*ROBOT_RL, "eval", "--checkpoint", str(checkpoint), "--hardware", str(hardware),
         "--operator", "joy", "--success-button", "3", "--episodes", "2",
         "--ros.use-sim-time", "True", "--report", str(report), "--grace", "10"],
        tmp_path / "eval.log",
    )  # fmt: skip
    device = JoyDevice()

    def said(text: str) -> bool:
        assert evaluation.alive() or text in evaluation.output(), evaluation.output()
        return text in evaluation.output()

    try:
        wait_for(lambda: said("episode 1/2: running"), 120.0, "the first episode")
        # the operator holds the success button until eval counts it (one press)
        device.press(3, lambda: said("episode 1/2: success"), 60.0, "the operator's success")
        wait_for(lambda: not evaluation.alive(), 120.0, "the evaluation to end")
    finally:
        evaluation.stop(grace=30)
        device.close()
    records = (
        [json.loads(line) for line in report.read_text().splitlines()] if report.exists() else []
    )
    return SimpleNamespace(
        code=evaluation.returncode, output=evaluation.output(), records=records, hardware=hardware
    )


def test_eval_on_the_robot_ends_cleanly(robot_eval):
    assert robot_eval.code == 0, robot_eval.output
    # the drivers start before JAX's backend does: no fork under a multithreaded JAX
    assert "os.fork() was called" not in robot_eval.output


def test_eval_counts_the_operators_press_as_the_first_episodes_success(robot_eval):
    first, _, _ = robot_eval.records
    assert first["success"] and first["return"] == 1.0 and first["length"] < 100


def test_eval_counts_no_success_without_a_press_whatever_the_twins_cube_did(robot_eval):
    _, second, _ = robot_eval.records
    assert not second["success"] and second["return"] == 0.0 and second["length"] == 100
    assert "episode 2/2: no success after 100 steps" in robot_eval.output


def test_eval_summary_names_the_operator_and_the_hardware_trained_on(robot_eval):
    _, _, summary = robot_eval.records
    assert summary["success_rate"] == 0.5 and summary["episodes"] == 2
    assert summary["success_judged_by"] == "the operator (joy)"
    assert summary["success_source"] == "operator" and summary["witnesses"] == {}
    assert "success judged by the operator (joy); report" in robot_eval.output
    assert summary["trained_on"] == str(robot_eval.hardware)


def test_eval_refusals_are_one_line(tmp_path):
    hardware = twin_hardware(tmp_path)
    checkpoint = robot_checkpoint(tmp_path / "run", str(hardware))
    line = one_line(run_cli("eval", "--checkpoint", str(checkpoint), "--episodes", "1"))
    assert "was trained on" in line and "--hardware" in line and "--on-twin" in line
    line = one_line(run_cli("eval", "--checkpoint", str(checkpoint), "--hardware", str(hardware)))
    assert "--operator keyboard|joy or --reward-classifier" in line
    line = one_line(run_cli("eval", "--checkpoint", str(checkpoint), "--operator", "joy"))
    assert "give --hardware" in line
    # the ground truth judges only in a simulated cell (the twin posing as hardware is none)
    line = one_line(
        run_cli("eval", "--checkpoint", str(checkpoint), "--hardware", str(hardware),
                "--judge", "cell-ground-truth")
    )  # fmt: skip
    assert "is not a simulated cell" in line and "a robot has no ground truth" in line
    line = one_line(
        run_cli("eval", "--checkpoint", str(checkpoint), "--hardware", str(hardware),
                "--operator", "joy", "--judge", "classifier")
    )  # fmt: skip
    assert "--judge classifier needs --reward-classifier" in line
    done = run_cli(
        "eval", "--checkpoint", str(checkpoint), "--episodes", "1", "--on-twin", "--json-out"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["evaluated_on"] == "twin" and result["trained_on"] == str(hardware)


def test_learner_checkpoints_record_the_backend_up_robot_names(tmp_path):
    from robot_rl.agents.checkpoint import latest_checkpoint, read_metadata
    from robot_rl.runtime.learner import Learner, LearnerConfig
    from robot_rl.stack import StackConfig, learner_process

    hardware = twin_hardware(tmp_path)
    robot = learner_process(StackConfig(mode="robot", hardware=str(hardware)))
    assert robot.config.hardware == str(hardware.absolute())  # in its --config file
    assert learner_process(StackConfig(mode="sim")).config.hardware is None
    for name, given, backend in (("robot", str(hardware), "robot"), ("twin", None, "twin")):
        learner = Learner(
            LearnerConfig(
                run_dir=str(tmp_path / name),
                hardware=given,
                robot_mode=given is not None,
                agent=SMALL,
                demos=0,
                bind="tcp://127.0.0.1:0",
            )
        )
        learner.server = SimpleNamespace(received=queue.Queue())  # no actor: nothing arrives
        assert learner.checkpoint(final=True)
        meta = read_metadata(latest_checkpoint(tmp_path / name / "checkpoints"))
        assert (meta["backend"], meta["hardware"]) == (backend, given)
        learner.ingest_log.close()


def eager_classifier(path: Path, size: int) -> Path:
    """A reward classifier on the front camera that says success on every frame (threshold
    near 0): the false positives eval must not count when another source judges."""
    from robot_rl.rewards.classifier import ClassifierConfig, RewardClassifier, save_classifier

    config = ClassifierConfig(camera="front", image_size=size, threshold=1e-6, task_gate=False)
    return save_classifier(path, RewardClassifier.create(config), {})


def test_a_classifier_that_the_operator_contradicts_is_warned_and_not_counted(tmp_path):
    """The README's form with an operator beside it: the classifier fires at once, the operator
    presses nothing: every episode is no success, each one warned in one line, the report
    names the operator as the judge and counts the classifier's disagreements."""
    hardware = twin_hardware(tmp_path)
    with open(hardware, "a") as f:
        f.write(
            "  - name: front_camera\n"
            "    executable: robot-rl-camera-twin\n"
            "    role: camera\n"
            "    camera: front\n"
            "    namespace: /front_cam\n"
            f"    parameters: {{task: {TASK}, camera: front, width: 32, height: 32}}\n"
        )
    checkpoint = robot_checkpoint(tmp_path / "run", str(hardware))
    report = tmp_path / "report.jsonl"
    done = run_cli(
        "eval", "--checkpoint", str(checkpoint), "--hardware", str(hardware),
        "--reward-classifier", str(eager_classifier(tmp_path / "classifier", 32)),
        "--operator", "joy", "--operator-wait", "0.5", "--episodes", "2",
        "--ros.use-sim-time", "True", "--report", str(report), "--grace", "10",
        timeout=600,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "success judged by the operator (joy), witnesses: classifier" in output
    for episode in (1, 2):
        assert (
            f"warning: episode {episode}: the reward classifier says success, the operator "
            "(the judge) says no success" in output
        )
    *episodes, summary = [json.loads(line) for line in report.read_text().splitlines()]
    assert [e["success"] for e in episodes] == [False, False]
    assert all(e["verdicts"] == {"operator": False, "classifier": True} for e in episodes)
    assert summary["success_rate"] == 0.0 and summary["success_source"] == "operator"
    assert summary["witnesses"] == {"classifier": {"disagreed": 2, "episodes": 2}}
    assert summary["failure_rate"] == 0.0  # cut by an unconfirmed claim, not failed
    assert "classifier disagreed with it on 2 of 2 episodes" in output
    assert "os.fork() was called" not in output


def test_in_the_fr3_cell_the_ground_truth_may_judge_and_the_report_says_so(tmp_path):
    """``--judge cell-ground-truth``: the cell's /sim/objects/* scores (evaluation only); a
    classifier that fires on every frame is a witness, warned against at each episode."""
    pytest.importorskip("franky")
    pytest.importorskip("franky_sim")
    from robot_rl.sim.cells.franka_harness import cell_hardware, loopback_host

    hardware = cell_hardware(loopback_host(31), tmp_path)
    checkpoint = robot_checkpoint(tmp_path / "run", str(hardware))
    report = tmp_path / "report.jsonl"
    done = run_cli(
        "eval", "--checkpoint", str(checkpoint), "--hardware", str(hardware),
        "--judge", "cell-ground-truth",
        "--reward-classifier", str(eager_classifier(tmp_path / "classifier", 64)),
        "--episodes", "1", "--ready-timeout", "300", "--report", str(report), "--json-out",
        timeout=600,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "SUCCESS JUDGED BY THE CELL'S GROUND TRUTH" in output
    assert (
        "warning: episode 1: the reward classifier says success, the cell's ground truth "
        "(the judge) says no success" in output
    )
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["success_source"] == "cell-ground-truth"
    assert summary["success_judged_by"] == "the cell's ground truth (/sim/objects/*)"
    assert summary["success_rate"] == 0.0
    assert summary["witnesses"] == {"classifier": {"disagreed": 1, "episodes": 1}}
    assert "os.fork() was called" not in output
