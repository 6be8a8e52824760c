"""Image encoders: a small conv net, ResNet-10 with learned spatial pooling, weight import."""

from __future__ import annotations

import flax.linen as nn

from robot_rl.agents.encoders.conv import ConvTrunk, LeRobotConvTrunk
from robot_rl.agents.encoders.pooling import POOLINGS, EncoderHead, SpatialLearnedEmbeddings
from robot_rl.agents.encoders.resnet import ResNet10Trunk
from robot_rl.agents.encoders.serl_resnet import SerlResNet10Trunk

# The weight importer lives in ``torch_import`` and is not imported here: it is only needed
# when a pretrained file is loaded, and it keeps torch out of ``import robot_rl``.

TRUNKS: dict[str, type[nn.Module]] = {
    "conv": ConvTrunk,
    "lerobot_conv": LeRobotConvTrunk,
    "resnet10": ResNet10Trunk,
    "serl_resnet10": SerlResNet10Trunk,
}
"""``--agent.encoder`` names: 'conv' the small DrQ-style trunk, 'lerobot_conv' LeRobot SAC's
default image encoder shape, 'resnet10' torchvision's ResNet-10 layout (BatchNorm),
'serl_resnet10' SERL / HIL-SERL's (GroupNorm; ``robot-rl convert-encoder`` reads their pickled
parameters)."""


def make_trunk(name: str, **kwargs) -> nn.Module:
    """The trunk registered as ``name``, built with ``kwargs`` as its fields."""
    try:
        trunk_class = TRUNKS[name]
    except KeyError:
        raise ValueError(f"unknown trunk {name!r}; known: {', '.join(sorted(TRUNKS))}") from None
    return trunk_class(**kwargs)


__all__ = [
    "POOLINGS",
    "TRUNKS",
    "ConvTrunk",
    "EncoderHead",
    "LeRobotConvTrunk",
    "ResNet10Trunk",
    "SerlResNet10Trunk",
    "SpatialLearnedEmbeddings",
    "make_trunk",
]
