"""The reward classifier's pieces: labels, balanced batches, the wrapper, checkpoints, training."""

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.rewards.classifier import (
    ClassifierConfig,
    RewardClassifier,
    load_classifier,
    save_classifier,
)
from robot_rl.rewards.labels import LabelSet, balanced_indices, load_labels, save_labels
from robot_rl.rewards.training import FitConfig, accuracy, choose_threshold, f_score, fit
from robot_rl.rewards.wrapper import ClassifierReward

SIZE = 24  # the smallest image the conv trunk takes: keeps compiles short


def synthetic_labels(rng, episodes=12, frames=10) -> LabelSet:
    """Success frames have a bright square in the top-left corner, failures in the bottom-right,
    both on noise: easy, but the classifier has to look at where things are."""
    n = episodes * frames
    images = rng.integers(0, 80, (n, SIZE, SIZE, 3), dtype=np.uint8)
    labels = rng.integers(0, 2, n).astype(np.uint8)
    for i, label in enumerate(labels):
        corner = (slice(2, 10), slice(2, 10)) if label else (slice(14, 22), slice(14, 22))
        images[i][corner] = 230
    return LabelSet(images, labels, np.repeat(np.arange(episodes), frames), {"camera": "front"})


def square_classifier() -> tuple[LabelSet, ClassifierConfig, RewardClassifier]:
    """The synthetic labels and a classifier trained on them to find the top-left square."""
    labels = synthetic_labels(np.random.default_rng(3))
    config = ClassifierConfig(camera="front", image_size=SIZE, hidden_dim=16)
    classifier = fit(
        RewardClassifier.create(config, seed=0),
        labels,
        FitConfig(steps=150, batch_size=32, learning_rate=3e-3),
    )
    return labels, config, classifier


def test_balanced_batches_are_half_success_even_when_success_is_rare():
    rng = np.random.default_rng(0)
    labels = np.zeros(1_000, np.uint8)
    labels[:20] = 1
    for _ in range(5):
        idx = balanced_indices(labels, rng, 64)
        assert len(idx) == 64 and labels[idx].sum() == 32
    with pytest.raises(ValueError, match="need both classes"):
        balanced_indices(np.zeros(10, np.uint8), rng, 8)


def test_label_file_round_trip_and_split_by_whole_episodes(tmp_path):
    labels = synthetic_labels(np.random.default_rng(1))
    path = save_labels(tmp_path / "labels.npz", labels)
    back = load_labels(path)
    np.testing.assert_array_equal(back.images, labels.images)
    np.testing.assert_array_equal(back.labels, labels.labels)
    assert back.meta["camera"] == "front"
    train, test = back.split_by_episode(0.25, seed=0)
    assert len(train) + len(test) == len(labels)
    assert not set(train.episodes) & set(test.episodes)
    with pytest.raises(ValueError, match="0 \\(failure\\) or 1"):
        LabelSet(labels.images, labels.labels * 2, labels.episodes)
    with pytest.raises(FileNotFoundError, match="record-labels"):
        load_labels(tmp_path / "missing.npz")


class MeanBrightness:
    """A stand-in classifier: P(success) is the image's mean brightness."""

    config = ClassifierConfig(camera="front", image_size=8, threshold=0.5)

    def probability(self, image):
        return float(np.asarray(image).mean() / 255.0)


class ScriptedEnv(gym.Env):
    """Each action's first entry sets the next frame's brightness; info says what the task
    would (ground-truth success, a real failure)."""

    def __init__(self):
        self.observation_space = gym.spaces.Dict(
            {
                "state": gym.spaces.Box(-1, 1, (2,), np.float32),
                "front": gym.spaces.Box(0, 255, (4, 4, 3), np.uint8),
            }
        )
        self.action_space = gym.spaces.Box(-1, 1, (3,), np.float32)

    def _obs(self, brightness):
        return {"state": np.zeros(2, np.float32), "front": np.full((4, 4, 3), brightness, np.uint8)}

    def reset(self, *, seed=None, options=None):
        return self._obs(0), {"success": False}

    def step(self, action):
        brightness, success, failure = int(action[0]), bool(action[1]), bool(action[2])
        info = {"success": success}
        return self._obs(brightness), -5.0, success or failure, False, info


