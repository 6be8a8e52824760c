"""The small DrQ/SERL conv trunk, trained from scratch together with the agent."""

from __future__ import annotations

import math
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from robot_rl.agents.encoders.cpu_conv import Conv


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
    kernel_sizes: tuple[int, ...] | None = None
    """Per-layer kernel sizes (as many as ``strides``); None uses ``kernel_size`` everywhere."""
    dtype: Any = jnp.float32
    """The convolutions' operand dtype: with bf16 each layer's input and kernel are rounded to
    bf16 and the convolution accumulates in f32 (through oneDNN on the CPU, on AMX or
    AVX512-BF16 units); parameters, biases, ReLUs and the trunk's output stay f32."""

    @nn.compact
    def __call__(self, images: jax.Array) -> jax.Array:
        # Centred on zero so that the ReLU of the first layer does not start half dead.
        kernels = self.kernel_sizes or (self.kernel_size,) * len(self.strides)
        if len(kernels) != len(self.strides):
            raise ValueError(f"kernel_sizes {kernels} and strides {self.strides} differ in length")
        side = min(images.shape[-3:-1])
        for kernel, stride in zip(kernels, self.strides, strict=True):
            side = (side - kernel) // stride + 1
        if side < 1:
            raise ValueError(
                f"images of {images.shape[-3]}x{images.shape[-2]} are too small for the conv trunk "
                f"(kernels {kernels}, strides {self.strides})"
            )
        x = images.astype(jnp.float32) / 255.0 - 0.5
        for i, (kernel, stride) in enumerate(zip(kernels, self.strides, strict=True)):
            x = Conv(
                self.num_filters,
                (kernel, kernel),
                strides=(stride, stride),
                padding="VALID",
                use_bias=True,
                kernel_init=nn.initializers.orthogonal(math.sqrt(2.0)),
                dtype=self.dtype,
                onednn=True,
                name=f"conv{i}",
            )(x)
            x = nn.relu(x)
        return x


class LeRobotConvTrunk(ConvTrunk):
    """LeRobot SAC's default image encoder shape: four 32-filter VALID layers with kernels
    7, 5, 3, 3, each of stride 2 (a 64x64 image gives a 2x2 map, a 128x128 one 6x6)."""

    kernel_sizes: tuple[int, ...] | None = (7, 5, 3, 3)
    strides: tuple[int, ...] = (2, 2, 2, 2)
