"""The operator who records on a robot (issue 26, points 2 and 3), without ROS 2: the judge of
a demonstration (success keeps it, reject or time discards it), the button labeller (held, or
toggled on a keyboard), and the simulated operator's ``demonstrate`` and ``label`` modes
(``sim/simulated_human.py``) played on the twin in robot mode, where only the operator's
presses say what succeeded."""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.envs.intervention import OperatorCommand
from robot_rl.rewards.labelers import LABELERS, ButtonLabeler
from robot_rl.rewards.operator_input import REJECT, SUCCESS, OperatorInput

pytest.importorskip("mujoco")


class Device(OperatorInput):
    """An operator's device driven by the test (presses; optionally the held state)."""

    def __init__(self, reports_held: bool = True):
        super().__init__()
        self.down = False
        if not reports_held:
            self.held = None

    def held(self, event: str) -> bool:
        return event == SUCCESS and self.down

    def describe(self, event: str) -> str:
        return event


def robot_mode_twin():
    """The twin with pick_cube in robot mode: it scores nothing itself (success comes from the
    operator), the reading still has the cube (what the simulated operator sees)."""
    from robot_rl.runtime.environments import make_env
    from robot_rl.runtime.observation_mode import ObservationMode

    mode = ObservationMode(cameras=(), robot_mode=True)
    env = make_env("twin", "pick_cube", "", 0, mode.task_options("pick_cube"))
    assert not env.task.scores_itself
    return env


class Hands:
    """A ``TeleopSource`` played by a simulated operator (``Demonstrator`` or ``Labeller``): each
    poll is one control period of it; its presses go to ``device``."""

    def __init__(self, operator, device: Device):
        self.operator, self.device = operator, device

    def reset(self):
        pass

    def poll(self, reading):
        decided = self.operator.decide(reading)
        action, signal = decided
        if isinstance(signal, str):
            self.device.push(signal)
        elif isinstance(signal, bool):
            self.device.down = signal
        if action is None:  # hands off: the device at rest
            return OperatorCommand(np.zeros(4, np.float32), stamp=time.monotonic())
        return OperatorCommand(np.asarray(action, np.float32), stamp=time.monotonic())


def test_the_demonstrator_is_judged_by_its_own_presses_in_robot_mode():
    """Kept episodes end on the operator's success press (reward 1, terminated), botched ones
    on its reject press (truncated, flagged), as record-demos --hardware keeps and discards."""
    from robot_rl.commands.record_demos import OperatorJudge, TeleopDemoSource, record_episode
    from robot_rl.sim.simulated_human import Demonstrator, DemonstratorConfig

    env = robot_mode_twin()
    device = Device()
    judged = OperatorJudge(env, device)
    demonstrator = Demonstrator(
        env.task, np.random.default_rng(3), DemonstratorConfig(fail_share=0.4, fail_after=(8, 12))
    )
    source = TeleopDemoSource(judged, teleop=Hands(demonstrator, device))
    outcomes = []
    try:
        for seed in range(6):
            episode, success, figures = record_episode(
                judged, source, np.random.default_rng(seed), seed
            )
            outcomes.append("kept" if success else "rejected" if figures["rejected"] else "lost")
            if success:
                assert episode.rewards[-1] == 1.0 and episode.terminated[-1]
                assert not episode.terminated[:-1].any() and episode.rewards[:-1].sum() == 0
                assert env.task.success(env.reading)  # the press came when the cube was up
            else:
                assert not episode.terminated.any() and episode.truncated[-1]
    finally:
        judged.close()
    assert "kept" in outcomes and "rejected" in outcomes, outcomes
    assert outcomes.count("kept") == demonstrator.successes
    assert outcomes.count("rejected") == demonstrator.rejects
    assert "lost" not in outcomes  # every attempt judged within the episode's length


def test_the_labeller_holds_success_exactly_while_the_task_is_done():
    """Behaviours in turn, one per episode once it sees the arm at its start; the button
    labeller's label of each frame is what the operator saw."""
    from robot_rl.commands.record_demos import TeleopDemoSource
    from robot_rl.sim.simulated_human import BEHAVIOURS, Labeller

    env = robot_mode_twin()
    device = Device()
    labeller = Labeller(env.task, np.random.default_rng(0))
    source = TeleopDemoSource(env, teleop=Hands(labeller, device))
    button = LABELERS["button"](device)
    labels, truth, behaviours = [], [], []
    try:
        for episode in range(3):
            obs, _ = env.reset(seed=episode)
            button.reset()
            for _ in range(45):
                seen = env.reading  # what the operator decides on in this period
                action = source.act(env, obs)
                labels.append(button.label(env, obs))
                truth.append(env.task.success(seen))
                obs, *_ = env.step(action)
            behaviours.append(labeller.varied.behaviour)
    finally:
        env.close()
    assert labels == truth
    assert any(labels) and not all(labels)
    assert behaviours == list(BEHAVIOURS[:3])  # a new behaviour after each reset
    assert labeller.episodes == 3