def test_wrapper_pays_one_and_terminates_when_the_probability_passes_the_threshold():
    env = ClassifierReward(ScriptedEnv(), MeanBrightness(), keep_image=False, max_episode_steps=4)
    assert set(env.observation_space.spaces) == {"state"}
    obs, _ = env.reset()
    assert set(obs) == {"state"}

    # below the threshold: nothing, even though the task (ground truth) says success
    obs, reward, terminated, truncated, info = env.step([100, 1, 0])
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["success"] and not info["classifier_success"]
    assert info["classifier_prob"] == pytest.approx(100 / 255)
    # at the threshold: reward 1 and the episode ends
    _, reward, terminated, truncated, info = env.step([128, 0, 0])
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["classifier_success"] and not info["success"]  # a false positive stays visible

    # a real failure still ends the episode, without reward
    env.reset()
    _, reward, terminated, _, _ = env.step([0, 0, 1])
    assert (reward, terminated) == (0.0, True)
    # the time limit truncates (bootstraps) even after a ground-truth success was dropped
    env.reset()
    for _ in range(3):
        assert env.step([0, 1, 0])[3] is False
    _, _, terminated, truncated, _ = env.step([0, 1, 0])
    assert (terminated, truncated) == (False, True)

    strict = ClassifierReward(ScriptedEnv(), MeanBrightness(), threshold=0.9)
    strict.reset()
    assert strict.step([200, 0, 0])[1:3] == (0.0, False)
    assert "front" in strict.observation_space.spaces
    with pytest.raises(ValueError, match="camera 'wrist'"):
        ClassifierReward(ScriptedEnv(), MeanBrightness(), camera="wrist")


def test_tiny_training_run_beats_chance_and_the_checkpoint_round_trips(tmp_path):
    labels = synthetic_labels(np.random.default_rng(2))
    train, test = labels.split_by_episode(0.25, seed=0)
    config = ClassifierConfig(camera="front", image_size=SIZE, hidden_dim=16, pooling="avg")
    classifier = RewardClassifier.create(config, seed=0)
    before = [leaf.copy() for leaf in _leaves(classifier.trunk_variables)]
    trained = fit(classifier, train, FitConfig(steps=150, batch_size=32, learning_rate=3e-3))
    held_out = accuracy(trained, test)
    assert held_out["accuracy"] >= 0.9, held_out  # chance is about 0.5
    for was, now in zip(before, _leaves(trained.trunk_variables), strict=True):
        np.testing.assert_array_equal(was, now)  # the trunk stayed frozen

    path = save_classifier(tmp_path / "clf", trained, {"held_out": held_out})
    save_classifier(path, trained, {"held_out": held_out})  # replacing an older one works too
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clf"]
    loaded = load_classifier(path)
    assert loaded.config == config
    np.testing.assert_array_equal(
        loaded.probability(test.images[:16]), trained.probability(test.images[:16])
    )
    assert isinstance(loaded.probability(test.images[0]), float)
    with pytest.raises(ValueError, match="24x24"):
        loaded.probability(np.zeros((32, 32, 3), np.uint8))
    with pytest.raises(FileNotFoundError, match="no reward classifier"):
        load_classifier(tmp_path / "nothing")


def test_a_trained_trunk_changes_and_still_classifies():
    labels = synthetic_labels(np.random.default_rng(2))
    train, test = labels.split_by_episode(0.25, seed=0)
    config = ClassifierConfig(camera="front", image_size=SIZE, hidden_dim=16, pooling="avg")
    classifier = RewardClassifier.create(config, seed=0)
    fit_config = FitConfig(steps=150, batch_size=32, learning_rate=3e-3, train_trunk=True)
    trained = fit(classifier, train, fit_config)
    assert accuracy(trained, test)["accuracy"] >= 0.9
    changed = [
        not np.array_equal(was, now)
        for was, now in zip(
            _leaves(classifier.trunk_variables), _leaves(trained.trunk_variables), strict=True
        )
    ]
    assert all(changed)


class FixedProbabilities:
    """A stand-in whose P(success) of frame i is ``probs[i]`` (frame i's first pixel is i)."""

    config = ClassifierConfig(camera="front", image_size=8)

    def __init__(self, probs):
        self.probs = np.asarray(probs)

    def probability(self, images):
        return self.probs[np.asarray(images)[:, 0, 0, 0].astype(int)]


