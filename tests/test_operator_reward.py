"""The operator as the reward source (issue 17, point 2): a success key or /teleop/joy button pays
reward 1 and ends the episode; with --relabel-false-positives the operator confirms or rejects
each of the classifier's successes (no answer within the timeout is a reject, and the log says
so); a robot-mode actor refuses the twin's ground-truth labeller.

Everything runs on the twin in robot mode, where the task scores nothing itself: every reward,
termination and relabel below can only have come from the operator. The keyboard is driven with
key bytes through a pty and a pipe, the joy buttons by a real /teleop/joy publisher over rclpy.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import termios

import numpy as np
import pytest

pytest.importorskip("mujoco")

from operator_helpers import wait_for

from robot_rl.errors import UserError
from robot_rl.rewards.operator import REJECT, SUCCESS, KeyboardOperator, OperatorOptions
from robot_rl.rewards.reward_sources import with_reward_sources
from robot_rl.runtime.environments import make_env
from robot_rl.runtime.observation_mode import ObservationMode

SIZE = 32


def robot_mode_build(cameras=()):
    mode = ObservationMode(cameras=cameras, image_size=SIZE, robot_mode=True)
    options = mode.task_options("pick_cube")
    assert options["ground_truth"] is False  # the task scores nothing itself
    return (lambda opts: make_env("twin", "pick_cube", "", 0, opts)), options


def make_classifier(directory):
    """An untrained classifier whose threshold every frame passes (it fires at every step), with
    the label file the relabeler fine-tunes from."""
    from robot_rl.rewards.classifier import ClassifierConfig, RewardClassifier, save_classifier
    from robot_rl.rewards.labels import LabelSet, save_labels

    rng = np.random.default_rng(0)
    images = rng.integers(0, 255, (4, SIZE, SIZE, 3), dtype=np.uint8)
    labels = save_labels(directory / "labels.npz", LabelSet(images, [0, 1, 0, 1], [0, 0, 1, 1]))
    config = ClassifierConfig(camera="front", image_size=SIZE, threshold=0.01, task_gate=False)
    classifier = RewardClassifier.create(config)
    return save_classifier(directory / "classifier", classifier, {"labels": str(labels)})


@pytest.fixture
def key_pipe(monkeypatch):
    """stdin replaced by a pipe; returns its write end (recorded key bytes go there)."""
    read_end, write_end = os.pipe()
    monkeypatch.setattr(sys, "stdin", os.fdopen(read_end, "rb", buffering=0))
    yield write_end
    os.close(write_end)


def operator_of(env):
    return env.operator  # the OperatorSuccess wrapper, outermost


def test_keyboard_on_a_terminal_reads_keys_at_once_and_restores_the_terminal():
    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    keys = KeyboardOperator(slave, success_key="y", reject_key="n")
    try:
        assert not termios.tcgetattr(slave)[3] & termios.ICANON  # cbreak: no Enter needed
        os.write(master, b"xYqn")  # unknown keys are ignored, the case is not
        assert keys.wait(10.0) == SUCCESS
        assert keys.wait(10.0) == REJECT
        assert keys.wait(0.05) is None
    finally:
        keys.close()
        assert termios.tcgetattr(slave) == before
        os.close(master)
        os.close(slave)


def test_success_key_pays_and_ends_the_episode_where_the_twin_would_not(key_pipe):
    build, options = robot_mode_build()
    env = with_reward_sources(
        build,
        options,
        reward_classifier=None,
        operator=OperatorOptions(operator="keyboard"),
        log=lambda _: None,
    )
    try:
        env.reset(seed=0)
        for _ in range(3):  # no key: no reward, no end (the task pays nothing in robot mode)
            _, reward, terminated, truncated, info = env.step(np.zeros(4, np.float32))
            assert (reward, terminated, truncated, info["success"]) == (0.0, False, False, False)
        os.write(key_pipe, b"y")
        wait_for(lambda: operator_of(env).pending(), 10.0, "the key to be read")
        _, reward, terminated, truncated, info = env.step(np.zeros(4, np.float32))
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert info["operator_success"] and info["success"]
        # the arm stood still: the twin's ground truth (read here, by the test) says no
        from robot_rl.envs.task import make_task

        assert not make_task("pick_cube").success(env.unwrapped.backend.read())
        env.reset(seed=1)
        _, reward, terminated, _, _ = env.step(np.zeros(4, np.float32))
        assert (reward, terminated) == (0.0, False)  # the press was spent on that episode
    finally:
        env.close()


def test_keyboard_confirms_rejects_and_times_out_the_classifiers_successes(key_pipe, tmp_path):
    from robot_rl.rewards.labelers import RelabelOptions

    build, options = robot_mode_build(cameras=("front",))
    logs: list[str] = []
    env = with_reward_sources(
        build, options, reward_classifier=str(make_classifier(tmp_path)),
        operator=OperatorOptions(operator="keyboard", label_timeout=0.5),
        relabel=RelabelOptions(relabel_false_positives=True), relabel_dir=tmp_path / "run",
        robot_mode=True, log=logs.append,
    )  # fmt: skip
    try:
        env.reset(seed=0)
        action = np.zeros(4, np.float32)
        os.write(key_pipe, b"n")  # the classifier fires at once; the operator says no
        _, reward, terminated, _, info = env.step(action)
        assert (reward, terminated, info["classifier_rejected"]) == (0.0, False, True)
        assert not info["success"]
        _, reward, terminated, _, info = env.step(action)  # no answer: a reject, logged
        assert (reward, terminated, info["classifier_rejected"]) == (0.0, False, True)
        assert any("no answer from the operator within 0.5 s: rejected" in line for line in logs)
        os.write(key_pipe, b"y")
        _, reward, terminated, _, info = env.step(action)
        assert (reward, terminated, info["classifier_success"], info["success"]) == (
            1.0, True, True, True)  # fmt: skip
        assert not info["operator_success"]  # the confirm was the labeller's, not a second one
        relabeler = env.env.relabeler
        assert relabeler.labelled().labels.tolist() == [0, 0, 1]
        assert relabeler.counts()["false_positives"] == 2
        assert relabeler.labeler.answers == {"success": 1, "reject": 1, "none": 1}
    finally:
        env.close()


def test_joy_buttons_confirm_reject_and_say_success(tmp_path):
    pytest.importorskip("rclpy")
    from operator_helpers import JoyDevice

    from robot_rl.rewards.labelers import RelabelOptions

    build, options = robot_mode_build(cameras=("front",))
    device = JoyDevice()
    env = with_reward_sources(
        build, options, reward_classifier=str(make_classifier(tmp_path)),
        operator=OperatorOptions(operator="joy", success_button=3, reject_button=4,
                                 label_timeout=30.0),
        relabel=RelabelOptions(relabel_false_positives=True), relabel_dir=tmp_path / "run",
        robot_mode=True, log=lambda _: None,
    )  # fmt: skip
    buttons = operator_of(env)
    try:
        wait_for(device.subscribed, 20.0, "the operator's subscription")
        env.reset(seed=0)
        action = np.zeros(4, np.float32)
        device.press(4, lambda: buttons.pending(), what="the reject press")
        _, reward, terminated, _, info = env.step(action)
        assert (reward, terminated, info["classifier_rejected"]) == (0.0, False, True)
        device.press(3, lambda: buttons.pending(), what="the confirm press")
        _, reward, terminated, _, info = env.step(action)
        assert (reward, terminated, info["success"]) == (1.0, True, True)
        assert env.env.relabeler.labelled().labels.tolist() == [0, 1]
        wait_for(lambda: not buttons.held(SUCCESS), 20.0, "the release")
        # a held button counts once: pressing and holding gives one event
        device.press(3, lambda: buttons.pending(), what="the success press")
        assert buttons.poll() == [SUCCESS]
    finally:
        env.close()
        device.close()


def test_robot_mode_actor_refuses_the_ground_truth_labeller(tmp_path):
    from robot_rl.runtime.actor import ActorConfig

    config = ActorConfig(
        robot_mode=True, cameras=("front",), reward_classifier="c", relabel_false_positives=True
    )  # no operator: the default is the truth
    with pytest.raises(UserError, match="robot mode: the ground-truth labeller"):
        config.validate()
    with pytest.raises(UserError, match="--labeler operator needs --operator"):
        ActorConfig(
            reward_classifier="c", relabel_false_positives=True, labeler="operator"
        ).validate()
    ActorConfig(
        robot_mode=True,
        cameras=("front",),
        reward_classifier="c",
        relabel_false_positives=True,
        operator="joy",
    ).validate()  # the operator labels
    ActorConfig(robot_mode=True, operator="keyboard").validate()  # the operator is a source
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "robot_rl.cli",
            "actor",
            "--robot-mode",
            "--cameras",
            "front",
            "--reward-classifier",
            str(tmp_path),
            "--relabel-false-positives",
            "--labeler",
            "ground-truth",
            "--operator",
            "joy",
            "--outbox-dir",
            str(tmp_path / "outbox"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "ground-truth labeller" in lines[0], lines


def test_up_robot_gives_its_actor_the_operator_and_refuses_the_keyboard(tmp_path):
    from robot_rl.commands.up import UpConfig, planned_processes
    from robot_rl.config_file import parse_args
    from robot_rl.runtime.actor import ActorConfig

    hardware = "hardware/fr3_sim.yaml"
    cfg = UpConfig(
        mode="robot",
        hardware=hardware,
        cameras=("front",),
        reward_classifier="c",
        relabel_false_positives=True,
        operator="joy",
        success_button=5,
        label_timeout=20.0,
    )
    cfg.validate()
    actor = next(
        p for p in planned_processes(cfg, tmp_path, "tcp://127.0.0.1:1") if p.role == "actor"
    )
    actor.write_config()  # as up does before it starts the actor
    parsed = parse_args(ActorConfig, list(actor.arguments))
    assert (parsed.operator, parsed.success_button, parsed.label_timeout) == ("joy", 5, 20.0)
    assert parsed.relabel_false_positives and parsed.robot_mode
    parsed.validate()  # the actor takes what up gives it
    with pytest.raises(UserError, match="robot mode: the ground-truth labeller"):
        UpConfig(
            mode="robot",
            hardware=hardware,
            cameras=("front",),
            reward_classifier="c",
            relabel_false_positives=True,
        ).validate()
    with pytest.raises(UserError, match="has no terminal"):
        planned_processes(
            UpConfig(mode="robot", hardware=hardware, operator="keyboard"),
            tmp_path,
            "tcp://127.0.0.1:1",
        )


def test_operator_starts_each_episode_and_that_press_is_no_success(key_pipe):
    import threading

    from robot_rl.rewards.operator import OperatorStartsEpisodes

    build, options = robot_mode_build()
    logs: list[str] = []
    inner = with_reward_sources(
        build,
        options,
        reward_classifier=None,
        operator=OperatorOptions(operator="keyboard"),
        log=logs.append,
    )
    env = OperatorStartsEpisodes(inner, inner.operator, log=logs.append)
    try:
        started: list = []
        reset = threading.Thread(target=lambda: started.append(env.reset(seed=0)), daemon=True)
        reset.start()
        wait_for(lambda: any("starts the episode" in line for line in logs), 30.0, "the prompt")
        assert not started  # the episode waits for the operator
        os.write(key_pipe, b"y")
        reset.join(30.0)
        assert started, "the key did not start the episode"
        _, reward, terminated, _, _ = env.step(np.zeros(4, np.float32))
        assert (reward, terminated) == (0.0, False)  # the start press paid nothing
    finally:
        env.close()
