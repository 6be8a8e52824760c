"""Soft actor-critic with the RLPD recipe, DrQ augmentation and a HIL-SERL gripper critic.

The agent is an immutable pytree of train states. ``update(batch, utd_ratio)`` slices a batch of
``utd_ratio * B`` transitions into minibatches and runs one critic update per minibatch inside a
single compiled ``lax.scan``; the actor and temperature update every ``critic_actor_ratio``-th
critic step. Image encoders belong to the critic; the actor and the gripper critic read the
critic's features with the gradient stopped (DrQ). A frozen trunk lives outside the trainable
parameters: its features can be precomputed per frame (``embed_frames``) and fed in place of
pixels.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from flax.training.train_state import TrainState

from robot_rl.agents.acting import act, with_frozen_features
from robot_rl.agents.augment import augment_observations
from robot_rl.agents.config import CONV_TRUNKS, AgentConfig
from robot_rl.agents.data_parallel import DataParallel
from robot_rl.agents.encoders import onednn_conv
from robot_rl.agents.networks import (
    Actor,
    CriticEnsemble,
    GripperCritic,
    ObservationEncoder,
    Temperature,
)
from robot_rl.agents.spec import STAY, Networks, split_observation_keys
from robot_rl.agents.targets import (
    choose_members,
    double_dqn_target,
    gripper_index,
    soft_td_target,
)


@functools.partial(jax.jit, static_argnums=0)
def _init(module, *args) -> Any:
    """``module.init(*args)`` compiled as one program (cached per module configuration): run
    eagerly, flax compiles each of its operations apart, seconds at every start."""
    return module.init(*args)


@functools.partial(jax.jit, static_argnums=0)
def _apply(module, variables, *args) -> Any:
    """``module.apply(variables, *args)`` compiled as one program, like ``_init``."""
    return module.apply(variables, *args)


def _polyak(target: Any, online: Any, tau: float) -> Any:
    return jax.tree.map(lambda t, o: t * (1.0 - tau) + o * tau, target, online)


class SACAgent(struct.PyTreeNode):
    actor: TrainState
    critic: TrainState
    target_critic_params: Any
    temperature: TrainState
    gripper: TrainState | None
    target_gripper_params: Any
    frozen_trunk: Any
    rng: jax.Array
    critic_steps: jax.Array
    config: AgentConfig = struct.field(pytree_node=False)
    nets: Networks = struct.field(pytree_node=False)

    @classmethod
    def create(
        cls,
        seed: int,
        observation_space: gym.spaces.Dict,
        action_space: gym.spaces.Box,
        config: AgentConfig | None = None,
        frozen_trunk_variables: Any = None,
        optimisers: bool = True,
    ) -> SACAgent:
        """Build an agent. ``frozen_trunk_variables`` are pretrained trunk weights (for example
        from ``load_resnet10_state_dict``); with ``encoder_frozen`` and none given, the frozen
        trunk keeps its random initialisation (a random-feature baseline). ``optimisers=False``
        builds no optimiser state (an actor's template of the parameters: it never updates)."""
        config = config or AgentConfig()
        config.validate()
        image_keys, state_keys = split_observation_keys(observation_space)
        if not image_keys and not state_keys:
            raise ValueError("observation_space is empty")
        if not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
            raise TypeError(f"action_space must be a 1-D Box, got {action_space}")
        if not (np.allclose(action_space.low, -1.0) and np.allclose(action_space.high, 1.0)):
            raise ValueError(
                "the agent acts in [-1, 1]; scale the task's action space to that box "
                f"(got low={action_space.low}, high={action_space.high})"
            )
        action_dim = action_space.shape[0]
        arm_dim = action_dim - 1 if config.gripper else action_dim
        if arm_dim < 1:
            raise ValueError(
                "gripper=True needs at least one continuous action besides the gripper"
            )

        rng = jax.random.PRNGKey(seed)
        rng, trunk_key, enc_key, ens_key, actor_key, grip_key = jax.random.split(rng, 6)
        observations = {k: np.zeros((1, *s.shape), s.dtype) for k, s in observation_space.items()}

        frozen_trunk = None
        trunk_variables = None
        if image_keys and config.encoder_frozen:
            from robot_rl.agents.encoders import TRUNKS

            if config.encoder not in TRUNKS:
                raise ValueError(f"unknown encoder {config.encoder!r}; known: {sorted(TRUNKS)}")
            frozen_trunk = TRUNKS[config.encoder]()
            trunk_variables = frozen_trunk_variables or _init(
                frozen_trunk, trunk_key, observations[image_keys[0]]
            )
            trunk_variables = jax.tree.map(jnp.asarray, trunk_variables)
            for key in image_keys:
                observations[key] = _apply(frozen_trunk, trunk_variables, observations[key])
        elif frozen_trunk_variables is not None:
            raise ValueError("frozen_trunk_variables given but encoder_frozen is False")

        encoder = ObservationEncoder(
            image_keys=image_keys,
            state_keys=state_keys,
            trunk=None if config.encoder_frozen else config.encoder,
            trunk_dtype=config.encoder_dtype,
            pooling=config.pooling,
            num_spatial_features=config.num_spatial_features,
            bottleneck_dim=config.bottleneck_dim,
        )
        encoder_params = _init(encoder, enc_key, observations).get("params", {})
        features = _apply(encoder, {"params": encoder_params}, observations)
        arm_actions = jnp.zeros((1, arm_dim), jnp.float32)

        ensemble = CriticEnsemble(config.hidden_dims, config.num_critics, config.critic_layer_norm)
        critic_params = {
            "encoder": encoder_params,
            "ensemble": _init(ensemble, ens_key, features, arm_actions)["params"],
        }
        actor = Actor(config.hidden_dims, arm_dim, config.log_std_min, config.log_std_max)
        temperature = Temperature(config.init_temperature)
        gripper = GripperCritic(config.hidden_dims) if config.gripper else None

        subset = config.critic_subsample or config.num_critics
        nets = Networks(
            encoder=encoder,
            ensemble=ensemble,
            target_subset=CriticEnsemble(config.hidden_dims, subset, config.critic_layer_norm),
            actor=actor,
            temperature=temperature,
            gripper=gripper,
            frozen_trunk=frozen_trunk,
            image_keys=image_keys,
            state_keys=state_keys,
            observation_ndims=tuple((k, len(s.shape)) for k, s in observation_space.spaces.items()),
            arm_dim=arm_dim,
            target_entropy=(
                config.target_entropy if config.target_entropy is not None else -arm_dim / 2
            ),
        )

        def train_state(apply_fn, params, lr: float) -> TrainState:
            tx = optax.adam(lr) if optimisers else optax.identity()
            return TrainState.create(apply_fn=apply_fn, params=params, tx=tx)

        gripper_state, target_gripper = None, None
        if gripper is not None:
            grip_params = _init(gripper, grip_key, features)["params"]
            gripper_state = train_state(gripper.apply, grip_params, config.gripper_lr)
            target_gripper = gripper_state.params
        temperature_params = _init(temperature, jax.random.PRNGKey(0))["params"]
        return cls(
            actor=train_state(
                actor.apply, _init(actor, actor_key, features)["params"], config.actor_lr
            ),
            critic=train_state(None, critic_params, config.critic_lr),
            target_critic_params=critic_params,
            temperature=train_state(temperature.apply, temperature_params, config.temperature_lr),
            gripper=gripper_state,
            target_gripper_params=target_gripper,
            frozen_trunk=trunk_variables,
            rng=rng,
            critic_steps=jnp.zeros((), jnp.int32),
            config=config,
            nets=nets,
        )

    def _features(self, critic_params: Any, observations: dict) -> jax.Array:
        return self.nets.encoder.apply({"params": critic_params["encoder"]}, observations)

    @jax.jit
    def embed_frames(self, images: jax.Array) -> jax.Array:
        """The frozen trunk's features of a uint8 [N, H, W, C] batch (for the embedding cache)."""
        if self.nets.frozen_trunk is None:
            raise ValueError("embed_frames needs encoder_frozen=True and camera observations")
        return self.nets.frozen_trunk.apply(self.frozen_trunk, images)

    def _prepare(self, rng: jax.Array, observations: dict) -> dict:
        if self.config.drq_pad:
            observations = augment_observations(
                rng, observations, self.nets.image_keys, self.config.drq_pad
            )
        return with_frozen_features(self.nets, self.frozen_trunk, observations)

    def _update_critic(self, batch: dict, rng: jax.Array) -> tuple[SACAgent, dict]:
        cfg, nets = self.config, self.nets
        next_rng, subset_rng = jax.random.split(rng)
        obs, next_obs = batch["observations"], batch["next_observations"]
        arm_actions = batch["actions"][:, : nets.arm_dim]

        next_features = self._features(self.critic.params, next_obs)
        next_dist = nets.actor.apply(
            {"params": self.actor.params}, jax.lax.stop_gradient(next_features)
        )
        next_actions, next_log_probs = next_dist.sample_and_log_prob(next_rng)
        target_features = self._features(self.target_critic_params, next_obs)
        # Only the M target critics that the minimum will look at are evaluated.
        members = choose_members(subset_rng, cfg.num_critics, cfg.critic_subsample)
        target_ensemble = self.target_critic_params["ensemble"]
        if members is not None:
            target_ensemble = jax.tree.map(lambda p: p[members], target_ensemble)
        next_qs = nets.target_subset.apply(
            {"params": target_ensemble}, target_features, next_actions
        )
        next_q = next_qs.min(axis=0)
        temperature = nets.temperature.apply({"params": self.temperature.params})
        target_q = soft_td_target(
            batch["rewards"],
            batch["terminated"],
            next_q,
            next_log_probs,
            temperature,
            cfg.discount,
            cfg.backup_entropy,
        )
        target_q = jax.lax.stop_gradient(target_q)

        def loss_fn(params):
            qs = nets.ensemble.apply(
                {"params": params["ensemble"]}, self._features(params, obs), arm_actions
            )
            return ((qs - target_q) ** 2).mean(), qs

        (loss, qs), grads = jax.value_and_grad(loss_fn, has_aux=True)(self.critic.params)
        critic = self.critic.apply_gradients(grads=grads)
        target = _polyak(self.target_critic_params, critic.params, cfg.tau)
        info = {"losses/critic": loss, "values/q": qs.mean(), "values/target_q": target_q.mean()}
        return self.replace(critic=critic, target_critic_params=target), info

    def _update_actor(self, batch: dict, rng: jax.Array) -> tuple[SACAgent, dict]:
        nets = self.nets
        features = jax.lax.stop_gradient(self._features(self.critic.params, batch["observations"]))
        temperature = nets.temperature.apply({"params": self.temperature.params})

        def actor_loss_fn(params):
            dist = nets.actor.apply({"params": params}, features)
            actions, log_probs = dist.sample_and_log_prob(rng)
            qs = nets.ensemble.apply({"params": self.critic.params["ensemble"]}, features, actions)
            return (temperature * log_probs - qs.mean(axis=0)).mean(), -log_probs.mean()

        (loss, entropy), grads = jax.value_and_grad(actor_loss_fn, has_aux=True)(self.actor.params)
        actor = self.actor.apply_gradients(grads=grads)

        def temperature_loss_fn(params):
            temp = nets.temperature.apply({"params": params})
            return temp * jax.lax.stop_gradient(entropy - nets.target_entropy)

        temp_grads = jax.grad(temperature_loss_fn)(self.temperature.params)
        temperature_state = self.temperature.apply_gradients(grads=temp_grads)
        info = {"losses/actor": loss, "charts/entropy": entropy, "charts/temperature": temperature}
        return self.replace(actor=actor, temperature=temperature_state), info

    def _update_gripper(self, batch: dict) -> tuple[SACAgent, dict]:
        cfg, nets = self.config, self.nets
        features = jax.lax.stop_gradient(self._features(self.critic.params, batch["observations"]))
        next_features = jax.lax.stop_gradient(
            self._features(self.critic.params, batch["next_observations"])
        )
        chosen = gripper_index(batch["actions"][:, -1])
        rewards = batch["rewards"] - cfg.gripper_penalty * (chosen != STAY)
        target = double_dqn_target(
            rewards,
            batch["terminated"],
            nets.gripper.apply({"params": self.gripper.params}, next_features),
            nets.gripper.apply({"params": self.target_gripper_params}, next_features),
            cfg.discount,
        )

        def loss_fn(params):
            q = nets.gripper.apply({"params": params}, features)
            q_chosen = jnp.take_along_axis(q, chosen[:, None], axis=-1).squeeze(-1)
            return ((q_chosen - target) ** 2).mean(), q_chosen

        (loss, q_chosen), grads = jax.value_and_grad(loss_fn, has_aux=True)(self.gripper.params)
        gripper = self.gripper.apply_gradients(grads=grads)
        target_params = _polyak(self.target_gripper_params, gripper.params, cfg.tau)
        info = {"losses/gripper": loss, "values/gripper_q": q_chosen.mean()}
        return self.replace(gripper=gripper, target_gripper_params=target_params), info

    def _minibatch_step(self, batch: dict) -> tuple[SACAgent, dict]:
        rng, aug_rng, next_aug_rng, critic_rng, actor_rng = jax.random.split(self.rng, 5)
        batch = dict(batch)
        batch["observations"] = self._prepare(aug_rng, batch["observations"])
        batch["next_observations"] = self._prepare(next_aug_rng, batch["next_observations"])
        agent = self.replace(rng=rng)

        agent, info = agent._update_critic(batch, critic_rng)
        agent = agent.replace(critic_steps=agent.critic_steps + 1)
        if agent.nets.gripper is not None:
            agent, gripper_info = agent._update_gripper(batch)
            info.update(gripper_info)

        def do_actor(a):
            return a._update_actor(batch, actor_rng)

        actor_info_shape = jax.eval_shape(do_actor, agent)[1]

        def skip_actor(a):
            return a, jax.tree.map(lambda s: jnp.full(s.shape, jnp.nan, s.dtype), actor_info_shape)

        due = agent.critic_steps % self.config.critic_actor_ratio == 0
        agent, actor_info = jax.lax.cond(due, do_actor, skip_actor, agent)
        info.update(actor_info)
        return agent, info

    def _trunk_on_onednn(self) -> bool:
        """Whether camera pixels go only through a trunk whose convolutions run on oneDNN."""
        cfg = self.config
        return cfg.encoder in CONV_TRUNKS and not cfg.encoder_frozen and onednn_conv.in_use()

    @jax.jit
    def _update_minibatches(self, minibatches: dict) -> tuple[SACAgent, dict]:
        """One critic update per leading slice of ``minibatches`` (``[utd_ratio, batch, ...]``),
        as one compiled scan."""
        # XLA's CPU backend runs its convolutions inside a while loop on a slow path (~30x
        # slower measured here), so minibatches whose pixels go through XLA's convolutions are
        # unrolled into straight-line code. The oneDNN trunks' FFI calls are not affected:
        # rolled, the LeRobot-conv update ran 243 against 299 ms per call (f32) and compiled in
        # half the time.
        pixels = any(x.dtype == jnp.uint8 for x in jax.tree.leaves(minibatches["observations"]))
        agent, infos = jax.lax.scan(
            lambda a, mb: a._minibatch_step(mb),
            self,
            minibatches,
            unroll=pixels and not self._trunk_on_onednn(),
        )
        # Actor figures are NaN on the steps that skipped the actor: average the real ones.
        return agent, jax.tree.map(jnp.nanmean, infos)

    def update(
        self, batch: dict, utd_ratio: int = 1, parallel: DataParallel | None = None
    ) -> tuple[SACAgent, dict]:
        """``utd_ratio`` critic updates on consecutive minibatches of ``batch`` in one call;
        with ``parallel``, each minibatch is split over its devices (the agent must have been
        placed with ``parallel.place_agent``)."""
        batch = {
            "observations": dict(batch["observations"]),
            "next_observations": dict(batch["next_observations"]),
            "actions": np.asarray(batch["actions"], np.float32),
            "rewards": np.asarray(batch["rewards"], np.float32),
            "terminated": np.asarray(batch["terminated"], np.float32),
        }

        def split(x):
            if x.shape[0] % utd_ratio:
                raise ValueError(
                    f"batch of {x.shape[0]} does not split into utd_ratio={utd_ratio} minibatches"
                )
            return x.reshape(utd_ratio, x.shape[0] // utd_ratio, *x.shape[1:])

        minibatches = jax.tree.map(split, batch)
        if parallel is not None:
            minibatches = parallel.place_minibatches(minibatches)
        return self._update_minibatches(minibatches)

    def acting_params(self) -> dict:
        """Only what acting needs, so that a control loop does not flatten optimiser states."""
        return {
            "encoder": self.critic.params["encoder"],
            "actor": self.actor.params,
            "gripper": None if self.gripper is None else self.gripper.params,
            "frozen_trunk": self.frozen_trunk,
        }

    def _actions(self, observations: dict, deterministic: bool) -> tuple[np.ndarray, jax.Array]:
        key = (self.nets.state_keys or self.nets.image_keys)[0]
        single = np.ndim(observations[key]) == dict(self.nets.observation_ndims)[key]
        if single:
            observations = {k: np.asarray(v)[None] for k, v in observations.items()}
        actions, rng = act(
            self.nets,
            self.config.gripper_epsilon,
            self.acting_params(),
            observations,
            self.rng,
            deterministic=deterministic,
        )
        actions = np.asarray(actions)
        return (actions[0] if single else actions), rng

    def sample_actions(self, observations: dict) -> tuple[np.ndarray, SACAgent]:
        """Stochastic actions for exploration; returns the agent with its advanced RNG."""
        actions, rng = self._actions(observations, deterministic=False)
        return actions, self.replace(rng=rng)

    def eval_actions(self, observations: dict) -> np.ndarray:
        """Deterministic actions: the mean of the squashed Gaussian, the greedy gripper."""
        return self._actions(observations, deterministic=True)[0]