def test_the_threshold_favours_precision_where_accuracy_would_never_fire():
    # 10 success frames of 100: the classifier scores the successes 0.7, and 5 failures 0.6.
    # Never firing (0.95) scores 90% accuracy; 0.55 scores 95% but pays 5 false successes;
    # F0.5 takes 0.65..0.70, which finds every success and no failure.
    truth = np.zeros(100, np.uint8)
    truth[:10] = 1
    probs = np.full(100, 0.1)
    probs[:10], probs[10:15] = 0.7, 0.6
    images = np.zeros((100, 8, 8, 3), np.uint8)
    images[:, 0, 0, 0] = np.arange(100)
    validation = LabelSet(images, truth, np.arange(100))
    assert choose_threshold(FixedProbabilities(probs), validation) == 0.7
    assert f_score(np.zeros(4, bool), np.ones(4, bool), beta=0.5) == 0.0
    assert f_score(np.ones(4, bool), np.ones(4, bool), beta=0.5) == 1.0


def _leaves(tree):
    import jax

    return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(tree)]


def test_training_config_wraps_the_twin_with_the_classifier(tmp_path):
    pytest.importorskip("mujoco")
    from robot_rl.runtime.train_loop import TrainConfig

    config = ClassifierConfig(camera="front", image_size=SIZE, hidden_dim=8, pooling="avg")
    path = save_classifier(tmp_path / "clf", RewardClassifier.create(config), {})
    env = TrainConfig(task="pick_cube", reward_classifier=str(path)).make_env(0)
    try:
        assert set(env.observation_space.spaces) == {"state"}  # the policy reads state only
        obs, _ = env.reset(seed=0)
        assert set(obs) == {"state"}
        _, reward, _, _, info = env.step(np.zeros(4, np.float32))
        assert reward in (0.0, 1.0) and 0.0 <= info["classifier_prob"] <= 1.0
        assert "success" in info and env.task.name == "pick_cube"
        # evaluation reads the task's ground truth, through the same observations
        plain = TrainConfig(task="pick_cube", reward_classifier=str(path)).make_env(
            0, ground_truth=True
        )
        assert plain.observation_space == env.observation_space
        plain.reset(seed=0)
        assert "classifier_prob" not in plain.step(np.zeros(4, np.float32))[-1]
        plain.close()
    finally:
        env.close()
    with pytest.raises(ValueError, match="needs --reward-classifier"):
        TrainConfig(relabel_false_positives=True, total_steps=1, demos=0, start_steps=0).validate()


def test_a_training_run_asks_the_labeler_and_fine_tunes_every_relabel_every_frames(tmp_path):
    pytest.importorskip("mujoco")
    from rich.console import Console

    from robot_rl.rewards.relabel import CLASSIFIER_DIR, RELABELLED_FILE
    from robot_rl.runtime.train_loop import TrainConfig, train

    labels = save_labels(tmp_path / "labels.npz", synthetic_labels(np.random.default_rng(0)))
    # so low a threshold that the untrained head fires on every frame (ungated: the gripper's
    # gate, tested above, shuts at the reset pose), while the twin's ground truth (the labeler)
    # says no: three random steps from a reset never lift the cube
    config = ClassifierConfig(
        camera="front", image_size=SIZE, hidden_dim=8, threshold=1e-6, task_gate=False
    )
    untrained = RewardClassifier.create(config)
    clf = save_classifier(tmp_path / "clf", untrained, {"labels": str(labels)})
    common = dict(task="pick_cube", reward_classifier=str(clf), total_steps=3, start_steps=3,
                  demos=0, eval_episodes=1)  # fmt: skip
    cfg = TrainConfig(**common, relabel_false_positives=True, relabel_every=3,
                      run_dir=str(tmp_path / "run"))  # fmt: skip
    summary = train(cfg, console=Console(quiet=True))
    counts = {"labeler_queries": 3, "false_positives": 3, "classifier_updates": 1}
    assert summary["reward_relabel"] == counts
    assert load_labels(tmp_path / "run" / RELABELLED_FILE).labels.tolist() == [0, 0, 0]
    tuned = load_classifier(tmp_path / "run" / CLASSIFIER_DIR)
    assert tuned.config.threshold >= 0.5  # re-set, never below RelabelConfig.min_threshold
    with pytest.raises(ValueError, match=">= 1"):
        TrainConfig(**common, relabel_false_positives=True, relabel_every=0).validate()
    with pytest.raises(ValueError, match="needs --relabel-false-positives"):
        TrainConfig(**common, relabel_every=3).validate()


