"""A PyTorch SAC update of the same configuration as robot_rl's pixel agent (the baseline that
benchmarks/pixels_vs_torch.py times against ours).

The same computation as ``robot_rl.agents.sac`` per critic step: DrQ random shift of obs and
next_obs (edge padding), the online encoder on next_obs for the actor's next action, the target
encoder (Polyak copy of the online one) and target critics on next_obs, the online encoder and
critic ensemble on obs with gradient, Adam, Polyak; every ``critic_actor_ratio``-th step an actor
update on the updated critic's detached features and a temperature update. Image trunks are one
per camera, as ours; the critic ensemble is vectorised (stacked weights, one batched matmul per
layer), as ours. Trunks:

- ``lerobot_conv``: LeRobot SAC's ``DefaultImageEncoder`` shape (32 channels, kernels 7/5/3/3,
  stride 2 each, no padding), trained with the critic.
- ``resnet10``: torchvision's ResNet-10 layout (``TorchResNet10`` below), frozen, run on
  every sampled image (no cache) under ``inference_mode``, all cameras and obs/next_obs of a
  minibatch in one call, BatchNorm folded into the convolutions.
- ``none``: no cameras, the state alone (the state configuration).

``GroupNormResNet10`` is the frozen encoder that LeRobot's SAC loads (``helper2424/resnet10``,
HIL-SERL's ResNet-10 with GroupNorm), built here for the LeRobot peer of pixels_vs_torch.

Written for speed on a CPU the fair way: channels_last, fused Adam, ``torch.set_num_threads``,
no autograd where no gradient is needed, foreach Polyak.
"""

from __future__ import annotations

import copy
import itertools
import math
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

from robot_rl.agents.encoders.torch_resnet10 import TorchResNet10, randomize_batch_norms

LEROBOT_CONV = ((7, 2), (5, 2), (3, 2), (3, 2))
"""(kernel, stride) of LeRobot SAC's DefaultImageEncoder layers, 32 channels each, no padding."""


class ConvTrunk(nn.Module):
    def __init__(self, layers=LEROBOT_CONV, channels: int = 32, bf16: bool = False):
        super().__init__()
        self.bf16 = bf16
        convs, in_ch = [], 3
        for kernel, stride in layers:
            conv = nn.Conv2d(in_ch, channels, kernel, stride=stride)
            nn.init.orthogonal_(conv.weight, math.sqrt(2.0))
            nn.init.zeros_(conv.bias)
            convs += [conv, nn.ReLU()]
            in_ch = channels
        self.net = nn.Sequential(*convs)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        # ``images``: float [B, 3, H, W] in [0, 255] (after the shift), channels_last.
        # bf16: torch's own lever, autocast (the convolutions on oneDNN in bf16).
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            return self.net(images / 255.0 - 0.5).float()


class Head(nn.Module):
    """Learned spatial embeddings (8 per channel), Linear, LayerNorm, tanh."""

    def __init__(self, channels: int, height: int, width: int, features: int, out: int):
        super().__init__()
        self.kernel = nn.Parameter(torch.empty(channels, height * width, features))
        nn.init.kaiming_normal_(self.kernel, mode="fan_in", nonlinearity="linear")
        self.linear = nn.Linear(channels * features, out)
        self.norm = nn.LayerNorm(out)

    def forward(self, fmap: torch.Tensor) -> torch.Tensor:
        b, c, h, w = fmap.shape
        # [C, B, HW] @ [C, HW, F] -> [C, B, F]: one batched matmul.
        pooled = torch.bmm(fmap.reshape(b, c, h * w).transpose(0, 1), self.kernel)
        x = self.linear(pooled.transpose(0, 1).reshape(b, -1))
        return torch.tanh(self.norm(x))


class Encoder(nn.Module):
    """Per camera trunk (None: features arrive precomputed) -> head; state concatenated."""

    def __init__(self, cameras, trunk_factory, fmap_shape, pooled: int, bottleneck: int):
        super().__init__()
        self.cameras = tuple(cameras)
        self.trunks = nn.ModuleDict(
            {k: trunk_factory() for k in self.cameras} if trunk_factory else {}
        )
        c, h, w = fmap_shape
        self.heads = nn.ModuleDict({k: Head(c, h, w, pooled, bottleneck) for k in self.cameras})

    def forward(self, obs: dict) -> torch.Tensor:
        parts = []
        for k in self.cameras:
            x = obs[k]
            if k in self.trunks:
                x = self.trunks[k](x)
            parts.append(self.heads[k](x))
        parts.append(obs["state"])
        return torch.cat(parts, dim=-1)


