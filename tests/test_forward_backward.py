"""Forward-backward reset-free training: the loop on fake envs, then a short run on the twin."""

import json
import subprocess
import sys

import gymnasium as gym
import jax
import numpy as np
import pytest

from robot_rl.agents.config import AgentConfig
from robot_rl.agents.sac import SACAgent
from robot_rl.runtime.forward_backward import (
    ForwardBackwardConfig,
    make_direction,
    run_forward_backward,
)

TINY = AgentConfig(hidden_dims=(16, 16), num_critics=2, critic_subsample=2)


class World:
    """The one fake robot both directions share; it logs what is done to it."""

    def __init__(self):
        self.t = 0.0
        self.log = []  # (event, direction, success)


class FakeDirectionEnv:
    """A direction's task over the shared world. Forward succeeds on its 3rd step (terminates);
    backward never succeeds and hits its 4-step time limit; ``fail_episode`` makes that forward
    episode end in a real failure (terminated, no success) on its 2nd step."""

    def __init__(self, world, name, succeed_at=None, limit=4, fail_episode=None):
        self.world, self.name = world, name
        self.marker = 1.0 if name == "forward" else -1.0
        self.succeed_at, self.limit, self.fail_episode = succeed_at, limit, fail_episode
        self.observation_space = gym.spaces.Dict(
            {"state": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)}
        )
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.steps, self.episodes = 0, 0

    def _obs(self):
        return {"state": np.array([self.world.t, self.marker], np.float32)}

    def reset(self, *, seed=None, options=None):
        self.world.t = 0.0
        self.world.log.append(("reset", self.name, False))
        return self._begin()

    def start_in_place(self):
        self.world.log.append(("start_in_place", self.name, False))
        return self._begin()

    def _begin(self):
        self.steps = 0
        self.episodes += 1
        return self._obs(), {"success": False}

    def step(self, action):
        self.world.t += 0.1
        self.steps += 1
        success = self.succeed_at is not None and self.steps >= self.succeed_at
        failure = self.episodes == self.fail_episode and self.steps == 2
        terminated = success or failure
        truncated = not terminated and self.steps >= self.limit
        self.world.log.append(("step", self.name, success))
        info = {"success": success, "applied_action": np.asarray(action, np.float32)}
        return self._obs(), float(success), terminated, truncated, info


def fb_config(**changes):
    values = dict(
        total_steps=40,
        start_steps=5,
        demos=0,
        batch_size=8,
        utd_ratio=1,
        update_every=1,
        eval_every=40,
        eval_episodes=1,
        log_every=1_000,
        stalled_episodes=20,
        agent=TINY,
    )
    values.update(changes)
    return ForwardBackwardConfig(**values)


_TEMPLATE = []


def template_agent(env):
    """One agent whose static structure every test's agents share: JAX compiles the update
    and acting functions once for the whole module instead of twice per test."""
    if not _TEMPLATE:
        _TEMPLATE.append(SACAgent.create(0, env.observation_space, env.action_space, TINY))
    return _TEMPLATE[0]


def make_pair(cfg, forward_options=None, backward_options=None):
    world, eval_world = World(), World()
    forward_options = {"succeed_at": 3, **(forward_options or {})}
    backward_options = backward_options or {}
    directions = []
    for i, (name, options) in enumerate(
        (("forward", forward_options), ("backward", backward_options))
    ):
        env = FakeDirectionEnv(world, name, **options)
        eval_env = FakeDirectionEnv(eval_world, name, **options)
        template = template_agent(env)
        directions.append(make_direction(name, env, eval_env, cfg, seed=i, template=template))
    return world, directions


def test_directions_alternate_without_resets_and_keep_their_own_data():
    cfg = fb_config()
    world, (forward, backward) = make_pair(cfg)
    before = [jax.tree_util.tree_leaves(d.agent.critic.params) for d in (forward, backward)]
    summary = run_forward_backward(cfg, forward, backward)

    # one reset, at the start; after that every episode end hands the robot over in place
    resets = [event for event in world.log if event[0] == "reset"]
    assert resets == [("reset", "forward", False)] and world.log[0] == resets[0]
    assert summary["resets"] == {"start": 1, "failure": 0, "stalled": 0}
    starts = [i for i, event in enumerate(world.log) if event[0] == "start_in_place"]
    assert len(starts) == summary["handovers"] >= 8
    for i in starts:
        ended, started = world.log[i - 1], world.log[i]
        assert ended[1] != started[1]  # the other direction takes over
    # after a forward success the backward policy acts next, never a reset
    for i, event in enumerate(world.log[:-1]):
        if event == ("step", "forward", True):
            assert world.log[i + 1] == ("start_in_place", "backward", False)
    # a backward time limit hands back to the forward policy, also without a reset
    assert ("start_in_place", "forward", False) in world.log

    # each policy has its own data: only its own observations, one transition per own step
    for d, marker in ((forward, 1.0), (backward, -1.0)):
        stored = d.replay.gather(np.arange(len(d.replay)))
        assert np.all(stored["observations"]["state"][:, 1] == marker)
        assert len(d.replay) == d.steps
    assert forward.steps + backward.steps == summary["env_steps"] == cfg.total_steps
    assert forward.successes == forward.episodes >= 4 and backward.successes == 0

    # both agents learned from their own data
    for d, params in zip((forward, backward), before, strict=True):
        assert d.updates > 0
        after = jax.tree_util.tree_leaves(d.agent.critic.params)
        assert any(not np.array_equal(a, b) for a, b in zip(params, after, strict=True))
        assert d.last_eval is not None and d.last_eval["step"] == cfg.total_steps