def test_record_labels_then_train_reward_from_the_command_line(tmp_path):
    pytest.importorskip("mujoco")
    from robot_rl.cli import main

    labels = tmp_path / "labels.npz"
    args = ["record-labels", "--episodes", "5", "--image-size", str(SIZE), "--out", str(labels)]
    assert main([*args, "--max-steps", "20", "--hold-steps", "3"]) == 0
    recorded = load_labels(labels)
    assert recorded.images.shape[1:] == (SIZE, SIZE, 3) and 0 < recorded.positives < len(recorded)
    assert set(recorded.episodes) == set(range(5))

    out = tmp_path / "clf"
    args = ["train-reward", "--labels", str(labels), "--out", str(out), "--steps", "20"]
    assert main([*args, "--hidden-dim", "8", "--json-out"]) == 0
    assert load_classifier(out).config.image_size == SIZE
    assert main(["train-reward", "--labels", str(tmp_path / "none.npz")]) == 2


def test_wrapper_pays_only_after_k_consecutive_frames_pass_the_threshold():
    env = ClassifierReward(ScriptedEnv(), MeanBrightness(), consecutive=3)
    env.reset()
    # pass, pass, dip: the streak starts over
    for brightness in (200, 200, 0, 200, 200):
        _, reward, terminated, _, info = env.step([brightness, 0, 0])
        assert (reward, terminated) == (0.0, False) and not info["classifier_success"]
    _, reward, terminated, _, info = env.step([200, 0, 0])  # third in a row
    assert (reward, terminated) == (1.0, True) and info["classifier_success"]
    env.reset()  # a new episode starts a new streak
    assert env.step([200, 0, 0])[1] == 0.0
    with pytest.raises(ValueError, match="consecutive"):
        ClassifierReward(ScriptedEnv(), MeanBrightness(), consecutive=0)


class GatedTask:
    """A task whose success is possible only where the reading's ``gripper`` says so."""

    def success_possible(self, reading):
        return reading["gripper"] > 0.5


class GatedEnv(ScriptedEnv):
    """The action's fourth entry is the gripper reading the task's gate checks."""

    task = GatedTask()

    def __init__(self):
        super().__init__()
        self.reading = {"gripper": 0.0}

    def step(self, action):
        self.reading = {"gripper": float(action[3])}
        return super().step(action[:3])


def test_the_classifier_pays_only_where_the_robot_says_success_is_possible():
    env = ClassifierReward(GatedEnv(), MeanBrightness())
    env.reset()
    # a bright frame with the gripper's gate shut: no pay, no end, and it says why
    _, reward, terminated, _, info = env.step([255, 0, 0, 0.0])
    assert (reward, terminated) == (0.0, False)
    assert not info["classifier_success"] and not info["success_possible"]
    assert info["classifier_prob"] == 1.0
    _, reward, terminated, _, info = env.step([255, 0, 0, 1.0])
    assert (reward, terminated) == (1.0, True) and info["success_possible"]


def test_a_witness_classifier_says_what_it_saw_and_ends_nothing():
    env = ClassifierReward(ScriptedEnv(), MeanBrightness(), ends_episodes=False)
    env.reset()
    _, reward, terminated, truncated, info = env.step([255, 0, 0])
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["classifier_success"]
    # the env's own ends still end it (a real failure)
    assert env.step([255, 0, 1])[2]


def test_pick_cube_success_implies_its_gate_and_an_empty_hand_shuts_it():
    from robot_rl.envs.task import make_task
    from robot_rl.tasks.pick_cube import CUBE_HALF, LIFT_HEIGHT

    task = make_task("pick_cube")
    tcp = np.array([0.5, 0.0, CUBE_HALF + LIFT_HEIGHT + 0.01])
    held = {"tcp_pos": tcp, "gripper_pos": np.array([0.35]), "object/cube_pos": tcp.copy()}
    assert task.success(held) and task.success_possible(held)
    for gripper, z in ((0.0, 0.15), (1.0, 0.15), (0.35, CUBE_HALF)):  # open, closed, on table
        reading = {**held, "tcp_pos": np.array([0.5, 0.0, z]), "gripper_pos": np.array([gripper])}
        assert not task.success_possible(reading)


