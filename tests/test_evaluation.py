"""Evaluation figures: Wilson interval, success, failure and end-of-episode info."""

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.resets.retry import reset_with_retry
from robot_rl.runtime.evaluation import evaluate, wilson_interval


class CoinTask(gym.Env):
    """Episode outcome set by the seed: even seeds succeed, seeds 1 mod 4 fail, others time out."""

    observation_space = gym.spaces.Dict({"state": gym.spaces.Box(-1, 1, (1,), np.float32)})
    action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        self.outcome = seed % 2 == 0, seed % 4 == 1
        self.t = 0
        return {"state": np.zeros(1, np.float32)}, {}

    def step(self, action):
        self.t += 1
        success, failure = self.outcome
        done = self.t == 3
        info = {"success": success and done, "laps": 2 if success else 0}
        terminated = done and (success or failure)
        truncated = done and not terminated
        return {"state": np.zeros(1, np.float32)}, 1.0, terminated, truncated, info


def test_evaluate_counts_success_failure_and_final_info():
    result = evaluate(lambda obs: np.zeros(1), CoinTask(), episodes=8, seed=0)
    assert result.success_rate == 0.5
    assert result.failure_rate == 0.25
    assert result.length_mean == 3.0 and result.return_mean == 3.0
    assert result.final_info == {"laps": 1.0}
    assert result.success_ci_low < 0.5 < result.success_ci_high


class RefusesFirstReset(CoinTask):
    """A robot whose first reset is refused (the arm not home yet on a loaded machine)."""

    refusals = 1

    def reset(self, *, seed=None, options=None):
        if self.refusals:
            self.refusals -= 1
            raise RuntimeError("/arm/reset refused: reset pose not reached (289.9 mm away)")
        return super().reset(seed=seed, options=options)


def test_evaluate_resets_through_the_given_reset_so_a_refused_one_is_retried():
    env, lines = RefusesFirstReset(), []

    def reset(**kwargs):
        return reset_with_retry(env, log=lines.append, sleep=lambda s: None, **kwargs)

    result = evaluate(lambda obs: np.zeros(1), env, episodes=4, seed=0, reset=reset)
    assert result.episodes == 4 and result.success_rate == 0.5  # seeds 0..3, as without it
    assert "refused (try 1 of 6)" in lines[0] and lines[1] == "reset done on try 2 of 6"
    with pytest.raises(RuntimeError, match="refused"):  # the env's own reset is not retried
        evaluate(lambda obs: np.zeros(1), RefusesFirstReset(), episodes=1, seed=0)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (10, 10), (45, 50), (5, 50)])
def test_wilson_interval_contains_the_estimate_and_stays_in_unit_range(k, n):
    low, high = wilson_interval(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0
    assert high - low < 0.5


def test_wilson_interval_of_fifty_out_of_fifty_is_above_ninety_percent():
    low, high = wilson_interval(50, 50)
    assert high == 1.0 and 0.92 < low < 0.94
