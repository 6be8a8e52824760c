"""ResNet-10 trunk laid out like torchvision's ResNet, so that PyTorch weights load one to one.

ResNet-10 is the BasicBlock ResNet with one block per stage (HIL-SERL's frozen encoder).
Padding is explicit everywhere because Flax's ``"SAME"`` pads strided convolutions
asymmetrically, where PyTorch pads both sides equally.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from robot_rl.agents.encoders.cpu_conv import Conv

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

# (name, width, stride) of the four stages, named like torchvision's ``layerN.0``.
RESNET10_STAGES: tuple[tuple[str, int, int], ...] = (
    ("layer1_0", 64, 1),
    ("layer2_0", 128, 2),
    ("layer3_0", 256, 2),
    ("layer4_0", 512, 2),
)
STEM_WIDTH = 64


def _conv(features: int, size: int, stride: int, name: str) -> Conv:
    pad = size // 2
    return Conv(
        features,
        (size, size),
        strides=(stride, stride),
        padding=((pad, pad), (pad, pad)),
        name=name,
    )


def _batch_norm(name: str) -> nn.BatchNorm:
    # Always running statistics: the trunk is pretrained and frozen, and RL batches are far
    # from i.i.d., so batch statistics would make features depend on what else is in the batch.
    return nn.BatchNorm(use_running_average=True, momentum=0.9, epsilon=1e-5, name=name)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a residual; a 1x1 projection when the shape changes."""

    features: int
    stride: int = 1

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        residual = x
        y = _conv(self.features, 3, self.stride, "conv1")(x)
        y = nn.relu(_batch_norm("bn1")(y))
        y = _conv(self.features, 3, 1, "conv2")(y)
        y = _batch_norm("bn2")(y)
        if self.stride != 1 or x.shape[-1] != self.features:
            residual = _conv(self.features, 1, self.stride, "downsample_conv")(x)
            residual = _batch_norm("downsample_bn")(residual)
        return nn.relu(y + residual)


class ResNet10Trunk(nn.Module):
    """uint8 images ``[B, H, W, 3]`` to the last stage's map ``[B, H/32, W/32, 512]``.

    Variables: ``{"params": ..., "batch_stats": ...}`` with top-level modules ``conv1``,
    ``bn1`` and ``layer1_0`` .. ``layer4_0`` (each with ``conv1, bn1, conv2, bn2`` and, for
    stages 2-4, ``downsample_conv, downsample_bn``).
    """

    normalize_imagenet: bool = True
    """Apply ImageNet mean/std after scaling to [0, 1], as torchvision-pretrained weights expect."""

    @nn.compact
    def __call__(self, images: jax.Array) -> jax.Array:
        x = images.astype(jnp.float32) / 255.0
        if self.normalize_imagenet:
            x = (x - jnp.asarray(IMAGENET_MEAN)) / jnp.asarray(IMAGENET_STD)
        x = _conv(STEM_WIDTH, 7, 2, "conv1")(x)
        x = nn.relu(_batch_norm("bn1")(x))
        # Flax pads max_pool with -inf, as PyTorch does.
        x = nn.max_pool(x, (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))
        for name, width, stride in RESNET10_STAGES:
            x = BasicBlock(width, stride, name=name)(x)
        return x
