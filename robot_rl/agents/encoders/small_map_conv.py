"""A bias-free 2-D convolution with ``nn.Conv``'s parameters, safe on maps smaller than its kernel.

XLA's CPU backend rewrites a convolution whose input map is smaller than its window (a 3x3
kernel on ResNet-10's last 2x2 map, at 64x64 images) into one with the operands swapped, which
it then runs about 150x slower than the same arithmetic as a matrix product (1.9 s against
12 ms for 64 maps of 2x2x512, measured here): that one layer was 93% of the frozen ResNet-10's
forward. Such a convolution is computed here as patches times the kernel instead; every other
one stays ``lax.conv_general_dilated``.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


def conv_as_matmul(x: jax.Array, kernel: jax.Array, strides, pads) -> jax.Array:
    """NHWC ``x`` convolved with an HWIO ``kernel`` by gathering the patches (one slice per
    kernel tap) and one matrix product; the result of ``lax.conv_general_dilated``."""
    kh, kw, cin, cout = kernel.shape
    x = jnp.pad(x, ((0, 0), tuple(pads[0]), tuple(pads[1]), (0, 0)))
    n, h, w, _ = x.shape
    sh, sw = strides
    oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    taps = [
        jax.lax.slice(
            x, (0, i, j, 0), (n, i + sh * (oh - 1) + 1, j + sw * (ow - 1) + 1, cin), (1, sh, sw, 1)
        )
        for i in range(kh)
        for j in range(kw)
    ]
    patches = jnp.concatenate(taps, axis=-1)  # [n, oh, ow, kh * kw * cin], HWI order
    return jnp.dot(patches, kernel.reshape(kh * kw * cin, cout))


class Conv(nn.Module):
    """``nn.Conv(features, kernel_size, strides, padding, use_bias=False)``: same parameter
    (``kernel``, HWIO), same initialisation, same result."""

    features: int
    kernel_size: Sequence[int]
    strides: Sequence[int] = (1, 1)
    padding: str | Sequence[tuple[int, int]] = "SAME"
    kernel_init: nn.initializers.Initializer = nn.initializers.lecun_normal()

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        kh, kw = self.kernel_size
        kernel = self.param("kernel", self.kernel_init, (kh, kw, x.shape[-1], self.features))
        strides = tuple(self.strides)
        pads = self.padding
        if isinstance(pads, str):
            pads = jax.lax.padtype_to_pads(x.shape[1:3], (kh, kw), strides, pads)
        pads = tuple(tuple(p) for p in pads)
        if x.shape[1] < kh or x.shape[2] < kw:
            return conv_as_matmul(x, kernel, strides, pads)
        return jax.lax.conv_general_dilated(
            x, kernel, strides, pads, dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
