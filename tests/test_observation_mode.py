"""Observation mode from the command line (issue 17, point 1) and its record in checkpoints.

Robot mode must never read what only the twin knows: the env is stepped over the twin with every
``object/*`` reading removed and every attempt to read one recorded, and the actor's ROS node is
built as ``up robot`` starts it and its subscriptions listed. A checkpoint trained without
privileged state is evaluated by ``robot-rl eval`` (it failed with "kernel has shape (107, 256),
the agent expects (110, 256)" when checkpoints did not record the mode).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tyro

from robot_rl.envs.task import make_task
from robot_rl.runtime.observation_mode import ObservationMode, observation_from_metadata

ROOT = Path(__file__).resolve().parents[1]
TWIN_ONLY = "object/"


def test_privileged_state_is_off_with_cameras_and_always_in_robot_mode():
    assert ObservationMode().task_options("pick_cube")["privileged_state"] is True
    with_cameras = ObservationMode(cameras=("front",)).task_options("pick_cube")
    assert with_cameras["privileged_state"] is False and "ground_truth" not in with_cameras
    forced = ObservationMode(cameras=("front",), privileged_state=True)
    assert forced.task_options("peg_insert")["privileged_state"] is True
    robot = ObservationMode(robot_mode=True).task_options("pick_cube")
    assert robot == {
        "cameras": (),
        "image_size": 64,
        "privileged_state": False,
        "ground_truth": False,
    }
    # evaluation on the twin scores with the ground truth in any mode
    assert "ground_truth" not in ObservationMode(robot_mode=True).task_options(
        "pick_cube", ground_truth=True
    )
    # a car's lap reward reads odometry, which a real car has: robot mode keeps it
    assert ObservationMode(robot_mode=True).task_options("car_lap") == {
        "cameras": (),
        "image_size": 64,
    }
    with pytest.raises(ValueError, match="--privileged-state True is for the twin"):
        ObservationMode(robot_mode=True, privileged_state=True).task_options("pick_cube")
    with pytest.raises(ValueError, match="car_lap' has no privileged state"):
        ObservationMode(privileged_state=True).task_options("car_lap")
    # what checkpoints record, and what eval rebuilds from it (old checkpoints: the default)
    assert ObservationMode().metadata("car_lap")["privileged_state"] is False
    for meta in (
        {"task": "car_lap"},
        {"task": "car_lap", "observation": ObservationMode().metadata("car_lap")},
    ):
        assert observation_from_metadata(meta).task_options("car_lap") == {
            "cameras": (),
            "image_size": 64,
        }
    legacy = observation_from_metadata({"task": "pick_cube", "cameras": ["front"]})
    assert legacy.task_options("pick_cube")["privileged_state"] is True


def test_every_task_building_command_takes_the_observation_options():
    from robot_rl.commands.record_demos import RecordDemosConfig
    from robot_rl.commands.up import UpConfig
    from robot_rl.runtime.actor import ActorConfig
    from robot_rl.runtime.learner import LearnerConfig
    from robot_rl.runtime.train_loop import TrainConfig

    args = ["--cameras", "front", "--privileged-state", "True", "--image-size", "32"]
    for config in (TrainConfig, ActorConfig, LearnerConfig, RecordDemosConfig):
        parsed = tyro.cli(config, args=args)
        assert (parsed.cameras, parsed.image_size, parsed.privileged_state) == (
            ("front",),
            32,
            True,
        ), config
        assert tyro.cli(config, args=["--robot-mode"]).robot_mode
    up = tyro.cli(UpConfig, args=["robot", "--hardware", "x.yaml", "--cameras", "front"])
    assert up.observation().robot_mode and not up.observation().resolved_privileged_state()


class DriverReadings:
    """The twin behind an interface that gives only what real drivers publish: no ``object/*``
    entry, and any attempt to read one is recorded (and fails as it would on a robot). The
    world itself stays the twin's: resets still place the objects, as a person would."""

    def __init__(self, backend):
        self._backend = backend
        self.attempts: list[str] = []
        self.twin_keys: set[str] = set()

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def read(self):
        reading = self._backend.read()
        self.twin_keys |= {k for k in reading if k.startswith(TWIN_ONLY)}
        return GuardedReading(
            {k: v for k, v in reading.items() if not k.startswith(TWIN_ONLY)}, self.attempts
        )


class GuardedReading(dict):
    def __init__(self, entries, attempts):
        super().__init__(entries)
        self._attempts = attempts

    def _note(self, key):
        if isinstance(key, str) and key.startswith(TWIN_ONLY):
            self._attempts.append(key)

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self._note(key)
        return super().__contains__(key)

    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)


def driver_only_env(task):
    from robot_rl.envs.robot_env import RobotEnv
    from robot_rl.sim import make_twin_backend

    backend = DriverReadings(make_twin_backend(task, seed=0))
    return RobotEnv(task, backend), backend


@pytest.mark.parametrize("task_name", ["pick_cube", "peg_insert"])
def test_robot_mode_observes_and_scores_without_any_twin_reading(task_name):
    pytest.importorskip("mujoco")
    mode = ObservationMode(cameras=("front",), image_size=32, robot_mode=True)
    task = make_task(task_name, **mode.task_options(task_name))
    env, backend = driver_only_env(task)
    try:
        rng = np.random.default_rng(0)
        obs, _ = env.reset(seed=0)
        steps = 0
        for _ in range(30):
            action = rng.uniform(-1, 1, env.action_space.shape).astype(np.float32)
            obs, reward, terminated, truncated, info = env.step(action)
            steps += 1
            assert env.observation_space.contains(obs)
            # nothing here scores the step: that is the reward classifier's or the operator's
            assert (reward, terminated, info["success"]) == (0.0, False, False)
            if truncated:
                obs, _ = env.reset()
        assert steps == 30 and backend.twin_keys  # the twin had them; the task never asked
        assert backend.attempts == []
        assert (
            obs["state"].shape == make_task(task_name, privileged_state=False).state_space().shape
        )
    finally:
        env.close()


def test_the_guard_sees_a_twin_reading_when_the_task_scores_itself():
    pytest.importorskip("mujoco")
    task = make_task(
        "pick_cube", **ObservationMode(cameras=("front",), image_size=32).task_options("pick_cube")
    )
    env, backend = driver_only_env(task)
    try:
        env.reset(seed=0)
        with pytest.raises(KeyError):
            env.step(np.zeros(4, np.float32))
        assert backend.attempts and backend.attempts[0].startswith(TWIN_ONLY)
    finally:
        env.close()


def test_robot_mode_without_a_reward_source_is_refused_in_one_line(capsys):
    from robot_rl.cli import main

    assert main(["train", "--task", "pick_cube", "--robot-mode"]) == 2
    err = capsys.readouterr().err
    assert "robot mode: pick_cube's reward and success read the twin's object poses" in err
    assert "--reward-classifier" in err and "--operator keyboard|joy" in err
    assert len(err.strip().splitlines()) == 1
    from robot_rl.runtime.actor import ActorConfig

    with pytest.raises(ValueError, match="give a reward source"):
        ActorConfig(robot_mode=True).validate()


def test_robot_mode_train_relabelling_is_refused_up_front_in_one_line(capsys, tmp_path):
    """train relabels with the twin's ground truth, which robot mode does not have: refused
    where the mode is checked, before a run directory or an env exists, not at the first
    query of the labeller."""
    from robot_rl.cli import main

    run_dir = tmp_path / "run"
    args = ["train", "--task", "pick_cube", "--robot-mode", "--reward-classifier", str(tmp_path)]
    assert main([*args, "--relabel-false-positives", "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "robot mode: train's --relabel-false-positives answers with the twin's ground" in err
    assert "--operator joy" in err and not run_dir.exists()
    from robot_rl.runtime.train_loop import TrainConfig

    # on the twin, the ground truth answering is what train's relabelling is for
    twin = TrainConfig(task="pick_cube", reward_classifier="c", relabel_false_positives=True)
    twin.check_reward_source("pick_cube", "c")


def _actor_subscriptions(actor) -> list[str]:
    """The topics the actor's node subscribes to, built as ``run_actor`` builds it from the
    arguments (and the config file) the stack gives the actor process."""
    from robot_rl.ros.actor_node import parse_actor_args, split_ros_args
    from robot_rl.ros.backend import make_ros_backend

    actor.write_config()
    own, _ = split_ros_args(list(actor.arguments))
    cfg = parse_actor_args(own)
    task = make_task(cfg.task, **cfg.task_options(cfg.task))
    backend = make_ros_backend(task, cfg.ros)
    try:
        return sorted(s.topic_name for s in backend.node.subscriptions)
    finally:
        backend.close()


def test_the_actor_node_of_a_robot_stack_subscribes_to_no_sim_topic(tmp_path):
    pytest.importorskip("rclpy")
    from robot_rl.stack import StackConfig, actor_process

    hardware = ROOT / "hardware" / "fr3_realsense_spacemouse.yaml"
    if not hardware.is_file():
        pytest.skip("no robot hardware file in this checkout")
    from robot_rl.hardware import load_hardware

    robot = StackConfig(
        task="pick_cube",
        mode="robot",
        hardware=str(hardware),
        cameras=("front", "wrist"),
        run_dir=str(tmp_path),
    )
    actor = actor_process(robot, load_hardware(hardware))
    assert actor.config.robot_mode
    topics = _actor_subscriptions(actor)
    assert any(t.endswith("image_raw") for t in topics) and any("ee_pose" in t for t in topics)
    assert [t for t in topics if t.startswith("/sim/")] == []
    # the same actor on the twin's nodes (sim stack, state only) does read the cube's pose
    sim = StackConfig(task="pick_cube", mode="sim", run_dir=str(tmp_path))
    assert "/sim/objects/cube/pose" in _actor_subscriptions(actor_process(sim))


def _tiny_train(tmp_path, **changes):
    from robot_rl.agents.config import AgentConfig
    from robot_rl.runtime.train_loop import TrainConfig, train

    config = TrainConfig(
        task="pick_cube",
        total_steps=40,
        start_steps=20,
        demos=0,
        batch_size=16,
        utd_ratio=1,
        eval_every=40,
        eval_episodes=1,
        checkpoint_every=40,
        log_every=40,
        run_dir=str(tmp_path / "run"),
        agent=AgentConfig(hidden_dims=(16, 16), num_critics=2, critic_subsample=2),
        **changes,
    )
    train(config)
    return config


def test_a_checkpoint_trained_without_privileged_state_is_evaluated(tmp_path, capsys):
    pytest.importorskip("mujoco")
    from robot_rl.agents.checkpoint import META_FILE, latest_checkpoint, read_metadata
    from robot_rl.commands.eval import EvalConfig, run

    config = _tiny_train(tmp_path, privileged_state=False)
    checkpoint = latest_checkpoint(tmp_path / "run" / "checkpoints")
    meta = read_metadata(checkpoint)
    assert meta["observation"] == {
        "cameras": [],
        "image_size": 64,
        "privileged_state": False,
        "robot_mode": False,
    }
    assert meta["encoder"]["trunk"] == "conv" and meta["encoder"]["weights"] is None
    capsys.readouterr()
    assert run(EvalConfig(checkpoint=str(checkpoint), episodes=1, json_out=True)) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["episodes"] == 1 and result["task"] == "pick_cube"

    # a checkpoint from before the mode was recorded meant the task's default (privileged on):
    # eval then fails with the shape message, and --privileged-state False rebuilds it
    legacy = {k: v for k, v in meta.items() if k != "observation"}
    (checkpoint / META_FILE).write_text(json.dumps(legacy))
    assert observation_from_metadata(legacy).resolved_privileged_state() is True
    assert run(EvalConfig(checkpoint=str(checkpoint), episodes=1)) == 2
    assert "the agent expects" in capsys.readouterr().err
    assert run(EvalConfig(checkpoint=str(checkpoint), episodes=1, privileged_state=False)) == 0
    (checkpoint / META_FILE).write_text(json.dumps(meta))

    # --resume in another observation mode is refused naming the difference
    from robot_rl.runtime.train_loop import train

    resumed = config.__class__(
        **{**config.__dict__, "resume": True, "privileged_state": True, "total_steps": 60}
    )
    with pytest.raises(
        ValueError, match="privileged_state: checkpoint has False, this run has True"
    ):
        train(resumed)
