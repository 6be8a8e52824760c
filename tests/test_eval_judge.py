"""The judge of an evaluation on a robot (``runtime/eval_judge.py``), on a scripted env: one
source decides, the others are witnesses whose disagreements are warned and counted, an
unconfirmed claim that ended an episode is a cut (truncation), and an operator gets a moment to
press after another source's success."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.rewards.operator_input import SUCCESS
from robot_rl.runtime.eval_judge import SuccessJudge, TaskSuccessRecord
from robot_rl.runtime.evaluation import evaluate


class Scripted(gym.Env):
    """Each episode's steps say what ``script[episode][step]`` gives (info keys); the last step
    of an episode ends it as terminated when ``ends`` says so, else truncated."""

    observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
    action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

    def __init__(self, script, ends):
        self.script, self.ends, self.episode, self.t = script, ends, -1, 0

    def reset(self, *, seed=None, options=None):
        self.episode, self.t = self.episode + 1, 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        steps = self.script[self.episode]
        info = dict(steps[self.t])
        self.t += 1
        last = self.t == len(steps)
        terminated = last and self.ends[self.episode]
        return np.zeros(1, np.float32), 0.0, terminated, last and not terminated, info


class Presses:
    def __init__(self, answers):
        self.answers = list(answers)

    def poll(self):
        return [SUCCESS] if self.answers and self.answers.pop(0) else []


def _policy(obs):
    return np.zeros(1, np.float32)


def test_the_operator_judges_and_the_classifier_that_fired_falsely_is_warned():
    # episode 1: the classifier fires at once, the operator never presses (a false positive)
    # episode 2: the operator presses at step 2, the classifier never fires (a miss)
    script = [
        [{"classifier_success": True}],
        [{}, {"operator_success": True}, {}],
    ]
    lines = []
    env = SuccessJudge(
        Scripted(script, ends=[True, True]), "operator", ("classifier",),
        operator=Presses([]), operator_wait=0.0, log=lines.append,
    )  # fmt: skip
    result = evaluate(_policy, env, 2, seed=0)
    assert result.success_rate == 0.5
    assert result.failure_rate == 0.0  # the false claim cut episode 1, it did not fail
    assert env.report() == {
        "success_source": "operator",
        "witnesses": {"classifier": {"disagreed": 2, "episodes": 2}},
    }
    assert len(lines) == 2
    assert (
        "episode 1: the reward classifier says success, the operator (the judge) says no"
        in (lines[0])
    )
    assert "episode 2: the reward classifier says no success, the operator" in lines[1]


def test_an_operator_who_presses_a_moment_after_the_classifier_confirms_it():
    env = SuccessJudge(
        Scripted([[{"classifier_success": True}]], ends=[True]), "operator", ("classifier",),
        operator=Presses([False, False, True]), operator_wait=5.0, log=pytest.fail,
    )  # fmt: skip
    result = evaluate(_policy, env, 1, seed=0)
    assert result.success_rate == 1.0
    assert env.verdicts == {"operator": True, "classifier": True}


def test_the_ground_truth_judges_beneath_an_operator_who_overwrites_success():
    class Press(gym.Wrapper):  # an operator's press above the task: info["success"] True
        def step(self, action):
            obs, r, term, trunc, info = self.env.step(action)
            return obs, r, term, trunc, {**info, "success": True, "operator_success": True}

    base = Scripted([[{"success": False}, {"success": False}]], ends=[False])
    lines = []
    env = SuccessJudge(
        Press(TaskSuccessRecord(base)), "cell-ground-truth", ("operator",), log=lines.append
    )
    result = evaluate(_policy, env, 1, seed=0)
    assert result.success_rate == 0.0  # the operator's say does not count
    assert env.disagreements == {"operator": 1}
    assert "the operator says success, the cell's ground truth (the judge) says no" in lines[0]


def test_the_judges_success_ends_the_episode():
    env = SuccessJudge(
        Scripted([[{"operator_success": True}, {}, {}]], ends=[False]), "operator", ()
    )
    result = evaluate(_policy, env, 1, seed=0)
    assert result.success_rate == 1.0 and result.length_mean == 1


def _cfg(**values):
    from types import SimpleNamespace

    defaults = {"operator": "off", "reward_classifier": None, "judge": "auto", "hardware": "X"}
    return SimpleNamespace(**{**defaults, **values})


def test_who_judges_on_a_robot_and_who_witnesses():
    from pathlib import Path

    from robot_rl.errors import UserError
    from robot_rl.hardware import load_hardware
    from robot_rl.runtime.robot_evaluation import choose_judge, is_simulated_cell

    hardware = Path(__file__).resolve().parents[1] / "hardware"
    cell, robot = (
        load_hardware(hardware / "fr3_sim.yaml"),
        load_hardware(hardware / "fr3_realsense_spacemouse.yaml"),
    )
    assert is_simulated_cell(cell) and not is_simulated_cell(robot)
    # the README's form: the classifier alone judges (and eval warns that nothing checks it)
    assert choose_judge("pick_cube", _cfg(reward_classifier="c"), robot)[:2] == ("classifier", ())
    both = _cfg(reward_classifier="c", operator="joy")
    assert choose_judge("pick_cube", both, robot) == (
        "operator", ("classifier",), "the operator (joy)"
    )  # fmt: skip
    truth = _cfg(reward_classifier="c", operator="joy", judge="cell-ground-truth")
    assert choose_judge("pick_cube", truth, cell)[:2] == (
        "cell-ground-truth", ("operator", "classifier")
    )  # fmt: skip
    with pytest.raises(UserError, match="is not a simulated cell"):
        choose_judge("pick_cube", truth, robot)
    with pytest.raises(UserError, match="say who judges it"):
        choose_judge("pick_cube", _cfg(), robot)
    # the car scores laps from its own odometry: the task judges, an operator witnesses
    assert choose_judge("car_lap", _cfg(operator="joy", judge="task"))[:2] == (
        "task", ("operator",)
    )  # fmt: skip
