"""Who says an evaluation episode on a robot succeeded, and who else saw it.

Exactly one source (``SOURCES``) is the judge; the run's other sources are witnesses, compared
with the judge at every episode's end: a disagreement is one warning line, counted per witness
in the report. A source's verdict is whether it said success at any step: the classifier
(``info["classifier_success"]``), the operator (``info["operator_success"]``) or the task's own
score (``info["task_success"]``, kept by ``TaskSuccessRecord``). The judge's success ends the
episode; a witness classifier ends nothing (``ends_episodes=False``), and a witness that does end
one (the operator's press) leaves the verdict to the judge. When another source says success and
the operator has not, the operator gets ``operator_wait`` seconds to press. No ROS 2, no JAX.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import gymnasium as gym

from robot_rl.envs.robot_env import RobotEnvWrapper

SOURCES = {
    "cell-ground-truth": "task_success",
    "operator": "operator_success",
    "classifier": "classifier_success",
    "task": "task_success",
}
"""Each success source and the ``info`` key that carries its say at a step."""

NAMES = {
    "cell-ground-truth": "the cell's ground truth",
    "operator": "the operator",
    "classifier": "the reward classifier",
    "task": "the task",
}


class TaskSuccessRecord(RobotEnvWrapper):
    """Beneath the reward sources: the task's own success as ``info["task_success"]``, which
    the sources above leave alone (the operator's press overwrites ``info["success"]``)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        success = bool(info.get("success", False))
        return obs, reward, terminated, truncated, {**info, "task_success": success}


class SuccessJudge(gym.Wrapper):
    """Outermost: ``info["success"]`` is the judge's verdict so far (``evaluate`` counts it),
    ``verdicts`` each source's on the last episode, ``disagreements`` per witness."""

    def __init__(
        self,
        env: gym.Env,
        judge: str,
        witnesses: tuple[str, ...],
        operator=None,
        operator_wait: float = 3.0,
        log: Callable[[str], None] = print,
    ):
        super().__init__(env)
        unknown = {judge, *witnesses} - set(SOURCES)
        if unknown:
            raise ValueError(f"unknown success sources {sorted(unknown)}")
        self.judge, self.witnesses = judge, tuple(w for w in witnesses if w != judge)
        self.operator = operator
        self.operator_wait = operator_wait
        self.log = log
        self.episode = 0
        self.verdicts: dict[str, bool] = {}
        self.disagreements = dict.fromkeys(self.witnesses, 0)
        self.episodes_judged = 0

    def reset(self, **kwargs):
        self.verdicts = dict.fromkeys((self.judge, *self.witnesses), False)
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        for source in self.verdicts:
            self.verdicts[source] |= bool(info.get(SOURCES[source], False))
        claimed = any(info.get(SOURCES[w], False) for w in self.witnesses)
        if self.verdicts[self.judge] and not truncated:
            terminated = True  # the judge's success ends the episode
        if terminated or truncated:
            said = self.verdicts
            if "operator" in said and not said["operator"] and any(said.values()):
                said["operator"] = self._late_press()  # a person presses a moment later
            if terminated and not said[self.judge] and claimed:
                # a witness's success ended it (an operator who pressed) and the judge does not
                # confirm it: the episode was cut, not failed
                terminated, truncated = False, True
            terminated = terminated or said[self.judge]
            truncated = truncated and not terminated
            self._compare()
        return obs, reward, terminated, truncated, {**info, "success": self.verdicts[self.judge]}

    def _late_press(self) -> bool:
        """The operator's success press within ``operator_wait`` s of another source's."""
        from robot_rl.rewards.operator_input import SUCCESS

        if self.operator is None:
            return False
        deadline = time.monotonic() + self.operator_wait
        while True:
            if SUCCESS in self.operator.poll():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def _compare(self) -> None:
        self.episode += 1
        self.episodes_judged += 1
        judged = self.verdicts[self.judge]
        for witness in self.witnesses:
            said = self.verdicts[witness]
            if said == judged:
                continue
            self.disagreements[witness] += 1
            self.log(
                f"[yellow]warning:[/] episode {self.episode}: {NAMES[witness]} says "
                f"{_word(said)}, {NAMES[self.judge]} (the judge) says {_word(judged)}"
            )

    def report(self) -> dict:
        """The judge, the witnesses and how often each disagreed with it."""
        return {
            "success_source": self.judge,
            "witnesses": {
                w: {"disagreed": n, "episodes": self.episodes_judged}
                for w, n in self.disagreements.items()
            },
        }


def _word(success: bool) -> str:
    return "success" if success else "no success"
