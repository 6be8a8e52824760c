"""A refused reset is retried, bounded and said in one line each (issue 26, point 6): the
Franka node reconnecting to its robot refuses ``/arm/reset`` for a while; neither the actor nor
``record-demos`` may die of it, and after the last try one line says what failed."""

from __future__ import annotations

import pytest

from robot_rl.envs.backend import StaleReadingError
from robot_rl.resets.retry import ResetFailed, ResetRetry, is_refused_reset, reset_with_retry

REFUSED = RuntimeError("/arm/reset refused: reset failed: connection lost")


class Refusing:
    """An env whose reset raises ``errors`` in turn, then succeeds."""

    def __init__(self, *errors):
        self.errors = list(errors)
        self.calls: list[dict] = []

    def reset(self, **kwargs):
        self.calls.append(kwargs)
        if self.errors:
            raise self.errors.pop(0)
        return {"obs": 1}, {"success": False}


def test_a_refused_reset_is_retried_with_backoff_and_one_line_each():
    env, logs, waits = Refusing(REFUSED, TimeoutError("service /arm/reset not available")), [], []
    result = reset_with_retry(env, log=logs.append, sleep=waits.append, seed=3)
    assert result == ({"obs": 1}, {"success": False})
    assert env.calls == [{"seed": 3}] * 3  # the reset's arguments on every try
    assert waits == [2.0, 4.0]
    assert len(logs) == 3
    assert logs[0] == (
        "reset refused (try 1 of 6): /arm/reset refused: reset failed: connection lost; "
        "retrying in 2 s"
    )
    assert logs[-1] == "reset done on try 3 of 6"


def test_a_reset_refused_every_time_fails_with_one_clear_line():
    env, logs, waits = Refusing(*[REFUSED] * 6), [], []
    with pytest.raises(ResetFailed) as raised:
        reset_with_retry(env, log=logs.append, sleep=waits.append)
    assert len(env.calls) == 6 and len(logs) == 5
    assert waits == [2.0, 4.0, 8.0, 16.0, 30.0]  # six tries over about a minute
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("the robot's reset failed 6 times over ")
    assert message.endswith("the last: /arm/reset refused: reset failed: connection lost")


def test_only_a_robot_that_cannot_reset_now_is_retried():
    assert is_refused_reset(REFUSED)
    assert is_refused_reset(StaleReadingError("not ready after waiting: /front_cam lags"))
    assert is_refused_reset(TimeoutError("service /arm/reset did not answer within 5 s"))
    assert not is_refused_reset(ValueError("a bug"))
    assert not is_refused_reset(RuntimeError("call reset() before step()"))
    env = Refusing(ValueError("bad option"))
    with pytest.raises(ValueError, match="bad option"):
        reset_with_retry(env, sleep=lambda _: pytest.fail("a bug is not retried"))
    assert len(env.calls) == 1


def test_the_bound_is_settable_and_checked():
    env, waits = Refusing(REFUSED, REFUSED), []
    with pytest.raises(ResetFailed, match="failed 2 times"):
        reset_with_retry(env, retry=ResetRetry(tries=2, first_wait=0.5), log=lambda _: None,
                         sleep=waits.append)  # fmt: skip
    assert waits == [0.5]
    with pytest.raises(ValueError, match="tries"):
        ResetRetry(tries=0)


def test_the_episode_loop_goes_on_after_a_refused_reset_between_episodes():
    import numpy as np

    from robot_rl.runtime.episode_loop import EpisodeLoop

    class OneStepEpisodes(Refusing):
        def step(self, action):
            return {"obs": 2}, 0.0, False, True, {}

    env, logs, stored = OneStepEpisodes(), [], []
    loop = EpisodeLoop(
        env, stored.append,
        reset=lambda **kw: reset_with_retry(env, log=logs.append, sleep=lambda _: None, **kw),
    )  # fmt: skip
    loop.reset(seed=0)
    env.errors = [REFUSED, REFUSED]  # the driver reconnects to its robot meanwhile
    for _ in range(3):
        loop.step(lambda obs: np.zeros(1))
    assert loop.episodes == 3 and len(stored) == 3
    assert [line.split(":")[0] for line in logs] == [
        "reset refused (try 1 of 6)", "reset refused (try 2 of 6)", "reset done on try 3 of 6"
    ]  # fmt: skip