def test_a_real_failure_resets_the_scene_and_the_forward_policy_goes_on():
    cfg = fb_config(total_steps=30)
    world, (forward, backward) = make_pair(cfg, forward_options={"fail_episode": 2})
    summary = run_forward_backward(cfg, forward, backward)
    assert summary["resets"] == {"start": 1, "failure": 1, "stalled": 0}
    failure_reset = [i for i, e in enumerate(world.log) if e[0] == "reset"][1]
    assert world.log[failure_reset - 1] == ("step", "forward", False)
    assert world.log[failure_reset][1] == "forward"


def test_a_stall_with_no_success_anywhere_resets_the_scene():
    cfg = fb_config(total_steps=24, stalled_episodes=4)
    world, (forward, backward) = make_pair(cfg, forward_options={"succeed_at": None})
    summary = run_forward_backward(cfg, forward, backward)
    # 4-step episodes, 6 of them; a stall reset after the 4th
    assert summary["resets"] == {"start": 1, "failure": 0, "stalled": 1}
    assert sum(event[0] == "reset" for event in world.log) == 2


def test_config_refuses_a_task_without_a_backward_task():
    with pytest.raises(ValueError, match="no backward task for 'peg_insert'"):
        fb_config(task="peg_insert").validate()
    with pytest.raises(ValueError, match="total_steps"):
        fb_config(total_steps=0).validate()


def test_short_twin_run_trains_both_policies_without_resets(tmp_path):
    pytest.importorskip("mujoco")
    from rich.console import Console

    from robot_rl.runtime.forward_backward import train_forward_backward

    cfg = fb_config(
        total_steps=60, start_steps=10, demos=1, batch_size=16, run_dir=str(tmp_path / "run")
    )
    summary = train_forward_backward(cfg, console=Console(quiet=True))
    assert summary["env_steps"] == 60
    assert summary["resets"]["start"] == 1
    assert summary["forward"]["task"] == "pick_cube"
    assert summary["backward"]["task"] == "put_down_cube"
    for name in ("forward", "backward"):
        assert summary[name]["final_eval"]["episodes"] == 1
        assert (tmp_path / "run" / name / "eval.jsonl").is_file()
        assert any((tmp_path / "run" / name / "checkpoints").glob("step_*"))
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["env_steps"] == 60


