"""The actor's and the learner's configuration as a file (``--config FILE``): what ``robot-rl up``
and the launch files hand their children. The file holds the whole config and reads back as the
same config; a flag beside it overrides it; a bad file is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from process_helpers import run_cli

from robot_rl.commands.up import TWO_CRITIC_AGENT, UpConfig, planned_processes
from robot_rl.config_file import (
    ConfigFileError,
    parse_args,
    read_config,
    split_config_flag,
    write_config,
)
from robot_rl.errors import UserError
from robot_rl.runtime.actor import ActorConfig
from robot_rl.runtime.learner import LearnerConfig
from robot_rl.stack import write_config_files

ROOT = Path(__file__).resolve().parents[1]
ENDPOINT = "tcp://127.0.0.1:5999"


def _stack(tmp_path, **changes):
    up = UpConfig(
        "sim",
        cameras=("front",),
        image_size=32,
        batch_size=32,
        demos=0,
        agent=TWO_CRITIC_AGENT.replace(num_critics=2, hidden_dims=(32, 32)),
        **changes,
    )
    up.validate()
    processes = planned_processes(up, tmp_path, ENDPOINT)
    return {p.name: p for p in processes}


def test_up_gives_each_child_its_whole_config_as_a_file_that_reads_back_the_same(tmp_path):
    from robot_rl.ros.actor_node import parse_actor_args, split_ros_args

    processes = _stack(tmp_path, seed=3, total_steps=700, speedup=2.0)
    actor, learner = processes["actor"], processes["learner"]
    assert all(p.config is None for p in processes.values() if p.role not in ("actor", "learner"))
    write_config_files(list(processes.values()))
    assert Path(learner.config_file) == tmp_path / "config" / "learner.json"
    on_disk = json.loads(Path(learner.config_file).read_text())
    assert on_disk["agent"]["hidden_dims"] == [32, 32] and on_disk["seed"] == 3
    # each child parses its command line (the file) into exactly the config up built
    own, _ = split_ros_args(list(actor.command()[3:]))
    assert parse_actor_args(own) == actor.config
    assert parse_args(LearnerConfig, list(learner.arguments[1:])) == learner.config
    # what the stack settles, from the one UpConfig
    assert (learner.config.task, learner.config.seed, learner.config.total_steps) == (
        "pick_cube",
        3,
        700,
    )
    assert learner.config.bind == actor.config.learner == ENDPOINT
    assert learner.config.run_dir == f"{tmp_path}/learner"
    assert actor.config.outbox_dir == f"{tmp_path}/actor/outbox"
    assert actor.config.cameras == learner.config.cameras == ("front",)
    assert actor.config.image_size == learner.config.image_size == 32
    assert (actor.config.backend, actor.config.speedup, actor.config.max_learner_lag) == (
        "ros",
        0.0,
        16,
    )


def test_a_flag_beside_the_file_overrides_it(tmp_path):
    path = write_config(LearnerConfig(batch_size=64, seed=5), tmp_path / "learner.json")
    parsed = parse_args(LearnerConfig, ["--config", str(path), "--batch-size", "7"])
    assert (parsed.batch_size, parsed.seed) == (7, 5)
    parsed = parse_args(LearnerConfig, [f"--config={path}", "--agent.num-critics", "3"])
    assert (parsed.batch_size, parsed.agent.num_critics) == (64, 3)
    # a file that names a few fields leaves the rest at their defaults
    few = tmp_path / "few.json"
    few.write_text(json.dumps({"utd_ratio": 4, "agent": {"hidden_dims": [16, 16]}}))
    parsed = read_config(LearnerConfig, few)
    assert (parsed.utd_ratio, parsed.agent.hidden_dims) == (4, (16, 16))
    assert parsed.agent.num_critics == TWO_CRITIC_AGENT.num_critics
    assert split_config_flag(["--seed", "1"]) == (None, ["--seed", "1"])


@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must be a mapping of fields"),
    ('{"batch_sise": 64}', "LearnerConfig has no field 'batch_sise'"),
    ('{"batch_size": "big"}', "batch_size: expected int, got \"big\""),
    ('{"batch_size": true}', "batch_size: expected int, got true"),
    ('{"agent": {"num_critics": 2.5}}', "agent: num_critics: expected int, got 2.5"),
    ('{"agent": {"critics": 2}}', "agent: AgentConfig has no field 'critics'"),
    ('{"cameras": "front"}', "cameras: expected tuple[str, ...]"),
    ('{"fsync": 3}', "fsync: expected str, got 3"),
])  # fmt: skip
def test_a_bad_file_is_refused_naming_the_file_and_the_field(tmp_path, text, message):
    path = tmp_path / "learner.json"
    path.write_text(text)
    with pytest.raises(ConfigFileError, match="learner.json: .*" + message.replace("[", r"\[")):
        read_config(LearnerConfig, path)
    assert issubclass(ConfigFileError, UserError)
    with pytest.raises(ConfigFileError, match="no config file at"):
        read_config(ActorConfig, tmp_path / "missing.json")
    with pytest.raises(ConfigFileError, match="--config needs a file"):
        split_config_flag(["--config"])


def test_literal_fields_are_checked(tmp_path):
    path = tmp_path / "actor.json"
    path.write_text(json.dumps({"backend": "carrier-pigeon"}))
    with pytest.raises(ConfigFileError, match="backend: expected Literal"):
        read_config(ActorConfig, path)
    path.write_text(json.dumps({"backend": "ros", "ros": {"camera_namespaces": {"front": "/f"}}}))
    parsed = read_config(ActorConfig, path)
    assert parsed.backend == "ros" and parsed.ros.camera_namespaces == {"front": "/f"}


@pytest.mark.parametrize("command", ["learner", "actor"])
def test_the_commands_refuse_a_bad_config_file_in_one_line(tmp_path, command):
    path = tmp_path / f"{command}.json"
    path.write_text('{"seed": "zero"}')
    done = run_cli(command, "--config", str(path), timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [f'error: {path}: seed: expected int, got "zero"'], (
        done.stderr
    )
    assert "Traceback" not in done.stdout + done.stderr


def test_the_actor_node_refuses_a_bad_config_file_in_one_line(tmp_path):
    from robot_rl.ros.actor_node import main

    path = tmp_path / "actor.json"
    path.write_text('{"learner_addr": "tcp://127.0.0.1:1"}')
    assert main(["--config", str(path), "--ros-args", "-p", "use_sim_time:=true"]) == 2


def test_a_launch_file_writes_the_same_files_and_takes_a_config_file(monkeypatch, tmp_path):
    from test_ros_launch import load_launch_file

    launch_file = load_launch_file("sim.launch.py", monkeypatch)
    mine = write_config(LearnerConfig(batch_size=48, utd_ratio=3), tmp_path / "mine.json")
    processes = launch_file.describe(
        run_dir=str(tmp_path / "run"),
        learner=ENDPOINT,
        learner_args=f"--config {mine} --utd-ratio 5",
        actor_args="--ros.max-age 0.5",
    )
    learner = next(p for p in processes if p.role == "learner")
    actor = next(p for p in processes if p.role == "actor")
    assert (learner.config.batch_size, learner.config.utd_ratio) == (48, 5)
    assert learner.config.run_dir == f"{tmp_path / 'run'}/learner"  # the stack's own settings
    assert actor.config.ros.max_age == 0.5
    write_config_files(processes)  # what the launch's setup does before its actions start
    assert read_config(LearnerConfig, learner.config_file) == learner.config
    assert read_config(ActorConfig, actor.config_file) == actor.config
    with pytest.raises(ValueError, match="learner_args: cannot parse"):
        launch_file.describe(run_dir=str(tmp_path), learner_args="--no-such-option 1")


def test_train_prints_its_resolved_config_and_starts_from_it(tmp_path, capsys):
    """``--print-config``: the whole config with the recipe applied, as JSON; ``--config`` takes
    it back, and flags beside it win."""
    import json

    from robot_rl.cli import main

    assert main(["train", "--task", "pick_cube", "--cameras", "front", "--print-config"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["image_size"], printed["batch_size"]) == (32, 64)  # the pixel recipe
    assert printed["total_steps"] == 20_000 and printed["agent"]["num_critics"] == 10
    path = tmp_path / "train.json"
    path.write_text(json.dumps(printed))
    assert main(["train", "--config", str(path), "--batch-size", "128", "--print-config"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again == {**printed, "batch_size": 128}
