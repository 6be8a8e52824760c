"""Heads that turn a trunk's feature map into the vector the actor and critics see."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

POOLINGS = ("spatial_learned", "flatten", "avg")


class SpatialLearnedEmbeddings(nn.Module):
    """HIL-SERL's learned spatial pooling: ``num_features`` learned weightings per channel.

    ``[B, h, w, c]`` -> ``[B, c * num_features]``, where
    ``out[b, c, f] = sum_{h, w} features[b, h, w, c] * kernel[h, w, c, f]``. Unlike average
    pooling it keeps where things are; unlike flattening it stays small for a 512-channel map.
    """

    num_features: int = 8

    @nn.compact
    def __call__(self, features: jax.Array) -> jax.Array:
        _, height, width, channels = features.shape
        kernel = self.param(
            "kernel",
            nn.initializers.lecun_normal(),
            (height, width, channels, self.num_features),
        )
        pooled = jnp.einsum("bhwc,hwcf->bcf", features, kernel)
        return pooled.reshape(features.shape[0], -1)


class EncoderHead(nn.Module):
    """Feature map ``[B, h, w, c]`` -> ``[B, bottleneck_dim]`` in (-1, 1): pool, Dense, LayerNorm,
    tanh. The tanh bounds the features so that the critics see the same scale whatever the trunk.
    """

    pooling: str = "spatial_learned"
    """One of ``POOLINGS``."""
    num_spatial_features: int = 8
    """Learned weightings per channel for ``"spatial_learned"``."""
    bottleneck_dim: int = 256
    dropout: float = 0.0
    """Dropout on the pooled features, only with ``train=True`` (needs a "dropout" rng)."""

    @nn.compact
    def __call__(self, features: jax.Array, *, train: bool = False) -> jax.Array:
        if self.pooling == "spatial_learned":
            x = SpatialLearnedEmbeddings(self.num_spatial_features, name="spatial")(features)
        elif self.pooling == "flatten":
            x = features.reshape(features.shape[0], -1)
        elif self.pooling == "avg":
            x = features.mean(axis=(1, 2))
        else:
            raise ValueError(f"unknown pooling {self.pooling!r}; known: {', '.join(POOLINGS)}")
        if self.dropout > 0.0:
            x = nn.Dropout(self.dropout, deterministic=not train)(x)
        x = nn.Dense(self.bottleneck_dim, kernel_init=nn.initializers.xavier_uniform())(x)
        x = nn.LayerNorm()(x)
        return jnp.tanh(x)
