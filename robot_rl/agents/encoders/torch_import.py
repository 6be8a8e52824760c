"""Convert a PyTorch ResNet-10 ``state_dict`` (torchvision naming) into ``ResNet10Trunk`` variables.

torch is imported only when a ``.pt``/``.pth`` file is read; ``.safetensors`` files and
in-memory mappings of numpy arrays need no torch at all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from flax.traverse_util import unflatten_dict

from robot_rl.agents.encoders.resnet import RESNET10_STAGES, STEM_WIDTH
from robot_rl.errors import UserError

TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")
# Wrappers that commonly put the encoder under a name: DataParallel, agents, timm/lightning.
KNOWN_PREFIX_PARTS = ("module", "encoder", "backbone", "model")
# Checkpoints that hold the state dict next to optimizer state and counters.
NESTED_STATE_DICT_KEYS = ("state_dict", "model_state_dict", "model")


class WeightImportError(UserError):
    """The weights are not a ResNet-10 state dict this trunk can hold; the message says why."""


@dataclass(frozen=True)
class TensorSpec:
    """One tensor of the PyTorch state dict and where it goes in the Flax variables."""

    torch_name: str
    torch_shape: tuple[int, ...]
    collection: str  # "params" or "batch_stats"
    flax_path: tuple[str, ...]
    is_conv: bool  # OIHW in PyTorch, HWIO in Flax


def _conv_spec(torch_module: str, flax_path: tuple[str, ...], shape) -> TensorSpec:
    return TensorSpec(f"{torch_module}.weight", shape, "params", (*flax_path, "kernel"), True)


def _bn_specs(torch_module: str, flax_path: tuple[str, ...], width: int) -> list[TensorSpec]:
    pairs = (
        ("weight", "params", "scale"),
        ("bias", "params", "bias"),
        ("running_mean", "batch_stats", "mean"),
        ("running_var", "batch_stats", "var"),
    )
    return [
        TensorSpec(
            f"{torch_module}.{torch_leaf}", (width,), collection, (*flax_path, flax_leaf), False
        )
        for torch_leaf, collection, flax_leaf in pairs
    ]


def resnet10_tensor_specs() -> list[TensorSpec]:
    """Every tensor ResNet-10 needs, in torchvision's ``state_dict`` order."""
    specs = [_conv_spec("conv1", ("conv1",), (STEM_WIDTH, 3, 7, 7))]
    specs += _bn_specs("bn1", ("bn1",), STEM_WIDTH)
    in_width = STEM_WIDTH
    for flax_name, width, stride in RESNET10_STAGES:
        block = flax_name.replace("_", ".")  # layer2_0 -> layer2.0
        specs.append(_conv_spec(f"{block}.conv1", (flax_name, "conv1"), (width, in_width, 3, 3)))
        specs += _bn_specs(f"{block}.bn1", (flax_name, "bn1"), width)
        specs.append(_conv_spec(f"{block}.conv2", (flax_name, "conv2"), (width, width, 3, 3)))
        specs += _bn_specs(f"{block}.bn2", (flax_name, "bn2"), width)
        if stride != 1 or in_width != width:
            specs.append(
                _conv_spec(
                    f"{block}.downsample.0", (flax_name, "downsample_conv"), (width, in_width, 1, 1)
                )
            )
            specs += _bn_specs(f"{block}.downsample.1", (flax_name, "downsample_bn"), width)
        in_width = width
    return specs


def _first_line(error: Exception) -> str:
    # torch's messages run to pages and carry terminal colour codes.
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def _torch_load(path: Path) -> Any:
    try:
        import torch
    except ImportError as error:
        raise ImportError(
            f"reading {path.name} needs torch (pip install 'robot-rl[torch]'); "
            "or convert the file to .safetensors, which needs no torch"
        ) from error
    try:
        # weights_only: never unpickle arbitrary objects from a file someone handed us.
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:
        raise WeightImportError(
            f"could not read {path} with torch.load(weights_only=True) ({_first_line(error)}); "
            "a file holding a whole pickled model is refused, save model.state_dict() instead"
        ) from error


def _read_file(path: Path) -> Any:
    if not path.is_file():
        raise FileNotFoundError(f"no weight file at {path}")
    suffix = path.suffix.lower()
    if suffix == ".safetensors":
        from safetensors.numpy import load_file

        try:
            return load_file(path)
        except Exception as error:
            raise WeightImportError(
                f"could not read {path} as safetensors ({_first_line(error)})"
            ) from error
    if suffix in TORCH_SUFFIXES:
        return _torch_load(path)
    raise WeightImportError(
        f"unsupported weight file {path.name}: expected .safetensors or {', '.join(TORCH_SUFFIXES)}"
    )


