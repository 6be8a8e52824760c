"""The Bellman targets, number by number."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from robot_rl.agents.targets import (
    double_dqn_target,
    gripper_index,
    soft_td_target,
    subset_min,
)


def test_subset_min_takes_min_over_exactly_m_distinct_members():
    # Critic i predicts i everywhere, so the subset min reveals the smallest member drawn.
    qs = jnp.arange(10, dtype=jnp.float32)[:, None] * jnp.ones((10, 5))
    seen = set()
    for seed in range(200):
        result = subset_min(jax.random.PRNGKey(seed), qs, 2)
        value = float(result[0])
        assert np.all(np.asarray(result) == value), "one subset for the whole batch"
        seen.add(value)
    # With 2 of 10 drawn without replacement, member 9 can never be the minimum and the
    # minimum 0 appears only when critic 0 is drawn (1 - C(9,2)/C(10,2) = 20% of draws).
    assert 9.0 not in seen
    assert seen == {float(v) for v in range(9)}


def test_subset_min_with_none_or_full_ensemble_is_global_min():
    qs = jnp.array([[3.0, -1.0], [2.0, 5.0], [4.0, 0.0]])
    for size in (None, 3):
        np.testing.assert_allclose(subset_min(jax.random.PRNGKey(0), qs, size), [2.0, -1.0])


def test_subset_of_one_is_a_single_random_member():
    qs = jnp.array([[1.0], [2.0], [3.0]])
    draws = {float(subset_min(jax.random.PRNGKey(s), qs, 1)[0]) for s in range(50)}
    assert draws == {1.0, 2.0, 3.0}


@pytest.mark.parametrize("backup_entropy", [True, False])
def test_soft_td_target_with_and_without_entropy(backup_entropy):
    rewards = jnp.array([1.0, 0.5])
    terminated = jnp.array([0.0, 0.0])
    next_q = jnp.array([10.0, 4.0])
    next_log_probs = jnp.array([-2.0, 1.0])
    target = soft_td_target(rewards, terminated, next_q, next_log_probs, 0.1, 0.9, backup_entropy)
    entropy_term = 0.1 * next_log_probs if backup_entropy else 0.0
    expected = rewards + 0.9 * (next_q - entropy_term)
    np.testing.assert_allclose(target, expected, rtol=1e-6)
    if backup_entropy:
        np.testing.assert_allclose(target, [1.0 + 0.9 * 10.2, 0.5 + 0.9 * 3.9], rtol=1e-6)
    else:
        np.testing.assert_allclose(target, [1.0 + 9.0, 0.5 + 3.6], rtol=1e-6)


def test_termination_stops_bootstrap_and_nothing_else_does():
    rewards = jnp.array([1.0, 1.0])
    terminated = jnp.array([1.0, 0.0])
    target = soft_td_target(
        rewards, terminated, jnp.array([7.0, 7.0]), jnp.zeros(2), 1.0, 0.5, True
    )
    np.testing.assert_allclose(target, [1.0, 1.0 + 0.5 * 7.0])


def test_gripper_index_maps_commands_to_open_stay_close():
    np.testing.assert_array_equal(
        gripper_index(jnp.array([-1.0, 0.0, 1.0, -0.7, 0.2, 3.0])), [0, 1, 2, 0, 1, 2]
    )


def test_double_dqn_target_uses_online_argmax_and_target_value():
    next_q_online = jnp.array([[0.0, 5.0, 1.0], [3.0, 0.0, 2.0]])
    next_q_target = jnp.array([[9.0, 2.0, 7.0], [1.0, 8.0, 4.0]])
    rewards = jnp.array([0.5, -1.0])
    target = double_dqn_target(rewards, jnp.array([0.0, 0.0]), next_q_online, next_q_target, 0.9)
    # Online picks action 1 for row 0 (target value 2) and action 0 for row 1 (value 1),
    # not the target network's own maxima (9 and 8).
    np.testing.assert_allclose(target, [0.5 + 0.9 * 2.0, -1.0 + 0.9 * 1.0], rtol=1e-6)
    terminal = double_dqn_target(rewards, jnp.array([1.0, 0.0]), next_q_online, next_q_target, 0.9)
    np.testing.assert_allclose(terminal, [0.5, -1.0 + 0.9], rtol=1e-6)