class FrameEnv(gym.Env):
    """Action [i, success] shows ``frames[i]``; ``success`` is what the task (ground truth) says."""

    def __init__(self, frames):
        self.frames = frames
        self.success = False
        self.observation_space = gym.spaces.Dict(
            {"front": gym.spaces.Box(0, 255, frames.shape[1:], np.uint8)}
        )
        self.action_space = gym.spaces.Box(-1, 1, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        self.success = False
        return {"front": self.frames[0]}, {"success": False}

    def step(self, action):
        self.success = bool(action[1])
        info = {"success": self.success}
        return {"front": self.frames[int(action[0])]}, 0.0, self.success, False, info


class SuccessFlagLabeler:
    """Plays the operator on the FrameEnv (the twin's GroundTruthLabeler reads task.success)."""

    def __init__(self):
        self.asked = 0

    def label(self, env, obs):
        self.asked += 1
        return env.success


def test_false_positives_pay_nothing_become_negatives_and_stop_firing_after_a_fine_tune(
    tmp_path,
):
    from robot_rl.rewards.labels import load_labels
    from robot_rl.rewards.relabel import (
        CLASSIFIER_DIR,
        RELABELLED_FILE,
        FalsePositiveRelabeler,
        RelabelConfig,
    )

    # a classifier trained to find the top-left square; the policy's trick: that square on a
    # red-tinted frame, which no labelled frame showed and which it scores as success
    labels, config, classifier = square_classifier()
    fakes = np.random.default_rng(4).integers(0, 80, (12, SIZE, SIZE, 3), dtype=np.uint8)
    fakes[:, 2:10, 2:10] = 230
    fakes[..., 0] = 200
    assert classifier.probability(fakes).min() >= 0.5  # the classifier is fooled
    real = labels.images[labels.labels == 1][:1]

    labeler = SuccessFlagLabeler()
    relabel = RelabelConfig(update_every=4, fine_tune_steps=150, learning_rate=3e-3)
    relabeler = FalsePositiveRelabeler(classifier, labels, labeler, relabel, save_dir=tmp_path)
    env = ClassifierReward(
        FrameEnv(np.concatenate([fakes, real])), classifier, threshold=0.5, relabeler=relabeler
    )
    env.reset()
    # fakes 0-3: the classifier fires, the labeler says no, nothing is paid, the episode goes on
    for i in range(4):
        _, reward, terminated, _, info = env.step([i, 0])
        assert (reward, terminated) == (0.0, False), (i, info)
        assert info["classifier_rejected"] and not info["classifier_success"]
    assert labeler.asked == 4 and relabeler.false_positives == 4
    assert relabeler.updates == 1  # fine-tuned after update_every labelled frames
    assert env.classifier is relabeler.classifier  # the wrapper reads the fine-tuned one
    assert relabeler.classifier.probability(fakes).max() < 0.5  # unseen fakes too
    assert accuracy(relabeler.classifier, labels)["accuracy"] >= 0.9  # real ones still work

    # a real success is confirmed by the labeler, pays 1 and ends the episode
    _, reward, terminated, _, info = env.step([len(fakes), 1])
    assert (reward, terminated) == (1.0, True) and not info["classifier_rejected"]
    assert relabeler.counts() == {
        "labeler_queries": 5,
        "false_positives": 4,
        "classifier_updates": 1,
    }
    saved = load_labels(tmp_path / RELABELLED_FILE)  # the false positives, labelled failure
    assert list(saved.labels) == [0, 0, 0, 0]
    assert load_classifier(tmp_path / CLASSIFIER_DIR).config == config


def test_a_fine_tune_lowers_the_threshold_to_keep_the_known_successes_passing(tmp_path):
    import dataclasses

    from robot_rl.rewards.relabel import FalsePositiveRelabeler, RelabelConfig

    labels, _, trained = square_classifier()
    # a threshold so high that most recorded successes fall below it
    strict = dataclasses.replace(trained.config, threshold=0.9999)
    classifier = RewardClassifier(strict, trained.trunk_variables, trained.head_params)
    positives = labels.images[labels.labels == 1]
    assert np.mean(classifier.probability(positives) >= 0.9999) < 0.9

    relabel = RelabelConfig(update_every=2, fine_tune_steps=50, learning_rate=3e-3)
    relabeler = FalsePositiveRelabeler(classifier, labels, SuccessFlagLabeler(), relabel)
    env = ClassifierReward(FrameEnv(labels.images[labels.labels == 0][:2]), classifier,
                           relabeler=relabeler, threshold=None)  # fmt: skip
    env.reset()
    env.threshold = 0.0  # make both failure frames fire, so the labeler rejects them
    relabeler.check(env.env, {}, labels.images[labels.labels == 0][0])
    relabeler.check(env.env, {}, labels.images[labels.labels == 0][1])
    assert relabeler.updates == 1
    tuned = relabeler.classifier
    assert relabel.min_threshold <= tuned.config.threshold < 0.9999
    assert np.mean(tuned.probability(positives) >= tuned.config.threshold) >= 0.9
    # the wrapper takes the re-set threshold with the fine-tuned classifier at its next step
    env.step([0, 0])
    assert env.threshold == tuned.config.threshold


class AnswersLabeler:
    """Answers from a list, in order: the operator's verdicts."""

    def __init__(self, answers):
        self.answers = iter(answers)

    def label(self, env, obs):
        return next(self.answers)


def test_confirmed_successes_unlike_the_recorded_ones_keep_firing_after_fine_tunes():
    from robot_rl.rewards.relabel import FalsePositiveRelabeler, RelabelConfig

    # the recorded successes show the square top-left; the policy's successes show it top-right,
    # which the classifier was never shown as a success
    labels, _, classifier = square_classifier()
    rng = np.random.default_rng(5)
    policy_successes = rng.integers(0, 80, (6, SIZE, SIZE, 3), dtype=np.uint8)
    policy_successes[:, 2:10, 14:22] = 230
    near_misses = rng.integers(0, 80, (6, SIZE, SIZE, 3), dtype=np.uint8)
    near_misses[:, 14:22, 2:10] = 230  # bottom-left: not a success
    frames = np.concatenate([policy_successes, near_misses])
    answers = [True] * len(policy_successes) + [False] * len(near_misses)

    relabel = RelabelConfig(update_every=len(frames), fine_tune_steps=150, learning_rate=3e-3)
    relabeler = FalsePositiveRelabeler(classifier, labels, AnswersLabeler(answers), relabel)
    for frame in frames:
        relabeler.check(None, {}, frame)
    assert relabeler.updates == 1 and relabeler.false_positives == len(near_misses)

    # each labelled class is repeated up to hard_share of its class's frames
    training = relabeler.training_set()
    recorded_successes = int((labels.labels == 1).sum())
    successes = int((training.labels == 1).sum())
    confirmed_share = (successes - recorded_successes) / successes
    assert confirmed_share == pytest.approx(relabel.hard_share, abs=0.05)

    # the threshold passes keep_recall of the confirmed successes, not only of the recorded ones
    tuned = relabeler.classifier
    threshold = tuned.config.threshold
    assert np.mean(tuned.probability(policy_successes) >= threshold) >= relabel.keep_recall
    recorded = labels.images[labels.labels == 1]
    assert np.mean(tuned.probability(recorded) >= threshold) >= relabel.keep_recall
    assert relabel.min_threshold <= threshold <= classifier.config.threshold


def test_held_out_episodes_show_both_classes():
    """A held-out split by episode that happened to draw no success episode reported recall as
    nothing (the cell's first classifier): success and failure episodes are drawn apart."""
    from robot_rl.rewards.labels import LabelSet

    episodes = np.repeat(np.arange(20), 10)
    labels = np.isin(episodes, [3, 11, 17]) & (np.tile(np.arange(10), 20) > 6)
    images = np.zeros((len(labels), 4, 4, 3), np.uint8)
    label_set = LabelSet(images, labels, episodes, {})
    for seed in range(20):
        train, test = label_set.split_by_episode(0.2, seed=seed)
        assert test.positives > 0 and train.positives > 0
        assert len(test) - test.positives > 0
        assert not set(np.unique(train.episodes)) & set(np.unique(test.episodes))
