"""Bellman targets as pure functions, so that tests can check them number by number."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def choose_members(rng: jax.Array, num_critics: int, subset_size: int | None) -> jax.Array | None:
    """Indices of a random subset of ``subset_size`` distinct critics; None means all of them."""
    if subset_size is None or subset_size >= num_critics:
        return None
    return jax.random.choice(rng, num_critics, (subset_size,), replace=False)


def subset_min(rng: jax.Array, qs: jax.Array, subset_size: int | None) -> jax.Array:
    """Minimum over a random subset of ``subset_size`` ensemble members (rows of ``qs``,
    [num_critics, batch]), the same subset for the whole batch, as in RLPD and REDQ. ``None`` or
    the full ensemble size takes the minimum over all critics. (The agent evaluates only the
    chosen members' target networks, with the same ``choose_members``.)"""
    members = choose_members(rng, qs.shape[0], subset_size)
    return qs.min(axis=0) if members is None else qs[members].min(axis=0)


def soft_td_target(
    rewards: jax.Array,
    terminated: jax.Array,
    next_q: jax.Array,
    next_log_probs: jax.Array,
    temperature: jax.Array,
    discount: float,
    backup_entropy: bool,
) -> jax.Array:
    """r + gamma * (1 - terminated) * (Q'(s', a') - [alpha * log pi(a'|s')]). Only real
    termination stops bootstrapping: time limits, operator resets and e-stops are truncations and
    keep the discounted next value."""
    next_value = next_q
    if backup_entropy:
        next_value = next_value - temperature * next_log_probs
    return rewards + discount * (1.0 - terminated) * next_value


def gripper_index(gripper_commands: jax.Array) -> jax.Array:
    """Map stored gripper commands {-1 open, 0 stay, +1 close} to indices {0, 1, 2}."""
    return (jnp.clip(jnp.round(gripper_commands), -1, 1) + 1).astype(jnp.int32)


def double_dqn_target(
    rewards: jax.Array,
    terminated: jax.Array,
    next_q_online: jax.Array,
    next_q_target: jax.Array,
    discount: float,
) -> jax.Array:
    """Double DQN: the online network chooses the next action, the target network values it."""
    best = jnp.argmax(next_q_online, axis=-1)
    next_value = jnp.take_along_axis(next_q_target, best[:, None], axis=-1).squeeze(-1)
    return rewards + discount * (1.0 - terminated) * next_value