def test_a_button_held_over_from_before_the_episode_counts_once_let_go():
    joy = Device()
    labeller = ButtonLabeler(joy)
    joy.down = True  # held through the reset (the cube was up until the reset dropped it)
    labeller.reset()
    assert labeller.label(None, {}) is False
    joy.down = False
    assert labeller.label(None, {}) is False
    joy.down = True
    assert labeller.label(None, {}) is True
    assert "hold success" in labeller.describe()


def test_the_button_labeller_toggles_on_a_keyboard_and_drops_reset_presses():
    keyboard = Device(reports_held=False)
    labeller = ButtonLabeler(keyboard)
    keyboard.push(SUCCESS)  # pressed during the reset: belongs to no frame
    labeller.reset()
    assert labeller.label(None, {}) is False
    keyboard.push(SUCCESS)
    assert [labeller.label(None, {}) for _ in range(2)] == [True, True]
    keyboard.push(REJECT)
    assert labeller.label(None, {}) is False
    keyboard.push(SUCCESS)
    labeller.reset()  # a new episode begins as a failure
    assert labeller.label(None, {}) is False
    assert "success when success begins" in labeller.describe()
    with pytest.raises(ValueError, match="operator's device"):
        LABELERS["button"](None)


class Steps(gym.Env):
    """An env whose steps are scripted: (stale?) per step."""

    def __init__(self, stale):
        self.stale = list(stale)

    def reset(self, **kwargs):
        return {}, {}

    def step(self, action):
        info = {"stale": "camera late"} if self.stale.pop(0) else {}
        return {}, 0.0, False, bool(info), info

    def close(self):
        pass


def test_the_judge_waits_for_a_fresh_step_and_a_reject_wins():
    from robot_rl.commands.record_demos import OperatorJudge

    device = Device()
    judge = OperatorJudge(Steps([True, False, False]), device)
    judge.reset()
    device.push(SUCCESS)
    *_, info = judge.step(None)
    assert info.get("stale") and device.pending() == 1  # kept for a fresh frame
    _, reward, terminated, truncated, info = judge.step(None)
    assert (reward, terminated, truncated, info["success"]) == (1.0, True, False, True)
    device.push(SUCCESS)
    device.push(REJECT)
    _, reward, terminated, truncated, info = judge.step(None)
    assert (reward, terminated, truncated, info["rejected"]) == (0.0, False, True, True)


def test_the_start_watch_sees_a_reset_not_a_pass_through():
    from robot_rl.envs.task import make_task
    from robot_rl.sim.simulated_human import StartWatch, StartWatchConfig

    task = make_task("pick_cube")
    watch = StartWatch(task, StartWatchConfig(settle_periods=3, min_periods=2))

    def reading(tcp, speed=0.0, grip=0.0, cube_z=0.025):
        return {
            "tcp_pos": np.asarray(tcp, float),
            "tcp_vel": np.array([speed, 0, 0, 0, 0, 0.0]),
            "gripper_pos": np.array([grip]),
            "object/cube_pos": np.array([0.5, 0.0, cube_z]),
        }

    start = (0.51, -0.02, 0.16)
    assert not watch.update(reading(start, speed=0.1))  # passing through
    assert not watch.update(reading(start))
    assert not watch.update(reading(start))
    assert watch.update(reading(start))  # rested 3 periods
    assert watch.periods == 0
    assert not any(watch.update(reading(start, grip=0.4)) for _ in range(5))  # holding
    assert not any(watch.update(reading(start, cube_z=0.1)) for _ in range(5))  # cube up
    assert not any(watch.update(reading((0.5, 0.0, 0.05))) for _ in range(5))  # at the cube
    with pytest.raises(ValueError):
        StartWatchConfig(settle_periods=0)


def test_bad_recording_options_are_one_line(tmp_path, capsys):
    from robot_rl.commands import record_demos, record_labels

    def said():
        captured = capsys.readouterr()
        return captured.out + captured.err

    demos = record_demos.RecordDemosConfig
    assert record_demos.run(demos(hardware=str(tmp_path / "none.yaml"), out=str(tmp_path))) == 2
    assert "error: no hardware file at" in said()
    assert record_demos.run(demos(hardware="hardware/fr3_sim.yaml", source="expert")) == 2
    assert "the operator drives with the teleop device" in said()
    labels = record_labels.RecordLabelsConfig
    assert record_labels.run(labels(labeler="button")) == 2
    assert "record on a robot: give --hardware" in said()
    assert record_labels.run(labels(hardware="hardware/fr3_sim.yaml", labeler="ground-truth")) == 2
    assert "the operator labels on a robot" in said()
    assert record_labels.run(labels(max_steps=0)) == 2
