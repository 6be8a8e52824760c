"""Read SERL / HIL-SERL's pickled ResNet-10 parameters without running pickled code.

SERL publishes its ImageNet ResNet-10 as ``resnet10_params.pkl``: a pickled tree of dicts
(``conv_init``, ``norm_init``, ``ResNetBlock_0`` ... each of ``kernel`` / ``scale`` / ``bias``)
holding numpy arrays. ``pickle.load`` would run whatever the file asks for, so this reads it
with ``SafeUnpickler``, whose ``find_class`` admits only numpy's array, dtype and scalar
reconstruction (and flax's FrozenDict, rebuilt as a plain dict); anything else is refused
before it is called, with one line naming it. Dicts, lists, tuples, strings and numbers are
built by pickle's own opcodes and need no class. The tree is then checked against
``SerlResNet10Trunk``'s variables and written as safetensors (``robot-rl convert-encoder``).
"""

from __future__ import annotations

import codecs
import importlib
import io
import os
import pickle
from pathlib import Path

import numpy as np

from robot_rl.errors import UserError


class UnsafePickleError(UserError):
    """The pickle asks for something other than plain data; nothing of it was run."""


def _numpy_function(name: str):
    # numpy 2 moved numpy.core to numpy._core; a file may name either
    for module in ("numpy._core." + name.split(".")[0], "numpy.core." + name.split(".")[0]):
        try:
            return getattr(importlib.import_module(module), name.split(".")[1])
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"numpy has no {name}")


def _frozen_dict(mapping=None, *args, **kwargs) -> dict:
    """flax's FrozenDict, rebuilt as the plain dict it wraps (no flax code runs)."""
    return dict(mapping or {})


def _allowed() -> dict[tuple[str, str], object]:
    reconstruct = _numpy_function("multiarray._reconstruct")
    scalar = _numpy_function("multiarray.scalar")
    frombuffer = _numpy_function("numeric._frombuffer")
    allowed = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("_codecs", "encode"): codecs.encode,  # protocol 2's bytes
        ("flax.core.frozen_dict", "FrozenDict"): _frozen_dict,
    }
    for package in ("numpy.core", "numpy._core"):
        allowed[(f"{package}.multiarray", "_reconstruct")] = reconstruct
        allowed[(f"{package}.multiarray", "scalar")] = scalar
        allowed[(f"{package}.numeric", "_frombuffer")] = frombuffer
    return allowed


class SafeUnpickler(pickle.Unpickler):
    """An Unpickler that builds plain containers and numpy arrays, and nothing else."""

    def __init__(self, file, *, where: str = "the pickle"):
        super().__init__(file)
        self._where = where
        self._allowed = _allowed()

    def find_class(self, module: str, name: str):
        try:
            return self._allowed[(module, name)]
        except KeyError:
            raise UnsafePickleError(
                f"{self._where} asks for {module}.{name}, which is not plain data (only dicts, "
                "lists and numpy arrays are read): refused, nothing in it was run"
            ) from None

    def persistent_load(self, pid):
        raise UnsafePickleError(f"{self._where} refers to external objects: refused")


def safe_load(source: str | os.PathLike | bytes) -> object:
    """Unpickle plain data only (``SafeUnpickler``); raises UnsafePickleError otherwise."""
    if isinstance(source, bytes):
        where, stream = "the pickle", io.BytesIO(source)
        return _load(SafeUnpickler(stream, where=where), where)
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"no file at {path}")
    with open(path, "rb") as f:
        return _load(SafeUnpickler(f, where=str(path)), str(path))


def _load(unpickler: SafeUnpickler, where: str) -> object:
    try:
        return unpickler.load()
    except UnsafePickleError:
        raise
    except Exception as error:  # truncated or not a pickle at all
        raise UnsafePickleError(
            f"{where} is not a readable pickle ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else ''})"
        ) from error


def parameter_tree(tree: object, where: str) -> dict:
    """The parameters as a nested dict of float32 arrays, with a lone top-level ``params``
    (a whole Flax variables dict) unwrapped; refuses any leaf that is not a numeric array."""
    if not isinstance(tree, dict):
        raise UnsafePickleError(f"{where} holds a {type(tree).__name__}, not a dict of parameters")
    if set(tree) == {"params"} and isinstance(tree["params"], dict):
        tree = tree["params"]

    def convert(node, path):
        if isinstance(node, dict):
            return {str(k): convert(v, f"{path}/{k}") for k, v in node.items()}
        array = np.asarray(node) if isinstance(node, (np.ndarray, np.generic)) else None
        if array is None or array.dtype.kind not in "fiu":
            raise UnsafePickleError(
                f"{where}: {path.lstrip('/')} is a {type(node).__name__}, not a numeric array"
            )
        return array.astype(np.float32)

    return convert(tree, "")


def convert_serl_pickle(
    src: str | os.PathLike, dst: str | os.PathLike, trunk: str = "serl_resnet10"
) -> tuple[Path, int]:
    """SERL's pickled parameters (``src``) to a safetensors trunk file (``dst``); returns the
    path and the number of parameters. Checked against ``trunk`` before anything is written."""
    from flax.traverse_util import flatten_dict

    from robot_rl.agents.pretrained import save_trunk_weights

    tree = parameter_tree(safe_load(src), str(src))
    variables = {"params": tree}
    path = save_trunk_weights(dst, variables, trunk, where=str(src))
    count = sum(int(np.size(v)) for v in flatten_dict(tree).values())
    return path, count
