"""The learned reward in the loop: sparse reward and termination from the reward classifier.

Reward 1 and ``terminated`` once the success probability passes the threshold on ``consecutive``
frames in a row, and only where ``Task.success_possible`` (unless the classifier was trained
without the task gate); else 0. The env's own termination on success is ignored, a real failure
still ends the episode; ``info["success"]`` stays the env's where the task scores itself, else it
is the classifier's verdict. A ``relabeler`` (robot_rl.rewards.relabel) may reject a fired frame:
it pays 0 and the episode goes on. With a deferred relabeler an unanswered firing pays 1 and
terminates, with ``info[PENDING_LABEL]`` for the episode loop to settle (a no turns it into a
truncation paying 0). ``ends_episodes=False``: a witness only, paying and ending nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import gymnasium as gym
import numpy as np

from robot_rl.envs.robot_env import RobotEnvWrapper
from robot_rl.runtime.episode_loop import IF_REJECTED, PENDING_LABEL


class SuccessProbability(Protocol):
    config: object  # has ``camera`` and ``threshold``

    def probability(self, images) -> float | np.ndarray: ...


class ClassifierReward(RobotEnvWrapper):
    def __init__(
        self,
        env: gym.Env,
        classifier: SuccessProbability,
        *,
        threshold: float | None = None,
        camera: str | None = None,
        keep_image: bool = True,
        max_episode_steps: int | None = None,
        consecutive: int = 1,
        relabeler=None,
        ends_episodes: bool = True,
    ):
        super().__init__(env)
        self.ends_episodes = ends_episodes
        self.classifier = classifier
        if consecutive < 1:
            raise ValueError(f"consecutive must be >= 1, got {consecutive}")
        self.consecutive = consecutive
        self.relabeler = relabeler  # a FalsePositiveRelabeler, or None
        self._streak = 0
        self.checkpoint: str | None = None  # set by with_reward_classifier
        self.camera = camera or classifier.config.camera
        self._fixed_threshold = threshold is not None
        self.threshold = classifier.config.threshold if threshold is None else float(threshold)
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"threshold must be in (0, 1), got {self.threshold}")
        spaces = env.observation_space.spaces
        if self.camera not in spaces:
            raise ValueError(
                f"the reward classifier reads camera {self.camera!r}, which this env does not "
                f"observe ({', '.join(spaces)}); add it to the run's cameras"
            )
        self.keep_image = keep_image
        if not keep_image:
            self.observation_space = gym.spaces.Dict(
                {k: v for k, v in spaces.items() if k != self.camera}
            )
        task = getattr(env, "task", None)
        self.max_episode_steps = max_episode_steps or getattr(task, "max_episode_steps", None)
        self._steps = 0

    def _observation(self, obs: dict) -> dict:
        if self.keep_image:
            return obs
        return {k: v for k, v in obs.items() if k != self.camera}

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self._steps = 0
        self._streak = 0
        return self._observation(obs), info

    def close(self):
        try:
            finish = getattr(self.relabeler, "finish", None)
            if finish is not None:
                finish()  # a fine-tune under way saves what it learnt
        finally:
            super().close()

    def _follow_relabeler(self) -> None:
        self.classifier = self.relabeler.classifier  # fine-tuned when enough were labelled
        if not self._fixed_threshold:  # and its threshold re-set to keep its recall
            self.threshold = self.classifier.config.threshold

    def step(self, action):
        if self.relabeler is not None:  # an answer that came since may have fine-tuned it
            self._follow_relabeler()
        obs, _, env_terminated, truncated, info = self.env.step(action)
        self._steps += 1
        prob = float(self.classifier.probability(obs[self.camera]))
        possible = self._success_possible()
        self._streak = self._streak + 1 if prob >= self.threshold and possible else 0
        fired = self._streak >= self.consecutive
        rejected = False
        pending = None
        if not self.ends_episodes:  # a witness: it says what it saw, nothing more
            info = {**info, "classifier_prob": prob, "classifier_success": fired,
                    "success_possible": possible}  # fmt: skip
            return self._observation(obs), 0.0, env_terminated, truncated, info
        if fired and self.relabeler is not None:
            pending = self.relabeler.ask(self.env, obs, obs[self.camera])
            verdict = pending.answer()  # None: asked without waiting, not answered yet
            self._follow_relabeler()
            if verdict is None:
                self._streak = 0  # a tentative success: the episode ends here
            else:
                pending = None
                rejected = not verdict
                fired = not rejected
                if rejected:
                    self._streak = 0  # the labeler is asked again only after k fresh passes
        # the env's termination on (ground-truth) success is dropped; a real failure stays
        failed = env_terminated and not info.get("success", False)
        terminated = fired or failed
        if self.max_episode_steps is not None and self._steps >= self.max_episode_steps:
            truncated = True  # the env may have ended at success earlier and not counted on
        truncated = bool(truncated and not terminated)
        scores_itself = _scores_itself(self.env)
        if pending is not None:  # what the episode loop makes of the step on a no
            info = {
                **info,
                PENDING_LABEL: pending,
                IF_REJECTED: {
                    "terminated": bool(failed),
                    "success": bool(scores_itself and info.get("success", False)),
                },
            }
        info = {
            **info,
            **({} if scores_itself else {"success": fired}),
            "classifier_prob": prob,
            "classifier_success": fired,
            "classifier_rejected": rejected,
            "success_possible": possible,
        }
        return self._observation(obs), float(fired), terminated, truncated, info

    def _success_possible(self) -> bool:
        """The task's check on the robot's own reading (True where there is no task, or the
        classifier was trained with --no-task-gate)."""
        if not getattr(self.classifier.config, "task_gate", True):
            return True
        task = getattr(self.env, "task", None)
        reading = getattr(self.env, "reading", None)
        if task is None or reading is None or not hasattr(task, "success_possible"):
            return True
        return bool(task.success_possible(reading))


def with_reward_classifier(
    checkpoint: str, build_env, options: dict, consecutive: int = 1, ends_episodes: bool = True
) -> ClassifierReward:
    """Build an env through ``build_env(options)`` with the classifier's camera rendered, wrapped
    in ``ClassifierReward``. The camera reaches the policy only if the run asked for it."""
    classifier = _load_cached(str(checkpoint))
    camera, size = classifier.config.camera, classifier.config.image_size
    cameras = tuple(options.get("cameras", ()))
    if cameras and options.get("image_size") != size:
        raise ValueError(
            f"the reward classifier reads {size}x{size} images but the run's cameras are "
            f"{options.get('image_size')}x{options.get('image_size')}; use --image-size {size}"
        )
    keep = camera in cameras
    env = build_env(
        {**options, "cameras": cameras if keep else (*cameras, camera), "image_size": size}
    )
    wrapped = ClassifierReward(
        env, classifier, keep_image=keep, consecutive=consecutive, ends_episodes=ends_episodes
    )
    wrapped.checkpoint = str(checkpoint)  # where a relabeler finds the classifier's label file
    return wrapped


_CLASSIFIERS: dict = {}


def _load_cached(checkpoint: str):
    # a run builds several envs (training, evaluation, demos): one classifier, compiled once;
    # keyed by modification time too, so that a checkpoint written again is read again
    from robot_rl.rewards.classifier import CONFIG_FILE, load_classifier

    config = Path(checkpoint) / CONFIG_FILE
    key = (str(Path(checkpoint).resolve()), config.stat().st_mtime_ns if config.exists() else 0)
    if key not in _CLASSIFIERS:
        _CLASSIFIERS[key] = load_classifier(checkpoint)
    return _CLASSIFIERS[key]


def _scores_itself(env) -> bool:
    """False where the task has no ground truth to score with (robot mode)."""
    return bool(getattr(getattr(env, "task", None), "scores_itself", True))
