"""`robot-rl record-demos --source teleop`: an operator drives every step through a TeleopSource;
only the episodes that succeed are written, and they load back into a demo buffer. The operator
here is scripted (the twin's expert on some episodes, idle hands on others): no ROS 2 needed."""

import time

import numpy as np
import pytest

from robot_rl.commands.record_demos import SOURCES, RecordDemosConfig, TeleopDemoSource, run
from robot_rl.envs.intervention import OperatorCommand

pytest.importorskip("mujoco")


class AlternatingOperator:
    """Drives episodes 1, 3, 5, ... with the scripted expert; on 2, 4, ... never touches the
    device (no command: the robot holds still, so the episode fails)."""

    def __init__(self, task):
        from robot_rl.sim.experts import make_expert

        self.expert = make_expert(task)
        self.episodes = 0
        self.closed = False

    def reset(self):
        self.episodes += 1
        self.expert.reset(np.random.default_rng(self.episodes))

    def poll(self, reading):
        if self.episodes % 2 == 0:
            return None
        action = np.asarray(self.expert.act(reading), np.float32)
        return OperatorCommand(action, button=False, stamp=time.monotonic())

    def close(self):
        self.closed = True


def test_only_successful_teleop_episodes_are_kept_and_load_back(tmp_path, capsys):
    from robot_rl.data.mcap_demos import demo_files, load_demos, read_episode
    from robot_rl.data.replay import ReplayBuffer
    from robot_rl.envs.task import make_task

    out = tmp_path / "demos"
    operator = AlternatingOperator(make_task("pick_cube"))
    config = RecordDemosConfig(task="pick_cube", episodes=2, out=str(out), source="teleop")
    assert run(config, teleop=operator) == 0
    printed = capsys.readouterr().out
    assert operator.closed and operator.episodes == 3  # success, failure, success

    assert "episode 2: no success" in printed and "discarded" in printed
    assert "episode 1: success" in printed and "episode 3: success" in printed
    files = demo_files(out)
    assert [f.name for f in files] == ["episode_000.mcap", "episode_001.mcap"]
    for file in files:
        recorded = read_episode(file).episode
        assert recorded.info["source"] == "teleop"
        assert recorded.terminated[-1]  # a success: the task ended it
    assert [read_episode(f).episode.info["seed"] for f in files] == ["0", "2"]

    first = read_episode(files[0])
    buffer = ReplayBuffer(first.observation_space, first.action_space, 10_000)
    buffer, counts = load_demos(out, buffer)
    assert counts["episodes"] == 2
    assert len(buffer) == counts["transitions"] == sum(len(read_episode(f).episode) for f in files)


def test_teleop_source_holds_still_without_a_fresh_command():
    from robot_rl.runtime.environments import make_env

    class Stale:
        def __init__(self, commands):
            self.commands = list(commands)

        def reset(self):
            pass

        def poll(self, reading):
            return self.commands.pop(0)

    env = make_env("twin", "pick_cube", "", 0)
    try:
        env.reset(seed=0)
        now = time.monotonic()
        source = TeleopDemoSource(
            env,
            RecordDemosConfig(source="teleop"),
            teleop=Stale(
                [
                    OperatorCommand(np.array([2.0, -0.5, 0, 1], np.float32), stamp=now),
                    OperatorCommand(np.ones(4, np.float32), stamp=now - 5.0),  # stale
                    OperatorCommand(np.array([np.nan, 0, 0, 0], np.float32), stamp=now),
                    None,
                ]
            ),
        )
        assert not source.realtime  # a scripted operator needs no pacing
        np.testing.assert_allclose(source.act(env, {}), [1.0, -0.5, 0.0, 1.0])
        for _ in range(3):
            np.testing.assert_allclose(source.act(env, {}), np.zeros(4))
    finally:
        env.close()


def test_bad_combinations_are_refused(capsys):
    assert set(SOURCES) == {"expert", "teleop"}
    bad = RecordDemosConfig(source="teleop", teleop="sim", backend="ros")
    assert run(bad) == 2
    assert "the scripted expert needs the twin" in capsys.readouterr().err


def test_sim_operator_on_the_command_line(tmp_path):
    from process_helpers import run_cli

    out = tmp_path / "demos"
    args = ["--task", "pick_cube", "--episodes", "1", "--out", str(out)]
    result = run_cli("record-demos", "--source", "teleop", "--teleop", "sim", *args, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "episode 1: success" in result.stdout
    assert len(list(out.glob("*.mcap"))) == 1
