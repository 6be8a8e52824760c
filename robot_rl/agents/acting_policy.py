"""What travels from learner to actor: the acting parameters, and the actor's policy over them.

Only the parameters that acting reads (the critic's encoder, the actor, the gripper critic) are
sent, as Flax msgpack bytes (no pickle). A frozen pretrained trunk never changes, so it is not
sent: both sides build it from the same configuration and seed, and a fingerprint in the
welcome message catches a mismatch.
"""

from __future__ import annotations

import hashlib

import gymnasium as gym
import jax
import numpy as np
from flax import serialization

from robot_rl.agents.acting import act
from robot_rl.agents.checkpoint import config_from_json
from robot_rl.agents.pretrained import create_agent
from robot_rl.agents.sac import SACAgent


def acting_params(agent: SACAgent) -> dict:
    """What is sent to actors: acting's parameters less the frozen trunk (never changes)."""
    params = agent.acting_params()
    params.pop("frozen_trunk")
    return params


def weights_bytes(agent: SACAgent) -> bytes:
    return serialization.to_bytes(jax.device_get(acting_params(agent)))


def frozen_trunk_fingerprint(agent: SACAgent) -> str | None:
    if agent.frozen_trunk is None:
        return None
    return hashlib.sha256(serialization.to_bytes(jax.device_get(agent.frozen_trunk))).hexdigest()


class ActingPolicy:
    """The actor's copy of the policy: built from the learner's welcome, updated by weights."""

    def __init__(
        self,
        welcome: dict,
        observation_space: gym.spaces.Dict,
        action_space: gym.spaces.Box,
    ):
        config = config_from_json(welcome["agent_config"])
        try:  # a pretrained trunk is read from the file the learner names (checked below)
            agent = create_agent(
                int(welcome["seed"]), observation_space, action_space, config, optimisers=False
            )
        except FileNotFoundError as err:
            raise ValueError(f"the learner's frozen trunk is pretrained: {err}") from err
        if frozen_trunk_fingerprint(agent) != welcome.get("frozen_trunk"):
            raise ValueError(
                "this actor's frozen image trunk differs from the learner's (another pretrained "
                "file or seed): both must load the same weights"
            )
        self._nets = agent.nets
        self._epsilon = config.gripper_epsilon
        self._frozen_trunk = agent.frozen_trunk
        self._params = acting_params(agent)
        self._rng = jax.random.PRNGKey(int(welcome["seed"]) + 7)
        self.version = -1

    def load(self, version: int, payload: bytes) -> None:
        # A new tree swapped in whole: a control loop calling this policy from another thread
        # sees the old parameters or the new ones, never a mix.
        self._params = serialization.from_bytes(self._params, payload)
        self.version = version

    def __call__(self, observation: dict, deterministic: bool = False) -> np.ndarray:
        batched = {k: np.asarray(v)[None] for k, v in observation.items()}
        params = {**self._params, "frozen_trunk": self._frozen_trunk}
        actions, self._rng = act(
            self._nets, self._epsilon, params, batched, self._rng, deterministic=deterministic
        )
        return np.asarray(actions)[0]
