"""Acting: the policy's action for a batch of observations, jitted, reading only the parameters
that acting needs (a control loop must not flatten optimiser states every step)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from robot_rl.agents.spec import STAY, Networks


def with_frozen_features(nets: Networks, trunk_variables, observations: dict) -> dict:
    """Replace pixels of frozen-trunk cameras by the trunk's features."""
    if nets.frozen_trunk is None:
        return observations
    out = dict(observations)
    for key in nets.image_keys:
        if out[key].dtype == jnp.uint8:
            out[key] = nets.frozen_trunk.apply(trunk_variables, out[key])
    return out


@functools.partial(jax.jit, static_argnames=("nets", "epsilon", "deterministic"))
def act(
    nets: Networks,
    epsilon: float,
    params: dict,
    observations: dict,
    rng: jax.Array,
    deterministic: bool,
) -> tuple[jax.Array, jax.Array]:
    observations = with_frozen_features(nets, params["frozen_trunk"], observations)
    features = nets.encoder.apply({"params": params["encoder"]}, observations)
    dist = nets.actor.apply({"params": params["actor"]}, features)
    rng, arm_rng, grip_rng, explore_rng = jax.random.split(rng, 4)
    actions = dist.mode() if deterministic else dist.sample_and_log_prob(arm_rng)[0]
    if nets.gripper is None:
        return actions, rng
    q = nets.gripper.apply({"params": params["gripper"]}, features)
    choice = jnp.argmax(q, axis=-1)
    if not deterministic:
        explore = jax.random.uniform(explore_rng, choice.shape) < epsilon
        random_choice = jax.random.randint(grip_rng, choice.shape, 0, q.shape[-1])
        choice = jnp.where(explore, random_choice, choice)
    gripper = (choice - STAY).astype(actions.dtype)[:, None]
    return jnp.concatenate([actions, gripper], axis=-1), rng
