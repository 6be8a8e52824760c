"""Pretrained image trunks for the RL agent: read ``--agent.encoder-weights`` into the frozen
trunk, and describe the trunk in checkpoint metadata.

Two file layouts are read, and nothing is ever unpickled:
- safetensors whose tensor names are the trunk's Flax variable paths joined by ``/``
  (``params/conv_init/kernel``): what ``robot-rl convert-encoder`` and ``save_trunk_weights``
  write, for any trunk in ``TRUNKS``;
- for ``resnet10``, a torchvision-named ResNet-10 state dict (.pt/.pth or safetensors), through
  ``encoders.torch_import`` (torch's ``weights_only`` loader).

Every tensor is checked against the trunk's own variables, and a file that does not fit is
refused naming the first tensor that differs. Only fresh runs read the file: ``--resume``,
``eval`` and the learner's checkpoints restore the trunk from the checkpoint itself.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import numpy as np
from flax.traverse_util import flatten_dict, unflatten_dict

from robot_rl.agents.config import AgentConfig
from robot_rl.errors import UserError

PROBE_IMAGE_SIDE = 64
"""Image side used to learn a trunk's variable shapes (they do not depend on it)."""


class EncoderWeightsError(UserError):
    """The file cannot be the configured trunk's weights; the message says why."""


def trunk_variable_shapes(trunk_name: str) -> dict[str, tuple[int, ...]]:
    """``{"params/conv_init/kernel": shape, ...}`` of a trunk in ``TRUNKS``."""
    import jax
    import jax.numpy as jnp

    from robot_rl.agents.encoders import make_trunk

    trunk = make_trunk(trunk_name)
    probe = jnp.zeros((1, PROBE_IMAGE_SIDE, PROBE_IMAGE_SIDE, 3), jnp.uint8)
    shapes = jax.eval_shape(trunk.init, jax.random.PRNGKey(0), probe)
    return {path: tuple(leaf.shape) for path, leaf in flatten_dict(shapes, sep="/").items()}


def check_trunk_tensors(flat: dict, trunk_name: str, where: str) -> None:
    """Refuse ``flat`` (path -> array) unless it holds exactly the trunk's variables."""
    expected = trunk_variable_shapes(trunk_name)
    problems = []
    for path, shape in expected.items():
        if path not in flat:
            problems.append(f"missing tensor {path!r} (shape {shape})")
        elif tuple(np.shape(flat[path])) != shape:
            problems.append(
                f"tensor {path!r} has shape {tuple(np.shape(flat[path]))}, "
                f"the trunk expects {shape}"
            )
    problems += [f"unexpected tensor {p!r}" for p in sorted(set(flat) - set(expected))]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise EncoderWeightsError(f"{where} is not a {trunk_name} trunk: {problems[0]}{more}")


def save_trunk_weights(
    path: str | os.PathLike, variables: dict, trunk_name: str, where: str = "these variables"
) -> Path:
    """Write trunk variables as safetensors with ``/``-joined names (checked first)."""
    from safetensors.numpy import save_file

    flat = {
        k: np.ascontiguousarray(np.asarray(v, np.float32))
        for k, v in flatten_dict(variables, sep="/").items()
    }
    check_trunk_tensors(flat, trunk_name, where)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(flat, str(path), metadata={"trunk": trunk_name, "format": "robot_rl-trunk"})
    return path


def load_trunk_weights(path: str | os.PathLike, trunk_name: str) -> dict:
    """The trunk's variables (``{"params": ...}`` and, for BatchNorm trunks,
    ``"batch_stats"``) from ``path``; raises EncoderWeightsError or FileNotFoundError."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--agent.encoder-weights: no file at {path}")
    suffix = path.suffix.lower()
    if suffix in (".pkl", ".pickle"):
        raise EncoderWeightsError(
            f"{path} is a pickle, which is never loaded here: convert it first with "
            f"robot-rl convert-encoder {path} {path.with_suffix('.safetensors')}"
        )
    flat = _read_safetensors(path) if suffix == ".safetensors" else None
    if flat is None or not any("/" in name for name in flat):
        if trunk_name != "resnet10":
            raise EncoderWeightsError(
                f"{path} is not a {trunk_name} trunk file (expected safetensors with names "
                "like params/<module>/kernel, as robot-rl convert-encoder writes)"
            )
        from robot_rl.agents.encoders.torch_import import load_resnet10_state_dict

        return load_resnet10_state_dict(flat if flat is not None else path)
    check_trunk_tensors(flat, trunk_name, str(path))
    return unflatten_dict({k: np.asarray(v, np.float32) for k, v in flat.items()}, sep="/")


def _read_safetensors(path: Path) -> dict:
    from safetensors.numpy import load_file

    try:
        return load_file(str(path))
    except Exception as error:  # safetensors raises its own types, with long messages
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise EncoderWeightsError(
            f"could not read {path} as safetensors ({type(error).__name__}: {first})"
        ) from error


@functools.lru_cache(maxsize=8)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_sha256(path: str | os.PathLike) -> str:
    stat = Path(path).stat()
    return _sha256(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


def encoder_metadata(config: AgentConfig) -> dict:
    """What checkpoints record about the image trunk (the trunk's variables are in the
    agent's state; the file's hash says where they came from)."""
    weights = config.encoder_weights
    return {
        "trunk": config.encoder,
        "frozen": config.encoder_frozen,
        "weights": weights,
        "weights_sha256": weights_sha256(weights) if weights and Path(weights).is_file() else None,
    }


def create_agent(
    seed,
    observation_space,
    action_space,
    config: AgentConfig,
    load_weights: bool = True,
    optimisers: bool = True,
):
    """``SACAgent.create`` with ``config.encoder_weights`` read into the frozen trunk (unless
    ``load_weights`` is False: a run about to restore a checkpoint, which holds the trunk)."""
    from robot_rl.agents.sac import SACAgent

    variables = None
    if config.encoder_weights and load_weights:
        from robot_rl.agents.spec import split_observation_keys

        if not split_observation_keys(observation_space)[0]:
            raise ValueError("--agent.encoder-weights: this run observes no camera (--cameras)")
        variables = load_trunk_weights(config.encoder_weights, config.encoder)
    return SACAgent.create(
        seed,
        observation_space,
        action_space,
        config,
        frozen_trunk_variables=variables,
        optimisers=optimisers,
    )
