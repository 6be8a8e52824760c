"""The small DrQ/SERL conv trunk, trained from scratch together with the agent."""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp


class ConvTrunk(nn.Module):
    """uint8 images ``[B, H, W, C]`` to a float32 feature map ``[B, h, w, num_filters]``.

    With the defaults a 64x64 image gives a 25x25 map and a 128x128 image a 57x57 map: the
    first layer halves the resolution, each later VALID 3x3 layer trims a one-pixel border.
    """

    num_filters: int = 32
    num_layers: int = 4
    kernel_size: int = 3
    first_stride: int = 2

    @nn.compact
    def __call__(self, images: jax.Array) -> jax.Array:
        # Centred on zero so that the ReLU of the first layer does not start half dead.
        x = images.astype(jnp.float32) / 255.0 - 0.5
        for i in range(self.num_layers):
            stride = self.first_stride if i == 0 else 1
            x = nn.Conv(
                self.num_filters,
                (self.kernel_size, self.kernel_size),
                strides=(stride, stride),
                padding="VALID",
                kernel_init=nn.initializers.orthogonal(math.sqrt(2.0)),
                name=f"conv{i}",
            )(x)
            x = nn.relu(x)
        return x
