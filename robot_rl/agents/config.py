"""The one configuration dataclass of the SAC agent, with the named recipes users know."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

CONV_TRUNKS = ("conv", "lerobot_conv")
"""The trained conv trunks: ``encoder_dtype`` applies to them, and on the CPU their convolutions
run on oneDNN (``encoders/onednn_conv.py``)."""


@dataclass(frozen=True)
class AgentConfig:
    """SAC with the RLPD, SERL and HIL-SERL options. Every field is static under jit."""

    hidden_dims: tuple[int, ...] = (256, 256)
    """Hidden layer widths of the actor, the critics and the gripper critic."""
    actor_lr: float = 3e-4
    """Adam learning rate of the actor."""
    critic_lr: float = 3e-4
    """Adam learning rate of the critic ensemble and the image encoder it trains."""
    temperature_lr: float = 3e-4
    """Adam learning rate of the log-temperature."""
    discount: float = 0.99
    """Discount factor gamma."""
    tau: float = 0.005
    """Soft target update rate (Polyak)."""
    num_critics: int = 10
    """Size N of the critic ensemble."""
    critic_subsample: int | None = 2
    """Target minimum over a random subset of M critics (RLPD: 2 of 10); None takes all N."""
    critic_layer_norm: bool = True
    """LayerNorm after every hidden layer of the critics (RLPD)."""
    init_temperature: float = 1.0
    """Initial entropy temperature alpha."""
    target_entropy: float | None = None
    """Target policy entropy; None means -action_dim / 2 (RLPD's choice)."""
    backup_entropy: bool = True
    """Subtract alpha * log pi(a'|s') in the critic target (soft Bellman backup)."""
    critic_actor_ratio: int = 1
    """K critic updates per actor and temperature update (SERL's critic_actor_ratio)."""
    log_std_min: float = -20.0
    """Lower bound of the actor's log standard deviation."""
    log_std_max: float = 2.0
    """Upper bound of the actor's log standard deviation."""

    encoder: str = "conv"
    """Image trunk for camera observations: 'conv' (small DrQ net), 'resnet10' (torchvision
    layout) or 'serl_resnet10' (SERL / HIL-SERL's GroupNorm ResNet-10)."""
    encoder_frozen: bool = False
    """Freeze the trunk (pretrained): it gets no gradient and its features can be cached."""
    encoder_weights: str | None = None
    """Pretrained weights for the frozen trunk: a torch state dict (.pt/.pth, torchvision names,
    for 'resnet10') or a .safetensors file (`robot-rl convert-encoder` writes SERL's). Read
    when a run starts; checkpoints keep the trunk itself and record the file's SHA-256."""
    encoder_dtype: str = "float32"
    """Convolution operands of a trained conv trunk ('conv', 'lerobot_conv'): 'float32' or
    'bfloat16' (inputs and kernels rounded to bf16, f32 accumulation). Parameters, biases,
    ReLUs, gradients and optimiser state stay f32. On a CPU with AMX or AVX512-BF16 the bf16
    convolutions run on those units through oneDNN (``benchmarks/pixels_vs_torch.py``)."""
    pooling: str = "flatten"
    """Head pooling of the trunk's feature map: 'flatten', 'spatial_learned' or 'avg'."""
    num_spatial_features: int = 8
    """Learned spatial embeddings per channel (HIL-SERL uses 8) for pooling='spatial_learned'."""
    bottleneck_dim: int = 50
    """Per-camera feature size after the head (Dense + LayerNorm + tanh)."""
    drq_pad: int = 4
    """DrQ random-shift padding in pixels for camera observations; 0 disables augmentation."""

    gripper: bool = False
    """Hybrid action (HIL-SERL): the last action dimension is a discrete gripper command
    {-1 open, 0 stay, +1 close} learned by a separate double-DQN critic."""
    gripper_lr: float = 3e-4
    """Adam learning rate of the gripper critic."""
    gripper_penalty: float = 0.0
    """Reward penalty the gripper critic sees whenever its action is not 'stay'."""
    gripper_epsilon: float = 0.1
    """Epsilon-greedy exploration of the gripper command when sampling (not in evaluation)."""

    def replace(self, **changes) -> AgentConfig:
        return dataclasses.replace(self, **changes)

    def validate(self) -> None:
        if self.num_critics < 1:
            raise ValueError(f"num_critics must be >= 1, got {self.num_critics}")
        if self.critic_subsample is not None and not 1 <= self.critic_subsample <= self.num_critics:
            raise ValueError(
                f"critic_subsample must be in [1, num_critics={self.num_critics}], "
                f"got {self.critic_subsample}"
            )
        if self.critic_actor_ratio < 1:
            raise ValueError(f"critic_actor_ratio must be >= 1, got {self.critic_actor_ratio}")
        if not 0.0 < self.discount <= 1.0:
            raise ValueError(f"discount must be in (0, 1], got {self.discount}")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")
        if self.pooling not in ("flatten", "spatial_learned", "avg"):
            raise ValueError(
                f"pooling must be flatten, spatial_learned or avg, got {self.pooling!r}"
            )
        if self.encoder_dtype not in ("float32", "bfloat16"):
            raise ValueError(
                f"encoder_dtype must be float32 or bfloat16, got {self.encoder_dtype!r}"
            )
        if self.encoder_dtype != "float32" and (
            self.encoder_frozen or self.encoder not in CONV_TRUNKS
        ):
            raise ValueError(
                "encoder_dtype bfloat16 applies to a trained 'conv' or 'lerobot_conv' trunk, "
                f"not to {'a frozen ' if self.encoder_frozen else ''}{self.encoder!r}"
            )
        if self.drq_pad < 0:
            raise ValueError(f"drq_pad must be >= 0, got {self.drq_pad}")
        if self.encoder_weights and not self.encoder_frozen:
            raise ValueError(
                "--agent.encoder-weights loads a frozen trunk: add --agent.encoder-frozen"
            )


def rlpd_config(**overrides) -> AgentConfig:
    """RLPD (Ball et al. 2023): 10 LayerNorm critics, target min over a random 2."""
    return AgentConfig(num_critics=10, critic_subsample=2, critic_layer_norm=True).replace(
        **overrides
    )


ENSEMBLE_AGENT = rlpd_config(init_temperature=0.01)
"""RLPD's ensemble: 10 critics, the minimum of 2 drawn at random, SERL's initial temperature
0.01 (which suits rewards of about 1 per step). The default where updates and steps take turns
in one process (`robot-rl train`, `train-fb`): the best learner per update."""

TWO_CRITIC_AGENT = AgentConfig(
    num_critics=2, critic_subsample=2, init_temperature=0.01, critic_actor_ratio=2
)
"""RLPD's LayerNorm critics, 2 of them, and one actor update per environment step (at UTD 2,
every second critic update). The default where a learner must keep up with a robot's steps
(`robot-rl learner`, `up`, the launch files): the best learner per second. With the
update-to-data ratio held, a stack's wall time is the learner's: this runs 7.1x the updates/s
of ENSEMBLE_AGENT with an actor update every critic update (benchmarks/main_job_learner.py,
same load), and pick_cube reached 90% (last 20 episodes) at 2,200 steps and 100% over 50
evaluation episodes at 6,000."""
