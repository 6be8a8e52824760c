"""The small DrQ/SERL conv trunk, trained from scratch together with the agent."""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp


class ConvTrunk(nn.Module):
    """uint8 images ``[B, H, W, C]`` to a float32 feature map ``[B, h, w, num_filters]``.

    DrQ's trunk is four 32-filter 3x3 VALID layers with strides (2, 1, 1, 1); here the second
    layer also strides by 2, which cuts the trunk's cost about fourfold (a 64x64 image gives an
    11x11 map instead of 25x25, a 128x128 one 27x27) for the CPU and small-GPU learners this
    stack runs on. ``strides=(2, 1, 1, 1)`` gives DrQ's exact trunk.
    """

    num_filters: int = 32
    kernel_size: int = 3
    strides: tuple[int, ...] = (2, 2, 1, 1)

    @nn.compact
    def __call__(self, images: jax.Array) -> jax.Array:
        # Centred on zero so that the ReLU of the first layer does not start half dead.
        side = min(images.shape[-3:-1])
        for stride in self.strides:
            side = (side - self.kernel_size) // stride + 1
        if side < 1:
            raise ValueError(
                f"images of {images.shape[-3]}x{images.shape[-2]} are too small for the conv trunk "
                f"(kernel {self.kernel_size}, strides {self.strides}); use at least 24 pixels"
            )
        x = images.astype(jnp.float32) / 255.0 - 0.5
        for i, stride in enumerate(self.strides):
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
