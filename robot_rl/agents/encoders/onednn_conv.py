"""2-D convolutions on XLA's CPU backend run by oneDNN, the library PyTorch's CPU convolutions use.

For speed where XLA's own CPU convolutions (bf16 ones most) are slow. The forward pass, the input
gradient and the kernel gradient are three XLA FFI calls (``onednn_conv.cc``) inside the jitted
program: no host round trip, no copy. The extension is compiled on first use, once per source
and jaxlib version, with the C++ compiler on the PATH against the ``onednn-cpu-gomp`` wheel, into
``$ROBOT_RL_CACHE`` (default ``~/.cache/robot_rl``); where it cannot be built or loaded,
``available()`` says why and callers keep XLA's convolutions. Each call runs on the calling XLA
thread with half the CPUs' worth of OpenMP threads (``THREADS_ENV`` overrides), so that XLA can
run independent convolutions side by side.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from functools import cache, partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from robot_rl.agents import onednn_prerequisites as prerequisites

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("onednn_conv.cc")
TARGETS = ("RobotRlConvForward", "RobotRlConvBackwardData", "RobotRlConvBackwardWeights")
THREADS_ENV = "ROBOT_RL_ONEDNN_THREADS"
"""OpenMP threads per convolution call. The default is half the CPUs this process may use (1 on
the 2-core learner): XLA runs independent calls (the cameras, the online and target encoders)
side by side, and on 2 cores one thread per call ran the bf16 update 132 against 173 ms."""


_prefix = prerequisites.prefix


def _cache_dir() -> Path:
    root = os.environ.get("ROBOT_RL_CACHE") or Path.home() / ".cache" / "robot_rl"
    return Path(root) / "onednn_conv"


def _library_path() -> Path:
    from importlib.metadata import version

    key = hashlib.sha256(SOURCE.read_bytes())
    key.update(f"{version('jaxlib')} {_prefix()}".encode())
    return _cache_dir() / f"onednn_conv-{key.hexdigest()[:16]}.so"


def _build(target: Path) -> None:
    reason = prerequisites.missing()
    if reason is not None:
        raise RuntimeError(reason)
    compiler, prefix = prerequisites.compiler(), _prefix()
    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"robot_rl: compiling the oneDNN convolution extension into {target}", file=sys.stderr)
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".so", delete=False) as tmp:
        partial_path = Path(tmp.name)
    lib = prefix / "lib"
    command = [
        compiler, "-O2", "-std=c++17", "-shared", "-fPIC", "-w",
        f"-I{jax.ffi.include_dir()}", f"-I{prefix / 'include'}", str(SOURCE),
        f"-L{lib}", "-ldnnl", "-lgomp", f"-Wl,-rpath,{lib}", "-o", str(partial_path),
    ]  # fmt: skip
    try:
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"compiling {SOURCE.name} failed: {result.stderr.strip()[-500:]}")
        os.replace(partial_path, target)  # atomic: concurrent builders never load a partial file
    finally:
        partial_path.unlink(missing_ok=True)


@cache
def _load() -> str | None:
    """Builds (once) and registers the FFI targets; None when ready, else why not."""
    reason = prerequisites.missing(built=True)  # the rest is checked before a build
    if reason is not None:
        return reason
    try:
        path = _library_path()
        if not path.exists():
            _build(path)
        library = ctypes.cdll.LoadLibrary(str(path))
        for name in TARGETS:
            capsule = jax.ffi.pycapsule(getattr(library, name))
            jax.ffi.register_ffi_target(name, capsule, platform="cpu")
    except (OSError, RuntimeError, AttributeError) as error:
        log.warning("oneDNN convolutions unavailable, XLA's are used: %s", error)
        return str(error)
    return None


_xla_only = False


def available() -> bool:
    """True when convolutions on the CPU backend can run through oneDNN here (read when a
    function is traced)."""
    return not _xla_only and _load() is None


@contextmanager
def xla_convolutions():
    """Functions traced inside use XLA's convolutions: for XLA's cost analysis, which counts no
    FLOPs inside an FFI call (``benchmarks/learner.py``)."""
    global _xla_only
    previous, _xla_only = _xla_only, True
    try:
        yield
    finally:
        _xla_only = previous


def in_use() -> bool:
    """True when a convolution traced now runs through oneDNN: the CPU backend, and
    ``available()``."""
    return jax.default_backend() == "cpu" and available()


def unavailable_reason() -> str | None:
    return _load()


def _attributes(strides, pads) -> dict:
    (top, bottom), (left, right) = pads
    threads = int(os.environ.get(THREADS_ENV, 0)) or max(1, len(os.sched_getaffinity(0)) // 2)
    values = dict(sh=strides[0], sw=strides[1], pt=top, pb=bottom, pl=left, pr=right)
    values["threads"] = threads
    return {name: np.int64(value) for name, value in values.items()}


def _output_shape(x_shape, kernel_shape, strides, pads) -> tuple[int, int, int, int]:
    n, h, w, _ = x_shape
    kh, kw, _, o = kernel_shape
    (top, bottom), (left, right) = pads
    rows = (h + top + bottom - kh) // strides[0] + 1
    return n, rows, (w + left + right - kw) // strides[1] + 1, o


@partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def conv(x: jax.Array, kernel: jax.Array, strides: tuple, pads: tuple) -> jax.Array:
    """``lax.conv_general_dilated(x, kernel, strides, pads)`` with NHWC ``x`` and an HWIO
    ``kernel`` of the same dtype (f32 or bf16) by oneDNN; the result has ``x``'s dtype, the
    kernel's gradient is computed in f32. Needs ``available()``."""
    shape = jax.ShapeDtypeStruct(_output_shape(x.shape, kernel.shape, strides, pads), x.dtype)
    call = jax.ffi.ffi_call(TARGETS[0], shape, vmap_method="sequential")
    return call(x, kernel, **_attributes(strides, pads))


def _conv_forward(x, kernel, strides, pads):
    return conv(x, kernel, strides, pads), (x, kernel)


def _conv_backward(strides, pads, residuals, grad):
    x, kernel = residuals
    grad = grad.astype(x.dtype)
    attributes = _attributes(strides, pads)
    input_grad = jax.ffi.ffi_call(
        TARGETS[1], jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="sequential"
    )(grad, kernel, **attributes)
    kernel_grad = jax.ffi.ffi_call(
        TARGETS[2], jax.ShapeDtypeStruct(kernel.shape, jnp.float32), vmap_method="sequential"
    )(x, grad, **attributes)
    return input_grad, kernel_grad.astype(kernel.dtype)


conv.defvjp(_conv_forward, _conv_backward)


def main() -> int:
    """Build the extension if needed (setup.sh calls this) and say where it is; 1 when it
    cannot be had (the reason was logged)."""
    if not available():
        return 1
    print(f"oneDNN convolutions ready: {_library_path()}")
    return 0
