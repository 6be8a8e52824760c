"""What the oneDNN convolution extension (``onednn_conv``) needs on this machine, checked without
JAX and without building anything: `robot-rl up` says on its recipe line, before any learner
starts, when the CPU pixel learner will run XLA's own convolutions instead (about half the
speed: ``onednn_conv``'s docstring), and what installs the rest.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

DISABLE_ENV = "ROBOT_RL_ONEDNN_CONV"
"""Set to 0 to keep XLA's own CPU convolutions."""
INSTALL = "pip install 'robot-rl[cpu-fast]' and a C++ compiler (g++)"
COST = "the pixel learner's convolutions run in XLA at about half the speed"


def prefix() -> Path:
    """Where pip put the ``onednn-cpu-gomp`` wheels' ``lib/`` and ``include/``: the venv."""
    return Path(sys.prefix)


def compiler() -> str | None:
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")


def missing(built: bool = False) -> str | None:
    """Why the extension cannot be used here (None: it can). ``built``: the compiled library
    is already in the cache, so the compiler and headers are not needed."""
    if os.environ.get(DISABLE_ENV, "1") == "0":
        return f"{DISABLE_ENV}=0"
    if not (sys.platform.startswith("linux") and os.uname().machine == "x86_64"):
        return "oneDNN convolutions are built for x86-64 Linux only"
    root = prefix()
    if not list((root / "lib").glob("libdnnl.so*")):
        return f"no libdnnl.so under {root}/lib (pip install onednn-cpu-gomp)"
    if built:
        return None
    if compiler() is None:
        return "no C++ compiler (g++) on the PATH"
    if not (root / "include" / "oneapi" / "dnnl" / "dnnl.hpp").exists():
        return f"no oneDNN headers under {root}/include (pip install onednn-devel-cpu-gomp)"
    return None


def cost_line(reason: str) -> str:
    """The one line a CPU pixel recipe prints when the extension is missing."""
    return f"oneDNN convolutions unavailable ({reason}): {COST}; {INSTALL} for the fast path"
