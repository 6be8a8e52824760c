"""SERL / HIL-SERL's ResNet-10 (``resnetv1-10``): a GroupNorm ResNet, laid out like SERL's Flax
module so that the parameters SERL publishes load one to one.

The layout, read from SERL's ``serl_launcher/vision/resnet_v1.py``: ImageNet mean/std on
[0, 1] pixels; ``conv_init`` (7x7, stride 2, 64 filters, padding 3, no bias), ``norm_init``
(GroupNorm, 4 groups, epsilon 1e-5), ReLU, 3x3 max-pool with stride 2 and ``SAME`` padding;
then one basic block per stage, ``ResNetBlock_0`` .. ``ResNetBlock_3`` with 64, 128, 256, 512
filters (stride 2 from the second), each ``Conv_0``, ``MyGroupNorm_0``, ReLU, ``Conv_1``,
``MyGroupNorm_1`` and, where the shape changes, ``conv_proj`` (1x1) + ``norm_proj`` on the
residual. The block convolutions use Flax's default ``SAME`` padding (asymmetric when strided,
unlike torchvision's), which is why this is a trunk of its own and not ``ResNet10Trunk`` with
another norm. HIL-SERL uses the map before pooling (``pre_pooling``), frozen; our
``EncoderHead`` with ``pooling='spatial_learned'`` is its pooling head.
"""

from __future__ import annotations

from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp

from robot_rl.agents.encoders.cpu_conv import Conv
from robot_rl.agents.encoders.resnet import IMAGENET_MEAN, IMAGENET_STD

SERL_STAGE_WIDTHS = (64, 128, 256, 512)
SERL_GROUPS = 4


def _norm(name: str) -> nn.GroupNorm:
    return nn.GroupNorm(num_groups=SERL_GROUPS, epsilon=1e-5, name=name)


class SerlResNetBlock(nn.Module):
    filters: int
    stride: int = 1

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        conv = partial(Conv, kernel_init=nn.initializers.kaiming_normal())
        residual = x
        y = conv(self.filters, (3, 3), (self.stride, self.stride), name="Conv_0")(x)
        y = nn.relu(_norm("MyGroupNorm_0")(y))
        y = conv(self.filters, (3, 3), name="Conv_1")(y)
        y = _norm("MyGroupNorm_1")(y)
        if residual.shape != y.shape:
            residual = conv(self.filters, (1, 1), (self.stride, self.stride), name="conv_proj")(
                residual
            )
            residual = _norm("norm_proj")(residual)
        return nn.relu(residual + y)


class SerlResNet10Trunk(nn.Module):
    """uint8 images ``[B, H, W, 3]`` to ``[B, ceil(H/32), ceil(W/32), 512]`` (SERL feeds
    128x128: a 4x4 map). Variables: ``{"params": ...}`` only (GroupNorm keeps no statistics)."""

    @nn.compact
    def __call__(self, images: jax.Array) -> jax.Array:
        x = images.astype(jnp.float32) / 255.0
        x = (x - jnp.asarray(IMAGENET_MEAN)) / jnp.asarray(IMAGENET_STD)
        x = nn.Conv(
            64,
            (7, 7),
            (2, 2),
            padding=((3, 3), (3, 3)),
            use_bias=False,
            kernel_init=nn.initializers.kaiming_normal(),
            name="conv_init",
        )(x)
        x = nn.relu(_norm("norm_init")(x))
        x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
        for i, width in enumerate(SERL_STAGE_WIDTHS):
            x = SerlResNetBlock(width, 2 if i else 1, name=f"ResNetBlock_{i}")(x)
        return x
