"""MixedSampler: RLPD demo/online mix per minibatch block."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.data.mixing import MixedSampler
from robot_rl.data.replay import ReplayBuffer

OBS_SPACE = gym.spaces.Dict({"state": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)})
ACTION_SPACE = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)


def buffer_with_reward(reward: float, n: int) -> ReplayBuffer:
    """Every transition carries ``reward``, so a row's origin can be read off the batch."""
    buffer = ReplayBuffer(OBS_SPACE, ACTION_SPACE, capacity=64)
    for i in range(n):
        obs = {"state": np.full(2, reward * (i + 1), np.float32)}
        nxt = {"state": np.full(2, reward * (i + 2), np.float32)}
        buffer.add(obs, np.zeros(1), reward, False, False, nxt)
    return buffer


@pytest.mark.parametrize(("fraction", "demo_rows"), [(0.5, 5), (0.25, 2), (0.3, 3)])
def test_each_block_is_mixed(fraction, demo_rows):
    sampler = MixedSampler(buffer_with_reward(1.0, 20), buffer_with_reward(-1.0, 7), fraction)
    batch = sampler.sample(np.random.default_rng(0), batch_size=10, num_minibatches=4)
    assert batch["rewards"].shape == (40,)
    assert batch["observations"]["state"].shape == (40, 2)
    for block in batch["rewards"].reshape(4, 10):
        assert np.sum(block == -1.0) == demo_rows
        assert np.sum(block == 1.0) == 10 - demo_rows
    # Nested observations travel with their rows.
    origin = np.sign(batch["observations"]["state"][:, 0])
    np.testing.assert_array_equal(origin, batch["rewards"])


def test_falls_back_to_whichever_buffer_has_data():
    rng = np.random.default_rng(1)
    online_only = MixedSampler(buffer_with_reward(1.0, 5))
    assert np.all(online_only.sample(rng, 8)["rewards"] == 1.0)
    empty_demo = MixedSampler(buffer_with_reward(1.0, 5), buffer_with_reward(-1.0, 0))
    assert np.all(empty_demo.sample(rng, 8, 2)["rewards"] == 1.0)
    offline = MixedSampler(buffer_with_reward(1.0, 0), buffer_with_reward(-1.0, 5))
    assert np.all(offline.sample(rng, 8)["rewards"] == -1.0)
    with pytest.raises(ValueError, match="both"):
        MixedSampler(buffer_with_reward(1.0, 0), buffer_with_reward(-1.0, 0)).sample(rng, 8)
    with pytest.raises(ValueError, match="demo_fraction"):
        MixedSampler(buffer_with_reward(1.0, 1), demo_fraction=1.5)
