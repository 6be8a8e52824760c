"""A label query never holds the robot (issue 26, point 6): when the reward classifier fires and
the labeller (the operator) is asked without waiting, the episode ends as a tentative success
and the loop goes on stepping while the question is open; the answer is applied when it comes,
before the transition reaches the sink: a yes keeps the reward, a no (or no answer within the
timeout, a reject) makes it a truncated step that pays nothing. The answers still go to the
classifier's fine-tuning set. Fakes stand in for the classifier and the env (no compile, no
MuJoCo); the operator's labeller and its device queue are the real ones."""

from __future__ import annotations

import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from robot_rl.rewards.labels import LabelSet
from robot_rl.rewards.operator import (
    OperatorLabeler,
    OperatorSuccess,
    parse_question,
)
from robot_rl.rewards.operator_input import REJECT, SUCCESS, OperatorInput
from robot_rl.rewards.relabel import FalsePositiveRelabeler, RelabelConfig
from robot_rl.rewards.wrapper import ClassifierReward
from robot_rl.runtime.episode_loop import EpisodeLoop

SIZE = 8
DARK, BRIGHT = 0, 1  # actions: show a frame the classifier ignores, or one it fires on


@dataclass(frozen=True)
class FakeClassifierConfig:
    camera: str = "front"
    threshold: float = 0.5
    image_size: int = SIZE


class BrightIsSuccess:
    """Fires on a bright frame; never fine-tuned here (update_every is beyond the test)."""

    config = FakeClassifierConfig()

    def probability(self, images):
        return float(np.mean(images) > 100)


@dataclass
class RobotTask:
    scores_itself: bool = False  # robot mode: no ground truth, the classifier decides
    max_episode_steps: int = 50


class CountingEnv(gym.Env):
    """Shows a dark or a bright frame; counts every step (the robot moving)."""

    def __init__(self):
        self.task = RobotTask()
        self.observation_space = gym.spaces.Dict(
            {"front": gym.spaces.Box(0, 255, (SIZE, SIZE, 3), np.uint8)}
        )
        self.action_space = gym.spaces.Box(0, 1, (1,), np.float32)
        self.steps = self.resets = 0

    def reset(self, *, seed=None, options=None):
        self.resets += 1
        return {"front": np.zeros((SIZE, SIZE, 3), np.uint8)}, {"success": False}

    def step(self, action):
        self.steps += 1
        frame = np.full((SIZE, SIZE, 3), 255 if action[0] > 0.5 else 0, np.uint8)
        return {"front": frame}, 0.0, False, False, {"success": False}


class Device(OperatorInput):
    """The operator's device: events pushed by the test; the lines it was asked to show."""

    def __init__(self):
        super().__init__()
        self.shown: list[str] = []

    def describe(self, event: str) -> str:
        return f"button {3 if event == SUCCESS else 4}"

    def announce(self, line: str) -> None:
        self.shown.append(line)


def build(timeout: float = 60.0, wrap_operator: bool = False):
    """The actor's stack in small: classifier, deferred operator relabelling, episode loop."""
    env = CountingEnv()
    device, logs = Device(), []
    labeler = OperatorLabeler(device, timeout=timeout, log=logs.append)
    base = LabelSet(np.zeros((2, SIZE, SIZE, 3), np.uint8), [0, 1], [0, 1])
    relabeler = FalsePositiveRelabeler(
        BrightIsSuccess(), base, labeler, RelabelConfig(update_every=10_000)
    )
    relabeler.defer = True
    wrapped = ClassifierReward(env, BrightIsSuccess(), relabeler=relabeler)
    if wrap_operator:
        wrapped = OperatorSuccess(wrapped, device, labeler=labeler)
    stored = []
    loop = EpisodeLoop(wrapped, stored.append)
    loop.reset()
    return env, device, labeler, relabeler, loop, stored, logs


def act(value):
    return lambda obs: np.array([value], np.float32)


def test_the_loop_keeps_stepping_while_the_question_is_open_and_a_yes_keeps_the_reward():
    env, device, labeler, relabeler, loop, stored, _ = build()
    step = loop.step(act(DARK))
    fired = loop.step(act(BRIGHT))  # the classifier fires: a tentative success
    assert fired.ended is not None and fired.transition.terminated
    assert fired.settled == [] and loop.held == 1  # its figures and its transition wait
    assert env.resets == 2  # the robot was reset at once, no answer needed
    assert labeler.open_questions() == 1
    for _ in range(5):  # the robot goes on while the question is open
        step = loop.step(act(DARK))
        assert step.settled == []
    assert env.steps == 7 and loop.held == 1
    assert len(stored) == 6  # everything but the step awaiting its answer
    assert not any(t.reward for t in stored)

    device.push(SUCCESS)  # the operator confirms, later
    step = loop.step(act(DARK))
    assert loop.held == 0 and labeler.open_questions() == 0
    (episode,) = step.settled
    assert episode.figures["success"] == 1.0 and episode.figures["return"] == 1.0
    confirmed = stored[-1]
    assert (confirmed.reward, confirmed.terminated, confirmed.truncated) == (1.0, True, False)
    assert np.array_equal(confirmed.next_obs["front"], fired.transition.next_obs["front"])
    assert relabeler.labelled().labels.tolist() == [1]  # the answer joins the fine-tuning set
    assert loop.recent_success == [1.0]
    opened, closed = device.shown
    assert parse_question(opened) == (1, "open") and parse_question(closed) == (1, "closed")
    assert "confirmed" in closed