class EnsembleLinear(nn.Module):
    def __init__(self, n: int, fan_in: int, fan_out: int):
        super().__init__()
        bound = math.sqrt(6.0 / (fan_in + fan_out))  # xavier_uniform, as ours
        self.weight = nn.Parameter(torch.empty(n, fan_in, fan_out).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.zeros(n, 1, fan_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: [B, in] shared by every member, or [N, B, in]
        if x.dim() == 2:
            x = x.unsqueeze(0).expand(self.weight.shape[0], -1, -1)
        return torch.baddbmm(self.bias, x, self.weight)


class CriticEnsemble(nn.Module):
    """N critics: (Linear, LayerNorm, ReLU) x len(hidden), Linear(1); output [N, B]."""

    def __init__(self, n: int, in_dim: int, hidden=(256, 256)):
        super().__init__()
        dims = (in_dim, *hidden)
        self.layers = nn.ModuleList(EnsembleLinear(n, a, b) for a, b in itertools.pairwise(dims))
        self.norm_w = nn.ParameterList(nn.Parameter(torch.ones(n, 1, d)) for d in hidden)
        self.norm_b = nn.ParameterList(nn.Parameter(torch.zeros(n, 1, d)) for d in hidden)
        self.out = EnsembleLinear(n, hidden[-1], 1)

    def forward(self, features: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        x = torch.cat([features, actions], dim=-1)
        for layer, w, b in zip(self.layers, self.norm_w, self.norm_b, strict=True):
            x = layer(x)
            x = F.layer_norm(x, x.shape[-1:]) * w + b
            x = F.relu(x)
        return self.out(x).squeeze(-1)


class Critic(nn.Module):
    def __init__(self, encoder: Encoder, ensemble: CriticEnsemble):
        super().__init__()
        self.encoder, self.ensemble = encoder, ensemble


class Actor(nn.Module):
    def __init__(self, in_dim: int, action_dim: int, hidden=(256, 256)):
        super().__init__()
        layers, d = [], in_dim
        for h in hidden:
            layers += [nn.Linear(d, h), nn.ReLU()]
            d = h
        self.mlp = nn.Sequential(*layers)
        self.mean = nn.Linear(d, action_dim)
        self.log_std = nn.Linear(d, action_dim)

    def sample(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterised tanh-Gaussian sample and its log-probability (the stable form)."""
        x = self.mlp(features)
        mean, log_std = self.mean(x), self.log_std(x).clamp(-20.0, 2.0)
        noise = torch.randn_like(mean)
        pre = mean + log_std.exp() * noise
        gauss = -0.5 * (noise**2 + 2 * log_std + math.log(2 * math.pi))
        log_det = 2.0 * (math.log(2.0) - pre - F.softplus(-2.0 * pre))
        return torch.tanh(pre), (gauss - log_det).sum(-1)


def random_shift(images: torch.Tensor, pad: int, generator: torch.Generator) -> torch.Tensor:
    """uint8 [B, H, W, C] -> float [B, C, H, W] (channels_last), each image shifted by up to
    ``pad`` pixels with its edges replicated: one row gather on the uint8 pixels, with clamped
    indices in place of the padding (the fastest of five ways measured here)."""
    b, h, w, c = images.shape
    if pad == 0:
        return images.permute(0, 3, 1, 2).float()
    off = torch.randint(0, 2 * pad + 1, (b, 2), generator=generator) - pad
    rows = (off[:, :1] + torch.arange(h)).clamp_(0, h - 1)
    cols = (off[:, 1:] + torch.arange(w)).clamp_(0, w - 1)
    flat = torch.arange(b)[:, None, None] * (h * w) + rows[:, :, None] * w + cols[:, None, :]
    out = images.reshape(b * h * w, c).index_select(0, flat.reshape(-1)).reshape(b, h, w, c)
    return out.permute(0, 3, 1, 2).float()  # NHWC memory: already channels_last


def fold_batch_norms(model: nn.Module) -> nn.Module:
    """Fold every ``conv -> BatchNorm2d`` pair of the frozen ResNet-10 into the convolution."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    model = copy.deepcopy(model).eval()

    def fold(parent, conv_name, bn_name):
        conv, bn = getattr(parent, conv_name), getattr(parent, bn_name)
        setattr(parent, conv_name, fuse_conv_bn_eval(conv, bn))
        setattr(parent, bn_name, nn.Identity())

    fold(model, "conv1", "bn1")
    for layer in (model.layer1, model.layer2, model.layer3, model.layer4):
        block = layer[0]
        fold(block, "conv1", "bn1")
        fold(block, "conv2", "bn2")
        if block.downsample is not None:
            block.downsample = nn.Sequential(fuse_conv_bn_eval(*block.downsample))
    return model


class FrozenResNet(nn.Module):
    """The frozen torchvision-layout ResNet-10 on float [B, 3, H, W] pixels in [0, 255]."""

    def __init__(self, fold: bool = True):
        super().__init__()
        model = TorchResNet10()
        randomize_batch_norms(model, torch.Generator().manual_seed(0))
        model = fold_batch_norms(model) if fold else model.eval()
        self.model = model.to(memory_format=torch.channels_last).requires_grad_(False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        m = self.model
        x = (images / 255.0 - m.mean) / m.std
        x = m.maxpool(m.relu(m.bn1(m.conv1(x))))
        return m.layer4(m.layer3(m.layer2(m.layer1(x))))


def _group_norm(channels: int) -> nn.GroupNorm:
    return nn.GroupNorm(4, channels, eps=1e-5)


class _GroupNormBlock(nn.Module):
    """Two 3x3 convolutions, each followed by GroupNorm(4); a strided 1x1 projection (with its
    GroupNorm) on the shortcut where the shape changes."""

    def __init__(self, in_width: int, width: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_width, width, 3, stride=stride, padding=1, bias=False)
        self.norm1 = _group_norm(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.norm2 = _group_norm(width)
        self.project = None
        if stride != 1 or in_width != width:
            self.project = nn.Sequential(
                nn.Conv2d(in_width, width, 1, stride=stride, bias=False), _group_norm(width)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.norm1(self.conv1(x)))
        y = self.norm2(self.conv2(y))
        return F.relu(y + (x if self.project is None else self.project(x)))


class GroupNormResNet10(nn.Module):
    """HIL-SERL's ResNet-10 as LeRobot's ``PretrainedImageEncoder`` loads it from the Hub
    (``helper2424/resnet10``): a 7x7 stride-2 convolution to 64 channels, GroupNorm(4), ReLU,
    3x3 stride-2 max-pool, then one basic block per stage of 64, 128, 256 and 512 channels
    (strides 1, 2, 2, 2). ``forward`` answers as a transformers model does, with the last
    feature map as ``last_hidden_state``; ``config.hidden_sizes`` names the stage widths."""

    def __init__(self, widths=(64, 128, 256, 512)):
        super().__init__()
        self.config = SimpleNamespace(hidden_sizes=list(widths))
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], 7, stride=2, padding=3, bias=False),
            _group_norm(widths[0]),
            nn.ReLU(),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        blocks, in_width = [], widths[0]
        for i, width in enumerate(widths):
            blocks.append(_GroupNormBlock(in_width, width, 1 if i == 0 else 2))
            in_width = width
        self.stages = nn.Sequential(*blocks)

    def forward(self, images: torch.Tensor) -> SimpleNamespace:
        return SimpleNamespace(last_hidden_state=self.stages(self.stem(images)))


class TorchSAC:
    """The update of robot_rl's SACAgent, in PyTorch (no gripper critic)."""

    def __init__(
        self,
        trunk: str,
        cameras=("cam0", "cam1"),
        image_size: int = 64,
        state_dim: int = 20,
        action_dim: int = 4,
        num_critics: int = 2,
        critic_actor_ratio: int = 4,
        drq_pad: int = 4,
        bottleneck: int = 256,
        pooled: int = 8,
        discount: float = 0.99,
        tau: float = 0.005,
        init_temperature: float = 1.0,
        seed: int = 0,
        fold_bn: bool = True,
        conv_bf16: bool = False,
    ):
        torch.manual_seed(seed)
        self.generator = torch.Generator().manual_seed(seed)
        self.cameras, self.drq_pad = tuple(cameras), drq_pad
        self.discount, self.tau, self.ratio = discount, tau, critic_actor_ratio
        self.target_entropy = -action_dim / 2
        probe = torch.zeros(1, 3, image_size, image_size)
        if trunk == "lerobot_conv":
            self.frozen = None

            def trunk_factory():
                return ConvTrunk(bf16=conv_bf16)

            fmap = ConvTrunk()(probe).shape[1:]
        elif trunk == "resnet10":
            self.frozen = FrozenResNet(fold=fold_bn)
            trunk_factory = None
            with torch.inference_mode():
                fmap = self.frozen(probe).shape[1:]
        elif trunk == "none":
            self.frozen, trunk_factory, fmap = None, None, (0, 0, 0)
            cameras = self.cameras = ()
        else:
            raise ValueError(trunk)
        encoder = Encoder(cameras, trunk_factory, tuple(fmap), pooled, bottleneck)
        feat_dim = len(cameras) * bottleneck + state_dim
        self.critic = Critic(encoder, CriticEnsemble(num_critics, feat_dim + action_dim))
        self.critic.to(memory_format=torch.channels_last)
        self.target = copy.deepcopy(self.critic).requires_grad_(False)
        self.actor = Actor(feat_dim, action_dim)
        self.log_temp = torch.tensor(math.log(init_temperature), requires_grad=True)
        self.critic_opt = _adam(self.critic.parameters())
        self.actor_opt = _adam(self.actor.parameters())
        self.temp_opt = _adam([self.log_temp])
        self.critic_params = list(self.critic.parameters())
        self.target_params = list(self.target.parameters())
        self.steps = 0

    def _prepare(self, obs: dict) -> dict:
        out = {"state": obs["state"]}
        for k in self.cameras:
            out[k] = random_shift(obs[k], self.drq_pad, self.generator)
        return out

    def _frozen_features(self, obs: dict, next_obs: dict) -> tuple[dict, dict]:
        """Every camera of obs and next_obs through the frozen trunk in one call."""
        keys = [(which, k) for which in (0, 1) for k in self.cameras]
        with torch.inference_mode():
            fmaps = self.frozen(torch.cat([(obs, next_obs)[w][k] for w, k in keys]))
        fmaps = fmaps.clone()  # an ordinary tensor, which autograd may save
        chunks = fmaps.chunk(len(keys))
        out = ({"state": obs["state"]}, {"state": next_obs["state"]})
        for (which, k), chunk in zip(keys, chunks, strict=True):
            out[which][k] = chunk
        return out

    def _minibatch(self, mb: dict) -> None:
        obs, next_obs = self._prepare(mb["observations"]), self._prepare(mb["next_observations"])
        if self.frozen is not None:
            obs, next_obs = self._frozen_features(obs, next_obs)
        actions, rewards, terminated = mb["actions"], mb["rewards"], mb["terminated"]
        temperature = self.log_temp.detach().exp()

        with torch.no_grad():
            next_actions, next_log_probs = self.actor.sample(self.critic.encoder(next_obs))
            next_q = self.target.ensemble(self.target.encoder(next_obs), next_actions).min(0)[0]
            target_q = rewards + self.discount * (1.0 - terminated) * (
                next_q - temperature * next_log_probs
            )
        qs = self.critic.ensemble(self.critic.encoder(obs), actions)
        loss = ((qs - target_q) ** 2).mean()
        self.critic_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.critic_opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(self.target_params, self.critic_params, self.tau)
        self.steps += 1

        if self.steps % self.ratio == 0:
            with torch.no_grad():
                features = self.critic.encoder(obs)
            self.critic.ensemble.requires_grad_(False)
            sampled, log_probs = self.actor.sample(features)
            q = self.critic.ensemble(features, sampled).mean(0)
            actor_loss = (temperature * log_probs - q).mean()
            self.actor_opt.zero_grad(set_to_none=True)
            actor_loss.backward()
            self.actor_opt.step()
            self.critic.ensemble.requires_grad_(True)
            entropy = -log_probs.detach().mean()
            temp_loss = self.log_temp.exp() * (entropy - self.target_entropy)
            self.temp_opt.zero_grad(set_to_none=True)
            temp_loss.backward()
            self.temp_opt.step()

    def update(self, batch: dict, utd_ratio: int) -> None:
        """``utd_ratio`` critic updates on consecutive slices of a torch batch."""
        n = batch["actions"].shape[0] // utd_ratio
        for i in range(utd_ratio):
            sl = slice(i * n, (i + 1) * n)
            self._minibatch(_slice(batch, sl))


def _slice(tree, sl):
    if isinstance(tree, dict):
        return {k: _slice(v, sl) for k, v in tree.items()}
    return tree[sl]


def _adam(params):
    try:
        return torch.optim.Adam(params, lr=3e-4, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.Adam(params, lr=3e-4, foreach=True)


def torch_batch(batch: dict) -> dict:
    """A numpy batch (``robot_rl.agents.random_batches.random_batch``) as torch tensors."""
    return {
        "observations": {k: torch.from_numpy(v) for k, v in batch["observations"].items()},
        "next_observations": {
            k: torch.from_numpy(v) for k, v in batch["next_observations"].items()
        },
        "actions": torch.from_numpy(batch["actions"]),
        "rewards": torch.from_numpy(batch["rewards"]),
        "terminated": torch.from_numpy(batch["terminated"]),
    }
