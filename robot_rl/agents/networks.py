"""Flax modules of the agent: MLPs, the critic ensemble, the squashed Gaussian actor, the
gripper Q-network and the observation encoder that joins cameras and state."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

default_init = nn.initializers.xavier_uniform


class MLP(nn.Module):
    hidden_dims: Sequence[int]
    layer_norm: bool = False
    activate_final: bool = False

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i, width in enumerate(self.hidden_dims):
            x = nn.Dense(width, kernel_init=default_init())(x)
            if i + 1 < len(self.hidden_dims) or self.activate_final:
                if self.layer_norm:
                    x = nn.LayerNorm()(x)
                x = nn.relu(x)
        return x


class Critic(nn.Module):
    hidden_dims: Sequence[int]
    layer_norm: bool = True

    @nn.compact
    def __call__(self, features: jax.Array, actions: jax.Array) -> jax.Array:
        x = jnp.concatenate([features, actions], axis=-1)
        x = MLP(self.hidden_dims, self.layer_norm, activate_final=True)(x)
        return nn.Dense(1, kernel_init=default_init())(x).squeeze(-1)


class CriticEnsemble(nn.Module):
    """N independent critics evaluated in one vectorised call: output [N, batch]."""

    hidden_dims: Sequence[int]
    num_critics: int
    layer_norm: bool = True

    @nn.compact
    def __call__(self, features: jax.Array, actions: jax.Array) -> jax.Array:
        ensemble = nn.vmap(
            Critic,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            in_axes=None,
            out_axes=0,
            axis_size=self.num_critics,
        )
        return ensemble(self.hidden_dims, self.layer_norm)(features, actions)


class TanhGaussian:
    """A diagonal Gaussian squashed by tanh; log-probabilities include the tanh Jacobian."""

    def __init__(self, mean: jax.Array, log_std: jax.Array):
        self.mean = mean
        self.log_std = log_std

    def sample_and_log_prob(self, rng: jax.Array) -> tuple[jax.Array, jax.Array]:
        noise = jax.random.normal(rng, self.mean.shape, self.mean.dtype)
        pre_tanh = self.mean + jnp.exp(self.log_std) * noise
        gaussian_log_prob = -0.5 * (noise**2 + 2 * self.log_std + jnp.log(2 * jnp.pi))
        # log(1 - tanh(x)^2) written stably: 2 * (log 2 - x - softplus(-2x)).
        log_det = 2.0 * (jnp.log(2.0) - pre_tanh - jax.nn.softplus(-2.0 * pre_tanh))
        return jnp.tanh(pre_tanh), (gaussian_log_prob - log_det).sum(-1)

    def mode(self) -> jax.Array:
        return jnp.tanh(self.mean)


class Actor(nn.Module):
    hidden_dims: Sequence[int]
    action_dim: int
    log_std_min: float = -20.0
    log_std_max: float = 2.0

    @nn.compact
    def __call__(self, features: jax.Array) -> TanhGaussian:
        x = MLP(self.hidden_dims, activate_final=True)(features)
        mean = nn.Dense(self.action_dim, kernel_init=default_init())(x)
        log_std = nn.Dense(self.action_dim, kernel_init=default_init())(x)
        log_std = jnp.clip(log_std, self.log_std_min, self.log_std_max)
        return TanhGaussian(mean, log_std)


class GripperCritic(nn.Module):
    """Q-values of the three discrete gripper commands (open, stay, close)."""

    hidden_dims: Sequence[int]
    num_actions: int = 3

    @nn.compact
    def __call__(self, features: jax.Array) -> jax.Array:
        x = MLP(self.hidden_dims, layer_norm=True, activate_final=True)(features)
        return nn.Dense(self.num_actions, kernel_init=default_init())(x)


class Temperature(nn.Module):
    initial: float = 1.0

    @nn.compact
    def __call__(self) -> jax.Array:
        log_temp = self.param("log_temp", lambda _: jnp.full((), jnp.log(self.initial)))
        return jnp.exp(log_temp)


class ObservationEncoder(nn.Module):
    """Joins every camera (trunk -> head) with the flattened state keys into one vector.

    A camera whose entry is uint8 pixels goes through this module's own trunk. A camera whose
    entry is already float features (a frozen trunk's output, possibly from the embedding cache)
    goes straight to its head; the agent runs frozen trunks outside this module so that they
    have no parameters to train.
    """

    image_keys: tuple[str, ...]
    state_keys: tuple[str, ...]
    trunk: str | None = "conv"
    trunk_dtype: str = "float32"
    pooling: str = "flatten"
    num_spatial_features: int = 8
    bottleneck_dim: int = 50

    @nn.compact
    def __call__(self, observations: dict) -> jax.Array:
        parts = []
        for key in self.image_keys:
            from robot_rl.agents.encoders import TRUNKS, EncoderHead

            x = observations[key]
            if x.dtype == jnp.uint8:
                if self.trunk is None:
                    raise ValueError(f"camera {key!r} arrived as pixels but its trunk is frozen")
                options = {}
                if self.trunk_dtype != "float32":
                    options["dtype"] = jnp.dtype(self.trunk_dtype)
                x = TRUNKS[self.trunk](name=f"trunk_{key}", **options)(x)
            head = EncoderHead(
                pooling=self.pooling,
                num_spatial_features=self.num_spatial_features,
                bottleneck_dim=self.bottleneck_dim,
                name=f"head_{key}",
            )
            parts.append(head(x))
        for key in self.state_keys:
            x = observations[key]
            parts.append(x.reshape(x.shape[0], -1).astype(jnp.float32))
        return jnp.concatenate(parts, axis=-1)
