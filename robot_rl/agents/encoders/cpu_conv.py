"""A 2-D convolution with ``nn.Conv``'s parameters that steers clear of XLA CPU's slow paths.

- An input map smaller than the window (a 3x3 kernel on ResNet-10's last 2x2 map) is computed
  as patches times the kernel: one matrix product.
- The input gradient of a strided convolution is the sub-pixel form: for each of the stride's
  phases, an unstrided convolution of the output gradient with that phase's kernel taps (the
  same sums in another order), not a convolution over the zero-dilated gradient. The kernel's
  gradient stays XLA's own.

``Conv(onednn=True)`` on the CPU backend runs through oneDNN where its extension is available
(``onednn_conv``). Every other convolution is ``lax.conv_general_dilated``; off the CPU nothing
changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from robot_rl.agents.encoders import onednn_conv

_DIMENSIONS = ("NHWC", "HWIO", "NHWC")


def _conv(x: jax.Array, kernel: jax.Array, strides, pads) -> jax.Array:
    return jax.lax.conv_general_dilated(x, kernel, strides, pads, dimension_numbers=_DIMENSIONS)


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


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def strided_conv(x: jax.Array, kernel: jax.Array, strides: tuple[int, int]) -> jax.Array:
    """``lax.conv_general_dilated(x, kernel, strides, "VALID")`` (NHWC, HWIO) whose input
    gradient is computed in the sub-pixel form."""
    return _conv(x, kernel, strides, "VALID")


def _strided_conv_forward(x, kernel, strides):
    return _conv(x, kernel, strides, "VALID"), (x, kernel)


def _strided_conv_backward(strides, residuals, grad):
    x, kernel = residuals
    _, kernel_vjp = jax.vjp(lambda k: _conv(x, k, strides, "VALID"), kernel)
    return subpixel_input_grad(grad, kernel, x.shape, strides), kernel_vjp(grad)[0]


strided_conv.defvjp(_strided_conv_forward, _strided_conv_backward)


def subpixel_input_grad(grad: jax.Array, kernel: jax.Array, x_shape, strides) -> jax.Array:
    """The gradient of a VALID strided convolution with respect to its input ``[n, h, w, c]``,
    from the output gradient ``grad``: input row ``s * r + a`` receives only the kernel rows
    ``s * p + a`` (and likewise for columns), so each phase ``(a, b)`` of the input is a full,
    unstrided correlation of ``grad`` with those taps, flipped."""
    n, h, w, c = x_shape
    sh, sw = strides
    _, oh, ow, _ = grad.shape
    rows, cols = -(-h // sh), -(-w // sw)  # every phase padded to the first one's size
    phases = []
    for a in range(sh):
        for b in range(sw):
            taps = kernel[a::sh, b::sw]  # [kp, kq, c, o]
            kp, kq = taps.shape[:2]
            if kp == 0 or kq == 0:  # a kernel smaller than the stride: no gradient here
                phases.append(jnp.zeros((n, rows, cols, c), grad.dtype))
                continue
            flipped = jnp.flip(taps, (0, 1)).transpose(0, 1, 3, 2)  # [kp, kq, o, c]
            pads = ((kp - 1, rows - oh), (kq - 1, cols - ow))
            phases.append(_conv(grad, flipped, (1, 1), pads))
    # [a, b, n, r, q, c] -> [n, r, a, q, b, c] -> rows r * sh + a, columns q * sw + b
    dx = jnp.stack(phases).reshape(sh, sw, n, rows, cols, c).transpose(2, 3, 0, 4, 1, 5)
    return dx.reshape(n, rows * sh, cols * sw, c)[:, :h, :w, :]


class Conv(nn.Module):
    """``nn.Conv(features, kernel_size, strides, padding, use_bias, dtype)``: same parameters
    (``kernel``, HWIO, and ``bias``, kept in f32), same initialisation, same result. ``dtype``
    is the convolution's operands' (None: the input's); the result is f32 either way."""

    features: int
    kernel_size: Sequence[int]
    strides: Sequence[int] = (1, 1)
    padding: str | Sequence[tuple[int, int]] = "SAME"
    use_bias: bool = False
    kernel_init: nn.initializers.Initializer = nn.initializers.lecun_normal()
    dtype: Any = None
    onednn: bool = False
    """On the CPU backend, run the convolution through oneDNN where it is available. The conv
    trunks set it (their update: 286 against 345 ms per call in f32); the ResNets do not (a
    frozen ResNet-10's update: 970 against 731 ms with XLA's own convolutions)."""

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        kh, kw = self.kernel_size
        kernel = self.param("kernel", self.kernel_init, (kh, kw, x.shape[-1], self.features))
        strides = tuple(self.strides)
        pads = self.padding
        if isinstance(pads, str):
            pads = jax.lax.padtype_to_pads(x.shape[1:3], (kh, kw), strides, pads)
        pads = tuple(tuple(p) for p in pads)
        dtype = self.dtype or x.dtype
        x, kernel = x.astype(dtype), kernel.astype(dtype)
        if self.onednn and onednn_conv.in_use():
            y = onednn_conv.conv(x, kernel, strides, pads)
        elif x.shape[1] < kh or x.shape[2] < kw:
            y = conv_as_matmul(x, kernel, strides, pads)
        elif strides != (1, 1) and not any(pads[0] + pads[1]) and jax.default_backend() == "cpu":
            y = strided_conv(x, kernel, strides)
        else:
            y = _conv(x, kernel, strides, pads)
        # The bias and whatever follows run in f32: XLA's CPU elementwise work on bf16 made the
        # bf16 LeRobot-conv update slower (163 against 131 ms per call) than converting here.
        y = y.astype(jnp.float32)
        if self.use_bias:
            y = y + self.param("bias", nn.initializers.zeros_init(), (self.features,))
        return y
