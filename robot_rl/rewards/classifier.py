"""The reward classifier: an image trunk and a small head giving P(success | image).

As in SERL/HIL-SERL, a pretrained trunk (the project's ResNet-10 with weights) stays frozen, so
a few hundred labelled frames train only the head: pooling, Dense + LayerNorm + tanh
(``EncoderHead``) and one logit. A random trunk (the small conv one, or ResNet-10 without
weights) is trained with the head by ``robot-rl train-reward``; fine-tunes while a run
relabels (robot_rl.rewards.relabel) train the head alone. A checkpoint is a directory with
``classifier.msgpack`` (Flax msgpack of trunk variables and head parameters) and
``config.json`` (the config plus training figures), written under a temporary name and renamed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from robot_rl.agents.encoders import POOLINGS, TRUNKS, EncoderHead, make_trunk

WEIGHTS_FILE = "classifier.msgpack"
CONFIG_FILE = "config.json"


@dataclass(frozen=True)
class ClassifierConfig:
    camera: str = "front"
    """The camera observation the classifier reads."""
    image_size: int = 64
    """Square image side in pixels it was trained on."""
    trunk: str = "conv"
    """Trunk: 'conv' (random weights, trained) or 'resnet10' (pretrained with --pretrained)."""
    pooling: str = "spatial_learned"
    """Head pooling: spatial_learned, flatten or avg."""
    hidden_dim: int = 64
    """Width of the head's bottleneck."""
    threshold: float = 0.5
    """Probability above which a frame counts as success (the wrapper's default)."""
    task_gate: bool = True
    """A frame counts only where the task's check on the robot's own sensors says success is
    possible there (``Task.success_possible``; the reward wrapper applies it)."""

    def validate(self) -> None:
        if self.trunk not in TRUNKS:
            raise ValueError(f"trunk must be one of {sorted(TRUNKS)}, got {self.trunk!r}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"threshold must be in (0, 1), got {self.threshold}")
        if self.hidden_dim < 1 or self.image_size < 8:
            raise ValueError("hidden_dim must be >= 1 and image_size >= 8")


class ClassifierHead(nn.Module):
    pooling: str
    hidden_dim: int

    @nn.compact
    def __call__(self, features: jax.Array) -> jax.Array:
        x = EncoderHead(self.pooling, bottleneck_dim=self.hidden_dim, name="encoder")(features)
        return nn.Dense(1, name="logit")(x)[..., 0]


class RewardClassifier:
    """Config, frozen trunk variables and head parameters; ``probability`` is jitted."""

    def __init__(self, config: ClassifierConfig, trunk_variables, head_params):
        config.validate()
        self.config = config
        self.trunk = make_trunk(config.trunk)
        self.head = ClassifierHead(config.pooling, config.hidden_dim)
        self.trunk_variables = trunk_variables
        self.head_params = head_params
        self._logits = jax.jit(self.logits_fn)

    @classmethod
    def create(cls, config: ClassifierConfig, seed: int = 0, trunk_variables=None):
        """A fresh head on a trunk: given (pretrained) variables, else random from ``seed``."""
        config.validate()
        trunk_key, head_key = jax.random.split(jax.random.PRNGKey(seed))
        dummy = jnp.zeros((1, config.image_size, config.image_size, 3), jnp.uint8)
        trunk = make_trunk(config.trunk)
        if trunk_variables is None:
            trunk_variables = trunk.init(trunk_key, dummy)
        features = trunk.apply(trunk_variables, dummy)
        head_params = ClassifierHead(config.pooling, config.hidden_dim).init(head_key, features)
        return cls(config, trunk_variables, head_params)

    def features(self, trunk_variables, images: jax.Array) -> jax.Array:
        # frozen: no gradient reaches the trunk, whatever the caller differentiates
        return jax.lax.stop_gradient(self.trunk.apply(trunk_variables, images))

    def logits_fn(self, trunk_variables, head_params, images: jax.Array) -> jax.Array:
        return self.head.apply(head_params, self.features(trunk_variables, images))

    def logits(self, images) -> np.ndarray:
        return np.asarray(self._logits(self.trunk_variables, self.head_params, images))

    def probability(self, images) -> np.ndarray:
        """P(success) for a batch [B, H, W, C] of uint8 images, or a float for one image."""
        images = np.asarray(images)
        if images.dtype != np.uint8:
            raise ValueError(f"images must be uint8, got {images.dtype}")
        single = images.ndim == 3
        batch = images[None] if single else images
        size = self.config.image_size
        if batch.ndim != 4 or batch.shape[1:3] != (size, size):
            raise ValueError(f"the classifier reads {size}x{size} images, got shape {images.shape}")
        probs = 1.0 / (1.0 + np.exp(-self.logits(batch).astype(np.float64)))
        return float(probs[0]) if single else probs

    def with_head(self, head_params) -> RewardClassifier:
        return RewardClassifier(self.config, self.trunk_variables, head_params)


def save_classifier(path: str | os.PathLike, classifier: RewardClassifier, metrics: dict) -> Path:
    """Write the checkpoint directory atomically (a temporary directory, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    state = {"trunk": classifier.trunk_variables, "head": classifier.head_params}
    config = {"config": dataclasses.asdict(classifier.config), "metrics": metrics}
    for name, data in (
        (WEIGHTS_FILE, serialization.msgpack_serialize(jax.device_get(state))),
        (CONFIG_FILE, json.dumps(config, indent=2).encode()),
    ):
        with open(tmp / name, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
    if path.exists():  # replace an older checkpoint of the same name
        old = path.with_name(f".{path.name}.old{os.getpid()}")
        os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old)
    else:
        os.replace(tmp, path)
    return path


def read_classifier_config(path: str | os.PathLike) -> tuple[ClassifierConfig, dict]:
    path = Path(path)
    config_path = path / CONFIG_FILE
    if not config_path.is_file():
        raise FileNotFoundError(
            f"no reward classifier at {path} (expected {CONFIG_FILE}; robot-rl train-reward)"
        )
    saved = json.loads(config_path.read_text())
    fields = {f.name for f in dataclasses.fields(ClassifierConfig)}
    unknown = set(saved["config"]) - fields
    if unknown:
        raise ValueError(f"{config_path}: unknown config fields {sorted(unknown)}")
    return ClassifierConfig(**saved["config"]), saved.get("metrics", {})


def load_classifier(path: str | os.PathLike) -> RewardClassifier:
    """The classifier saved at ``path``; shapes are checked against a fresh one of its config."""
    config, _ = read_classifier_config(path)
    template = RewardClassifier.create(config)
    raw = (Path(path) / WEIGHTS_FILE).read_bytes()
    target = {"trunk": template.trunk_variables, "head": template.head_params}
    try:
        state = serialization.from_bytes(target, raw)
    except (ValueError, KeyError) as err:
        raise ValueError(f"{path}: weights do not match its config.json ({err})") from err
    for (key, want), got in zip(
        jax.tree_util.tree_leaves_with_path(target), jax.tree_util.tree_leaves(state), strict=True
    ):
        if np.shape(want) != np.shape(got):
            raise ValueError(
                f"{path}: {jax.tree_util.keystr(key)} has shape {np.shape(got)}, "
                f"expected {np.shape(want)}"
            )
    return RewardClassifier(config, state["trunk"], state["head"])