def test_cli_train_fb_refuses_bad_input_clearly():
    result = subprocess.run(
        [sys.executable, "-m", "robot_rl.cli", "train-fb", "--task", "peg_insert"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "no backward task for 'peg_insert'" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_ctrl_c_checkpoints_the_loop_state_and_the_loop_resumes_from_it():
    cfg = fb_config(total_steps=40, eval_every=10)
    world, (forward, backward) = make_pair(cfg)
    saved = []

    def checkpoint(step, loop_state):
        saved.append((step, json.loads(json.dumps(loop_state)), forward.steps + backward.steps))

    for d in (forward, backward):
        step_once = d.env.step

        def step_or_ctrl_c(action, step_once=step_once):
            if sum(event[0] == "step" for event in world.log) == 25:
                raise KeyboardInterrupt
            return step_once(action)

        d.env.step = step_or_ctrl_c
    with pytest.raises(KeyboardInterrupt):
        run_forward_backward(cfg, forward, backward, checkpoint=checkpoint)
    # at every evaluation, then on Ctrl-C with every stored transition
    assert [(step, stored) for step, _, stored in saved] == [(10, 10), (20, 20), (25, 25)]
    state = {"step": 25, **saved[-1][1]}
    assert state["active"] in ("forward", "backward") and state["resets"]["start"] == 1

    for d in (forward, backward):
        del d.env.step  # the env's own step again
    del world.log[:]
    summary = run_forward_backward(cfg, forward, backward, resume=state, checkpoint=checkpoint)
    # a fresh reset of the direction that was acting, then the loop goes on to the end
    assert world.log[0] == ("reset", state["active"], False)
    assert summary["env_steps"] == 40 == forward.steps + backward.steps
    assert sum(event[0] == "step" for event in world.log) == 15
    assert summary["resets"]["start"] == 2
    assert [step for step, _, _ in saved[3:]] == [30, 40]


def _steps(path):
    return [json.loads(line)["step"] for line in path.read_text().splitlines()]


def test_twin_run_checkpoints_pairs_and_resume_goes_on_from_the_last_one(tmp_path):
    pytest.importorskip("mujoco")
    import io
    import shutil

    from rich.console import Console

    from robot_rl.commands import eval as eval_command
    from robot_rl.data.replay import ReplayBuffer
    from robot_rl.runtime.forward_backward import train_forward_backward

    run_dir = tmp_path / "run"
    options = dict(start_steps=10, demos=1, batch_size=16, eval_every=110, run_dir=str(run_dir))
    # the forward episode ends by its time limit (100 steps), the backward one starts
    first = train_forward_backward(fb_config(total_steps=110, **options), Console(quiet=True))
    state = json.loads((run_dir / "fb_state.json").read_text())
    assert state["step"] == 110 and state["active"] in ("forward", "backward")
    saved = {}
    for name in ("forward", "backward"):
        checkpoint = run_dir / name / "checkpoints" / "step_0000000110"
        meta = json.loads((checkpoint / "meta.json").read_text())
        assert meta["steps"] == first[name]["env_steps"] and meta["direction"] == name
        demos = len(ReplayBuffer.load(checkpoint / "demos.npz"))
        assert len(ReplayBuffer.load(checkpoint / "replay.npz")) == meta["steps"] and demos > 0
        metrics = (run_dir / name / "metrics.jsonl").read_text().splitlines()
        saved[name] = (meta["steps"], meta["episodes"], demos, metrics)
    # a crash after the forward half of the next pair: fb_state.json still names step 110
    checkpoints = run_dir / "forward" / "checkpoints"
    shutil.copytree(checkpoints / "step_0000000110", checkpoints / "step_0000000150")
    with open(run_dir / "forward" / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"step": 150, "orphan": 1.0}) + "\n")

    out = io.StringIO()
    console = Console(file=out, width=250)
    second = train_forward_backward(fb_config(total_steps=220, resume=True, **options), console)
    assert "resumed at step 110" in out.getvalue() and "fresh reset" in out.getvalue()
    assert "demos" not in out.getvalue()  # the demo buffers came back, none collected again
    assert second["env_steps"] == 220 and second["resets"]["start"] == 2
    assert second["forward"]["env_steps"] + second["backward"]["env_steps"] == 220
    assert json.loads((run_dir / "fb_state.json").read_text())["step"] == 220
    appended = 0
    for name in ("forward", "backward"):
        steps, episodes, demos, metrics_before = saved[name]
        assert second[name]["env_steps"] >= steps and second[name]["episodes"] >= episodes
        checkpoint = run_dir / name / "checkpoints" / "step_0000000220"
        # the replay went on from the saved one: every step of this direction is in it
        replay = ReplayBuffer.load(checkpoint / "replay.npz")
        assert len(replay) == second[name]["env_steps"]
        assert len(ReplayBuffer.load(checkpoint / "demos.npz")) == demos
        # the logs go on: the first run's lines kept, then only steps after the resume point
        metrics = (run_dir / name / "metrics.jsonl").read_text().splitlines()
        assert metrics[: len(metrics_before)] == metrics_before
        after = [json.loads(line) for line in metrics[len(metrics_before) :]]
        assert all(record["step"] > 110 and "orphan" not in record for record in after)
        appended += len(after)
        assert _steps(run_dir / name / "eval.jsonl") == [110, 220]
    assert appended > 0 and not (checkpoints / "step_0000000150").exists()

    # robot-rl eval reads a direction's checkpoints like train's
    result = eval_command.run(eval_command.EvalConfig(checkpoint=str(checkpoints), episodes=1))
    assert result == 0


def test_resume_refuses_a_missing_checkpoint_and_another_config_clearly(tmp_path, capsys):
    from process_helpers import run_cli

    from robot_rl.commands.train_fb import run
    from robot_rl.runtime.fb_checkpoint import STATE_FILE, config_json

    run_dir = tmp_path / "run"
    result = run_cli("train-fb", "--run-dir", str(run_dir), "--resume", timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no train-fb checkpoint in" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr

    run_dir.mkdir()
    state = {"step": 30, "config": config_json(fb_config(run_dir=str(run_dir)))}
    (run_dir / STATE_FILE).write_text(json.dumps(state))
    other = fb_config(
        task="peg_insert",
        backward_task="put_down_cube",
        replay_capacity=500,
        agent=TINY.replace(num_critics=4),
        run_dir=str(run_dir),
        resume=True,
    )
    capsys.readouterr()
    assert run(other) == 2
    out = capsys.readouterr().err  # the error line goes to stderr
    assert "trained with another configuration" in out
    assert "task: checkpoint has 'pick_cube', this run has 'peg_insert'" in out
    assert "replay_capacity: checkpoint has 100000, this run has 500" in out
    assert "agent.num_critics: checkpoint has 2, this run has 4" in out
    assert "backward_task" not in out  # the same backward task, named or by default

    # a fresh run does not overwrite a resumable one
    assert run(fb_config(run_dir=str(run_dir))) == 2
    assert "pass --resume" in capsys.readouterr().err