def _as_state_dict(obj: Any, where: str) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        for key in NESTED_STATE_DICT_KEYS:
            if isinstance(obj.get(key), Mapping):
                obj = obj[key]
                break
    if not isinstance(obj, Mapping):
        raise WeightImportError(
            f"{where} does not hold a state dict (a mapping of tensor names to tensors) "
            f"but a {type(obj).__name__}"
        )
    for name, value in obj.items():
        if not isinstance(name, str) or not hasattr(value, "shape"):
            raise WeightImportError(
                f"{where} does not hold a state dict: entry {name!r} is of type "
                f"{type(value).__name__}, not a tensor"
            )
    return dict(obj)


def _is_known_prefix(prefix: str) -> bool:
    if prefix == "":
        return True
    return prefix.endswith(".") and all(p in KNOWN_PREFIX_PARTS for p in prefix[:-1].split("."))


def _detect_prefix(names: list[str], where: str) -> str:
    stem = "conv1.weight"
    prefixes = (n[: -len(stem)] for n in names if n.endswith(stem))
    candidates = sorted({p for p in prefixes if _is_known_prefix(p)})
    if "" in candidates or not candidates:
        return ""  # with no candidate, the check below reports conv1.weight as missing
    if len(candidates) > 1:
        raise WeightImportError(
            f"{where} holds several encoders ({', '.join(candidates)}); pass prefix= to choose"
        )
    return candidates[0]


def _select_encoder(state: dict[str, Any], prefix: str | None, where: str) -> tuple[dict, str]:
    """The encoder's tensors with ``prefix`` stripped, dropping the classifier and counters."""
    if prefix is None:
        prefix = _detect_prefix(list(state), where)
    elif prefix and not prefix.endswith("."):
        prefix += "."
    selected = {n[len(prefix) :]: v for n, v in state.items() if n.startswith(prefix)}
    if not selected:
        examples = ", ".join(list(state)[:3])
        raise WeightImportError(f"no tensor in {where} starts with {prefix!r} (found {examples})")
    selected = {
        n: v
        for n, v in selected.items()
        if not n.startswith("fc.") and not n.endswith("num_batches_tracked")
    }
    return selected, prefix


def _describe_problems(tensors: dict[str, Any], prefix: str) -> list[str]:
    """Every mismatch, missing and wrong-shaped tensors in ResNet order, then extras by name."""
    problems = []
    specs = resnet10_tensor_specs()
    for spec in specs:
        name = prefix + spec.torch_name
        if spec.torch_name not in tensors:
            problems.append(f"missing tensor {name!r} (expected shape {spec.torch_shape})")
            continue
        shape = tuple(tensors[spec.torch_name].shape)
        if shape != spec.torch_shape:
            problems.append(f"tensor {name!r} has shape {shape}, expected {spec.torch_shape}")
    expected = {spec.torch_name for spec in specs}
    for extra in sorted(set(tensors) - expected):
        problems.append(f"unexpected tensor {prefix + extra!r} (ResNet-10 has no such tensor)")
    return problems


def _hint(tensors: dict[str, Any], prefix: str) -> str:
    if any(name.startswith(f"layer{i}.1.") for name in tensors for i in range(1, 5)):
        return "; it looks like a deeper ResNet (ResNet-18 or more) than ResNet-10"
    if "conv1.weight" not in tensors and not prefix:
        return "; if the encoder is stored under a name, pass prefix= (e.g. 'agent.encoder.')"
    return ""


def _to_float32(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor; .float() also covers bfloat16
        value = value.detach().cpu().float().numpy()
    return np.asarray(value, dtype=np.float32)


def load_resnet10_state_dict(
    source: str | os.PathLike | Mapping[str, Any], *, prefix: str | None = None
) -> dict[str, dict]:
    """ResNet-10 weights as ``{"params": ..., "batch_stats": ...}`` for ``ResNet10Trunk``.

    ``source`` is a ``.safetensors`` or ``.pt``/``.pth`` file, or a mapping of names to
    tensors or arrays. ``prefix`` (e.g. ``"agent.encoder."``) selects the encoder inside a
    larger state dict; by default ``module.``, ``encoder.``, ``backbone.`` and ``model.``
    prefixes are found automatically. ``fc.*`` and ``num_batches_tracked`` are ignored.
    Raises ``WeightImportError`` naming the first tensor that does not fit.
    """
    if isinstance(source, Mapping):
        where, raw = "the given mapping", source
    else:
        path = Path(source)
        where, raw = str(path), _read_file(path)
    tensors, prefix = _select_encoder(_as_state_dict(raw, where), prefix, where)
    problems = _describe_problems(tensors, prefix)
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise WeightImportError(
            f"{where} is not a ResNet-10 state dict: {problems[0]}{more}{_hint(tensors, prefix)}"
        )
    flat = {}
    for spec in resnet10_tensor_specs():
        array = _to_float32(tensors[spec.torch_name])
        if spec.is_conv:
            array = np.ascontiguousarray(array.transpose(2, 3, 1, 0))  # OIHW -> HWIO
        flat[(spec.collection, *spec.flax_path)] = array
    return unflatten_dict(flat)
