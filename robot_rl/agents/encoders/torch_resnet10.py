"""A PyTorch ResNet-10 with torchvision's module names: the reference model whose state dict the
weight importer (``torch_import``) reads, used by its tests and by the PyTorch SAC baseline
(``benchmarks/torch_sac_baseline.py``). Needs torch; nothing in the core library imports it.

Plain ``torch.nn`` because torchvision is not installed; the layout follows
``torchvision.models.resnet.ResNet(BasicBlock, [1, 1, 1, 1])`` without avgpool/fc in forward.
"""

from __future__ import annotations

import torch
from torch import nn

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class BasicBlock(nn.Module):
    def __init__(self, in_width: int, width: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_width, width, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(width, width, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.downsample = None
        if stride != 1 or in_width != width:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_width, width, 1, stride=stride, bias=False), nn.BatchNorm2d(width)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + residual)


class TorchResNet10(nn.Module):
    """uint8 NCHW images to the layer4 map (NCHW); ``fc`` exists only so the state dict has one."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = nn.Sequential(BasicBlock(64, 64, 1))
        self.layer2 = nn.Sequential(BasicBlock(64, 128, 2))
        self.layer3 = nn.Sequential(BasicBlock(128, 256, 2))
        self.layer4 = nn.Sequential(BasicBlock(256, 512, 2))
        self.fc = nn.Linear(512, num_classes)
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), persistent=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = (images.float() / 255.0 - self.mean) / self.std
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        return self.layer4(self.layer3(self.layer2(self.layer1(x))))


def randomize_batch_norms(model: nn.Module, generator: torch.Generator) -> None:
    """Give every BatchNorm non-trivial affine parameters and running statistics."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                width = module.num_features
                module.weight.copy_(torch.rand(width, generator=generator) + 0.5)
                module.bias.copy_(0.2 * torch.randn(width, generator=generator))
                module.running_mean.copy_(0.2 * torch.randn(width, generator=generator))
                module.running_var.copy_(torch.rand(width, generator=generator) * 1.5 + 0.5)