def test_a_no_turns_the_tentative_success_into_a_truncated_step_that_pays_nothing():
    env, device, labeler, relabeler, loop, stored, _ = build()
    loop.step(act(BRIGHT))
    loop.step(act(DARK))
    assert env.steps == 2 and loop.held == 1
    device.push(REJECT)
    (episode,) = loop.step(act(DARK)).settled
    assert len(stored) == 3
    rejected = stored[-1]  # it reached the sink after the next episode's first steps
    assert (rejected.reward, rejected.terminated, rejected.truncated) == (0.0, False, True)
    assert episode.figures["success"] == 0.0 and episode.figures["return"] == 0.0
    assert not episode.info["label_confirmed"]
    assert relabeler.labelled().labels.tolist() == [0]
    assert relabeler.counts()["false_positives"] == 1
    assert labeler.answers == {SUCCESS: 0, REJECT: 1, "none": 0}


def test_no_answer_within_the_timeout_is_a_reject_and_is_logged():
    env, _device, labeler, relabeler, loop, stored, logs = build(timeout=0.2)
    loop.step(act(BRIGHT))
    deadline = time.monotonic() + 30.0
    while loop.held and time.monotonic() < deadline:  # the loop goes on meanwhile
        loop.step(act(DARK))
        time.sleep(0.01)
    assert loop.held == 0 and env.steps > 1
    held = [t for t in stored if t.truncated]
    assert len(held) == 1 and held[0].reward == 0.0 and not held[0].terminated
    assert labeler.answers["none"] == 1
    assert relabeler.labelled().labels.tolist() == [0]  # counted as a reject
    assert any("no answer from the operator within 0.2 s: rejected" in line for line in logs)


def test_presses_answer_the_open_questions_first_and_never_pay_the_next_episode():
    _env, device, _labeler, _, loop, stored, _ = build(wrap_operator=True)
    loop.step(act(BRIGHT))  # question 1
    loop.step(act(BRIGHT))  # question 2, before question 1 is answered
    assert loop.held == 2
    device.push(SUCCESS)  # answers question 1, not the running episode
    step = loop.step(act(DARK))
    assert not step.info["operator_success"] and not step.transition.reward
    device.push(REJECT)  # answers question 2
    loop.step(act(DARK))
    assert loop.held == 0
    answered = [t for t in stored if t.terminated or t.truncated]
    assert [(t.reward, t.terminated) for t in answered] == [(1.0, True), (0.0, False)]
    device.push(SUCCESS)  # no question open: the operator's success pays this episode
    step = loop.step(act(DARK))
    assert step.info["operator_success"] and step.transition.reward == 1.0


def test_a_run_that_stops_stores_what_awaits_an_answer_as_an_unlabelled_reject():
    _env, device, labeler, relabeler, loop, stored, _ = build()
    loop.step(act(BRIGHT))
    settled = loop.flush_pending(timeout=0.0)
    assert loop.held == 0 and labeler.open_questions() == 0
    assert [e.figures["success"] for e in settled] == [0.0]
    assert (stored[-1].reward, stored[-1].truncated) == (0.0, True)
    assert len(relabeler.labelled()) == 0  # nobody said so: not a label
    assert "withdrawn" in device.shown[-1]


def test_a_labeller_that_answers_at_once_is_not_deferred():
    """The twin's ground truth (no ``ask``): answered within the step, as ``train`` has it."""

    class Truth:
        def label(self, env, obs):
            return False

    env = CountingEnv()
    base = LabelSet(np.zeros((2, SIZE, SIZE, 3), np.uint8), [0, 1], [0, 1])
    relabeler = FalsePositiveRelabeler(BrightIsSuccess(), base, Truth(), RelabelConfig())
    relabeler.defer = True
    stored = []
    loop = EpisodeLoop(ClassifierReward(env, BrightIsSuccess(), relabeler=relabeler), stored.append)
    loop.reset()
    step = loop.step(act(BRIGHT))
    assert loop.held == 0 and step.ended is None and step.info["classifier_rejected"]
    assert (stored[0].reward, stored[0].terminated) == (0.0, False)


def test_the_fine_tune_on_the_answers_runs_beside_the_loop_and_swaps_the_classifier_when_done():
    """A fine-tune takes seconds on a CPU (10 s measured in the cell): with deferred labels it
    runs on a thread, and the loop steps on with the classifier it has until then."""
    import threading

    release, started = threading.Event(), threading.Event()
    tuned = BrightIsSuccess()

    class SlowTune(FalsePositiveRelabeler):
        def update(self):
            started.set()
            assert release.wait(60.0)
            self.updates += 1
            self.classifier = tuned
            return tuned

    env = CountingEnv()
    device = Device()
    base = LabelSet(np.zeros((2, SIZE, SIZE, 3), np.uint8), [0, 1], [0, 1])
    labeler = OperatorLabeler(device, timeout=60.0, log=lambda _: None)
    relabeler = SlowTune(BrightIsSuccess(), base, labeler, RelabelConfig(update_every=2))
    relabeler.defer = True
    wrapped = ClassifierReward(env, BrightIsSuccess(), relabeler=relabeler)
    loop = EpisodeLoop(wrapped, lambda t: None)
    loop.reset()
    for _ in range(2):  # two answered false positives: a fine-tune is due
        loop.step(act(BRIGHT))
        device.push(REJECT)
        loop.step(act(DARK))
    assert started.wait(60.0)
    for _ in range(5):  # the loop goes on while the head is tuned
        loop.step(act(DARK))
    assert env.steps == 9 and relabeler.updates == 0 and wrapped.classifier is not tuned
    release.set()
    wrapped.close()  # waits for the fine-tune under way
    assert relabeler.updates == 1 and relabeler.classifier is tuned
    loop.step(act(DARK))
    assert wrapped.classifier is tuned  # the next step scores with the fine-tuned head
