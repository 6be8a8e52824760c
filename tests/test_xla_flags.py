"""The XLA flag that keeps the CPU learner's convolutions off YNNPACK's slow path (3.6x on the
pixel update, robot_rl/agents/__init__.py) follows the installed jaxlib (issue 28 point 6)."""

from __future__ import annotations

import mmap
import os
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLAG_NAME = b"xla_cpu_experimental_ynn_fusion_type"


def _jaxlib_knows_the_flag() -> bool:
    """Whether the installed jaxlib's XLA has the flag (its name is in the library)."""
    import jaxlib

    for library in Path(jaxlib.__file__).parent.rglob("*.so"):
        with open(library, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            if m.find(FLAG_NAME) != -1:
                return True
    return False


def test_the_flag_is_set_where_the_installed_jaxlib_has_the_slow_path():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    code = "import os, robot_rl.agents, jax; jax.devices(); print(os.environ.get('XLA_FLAGS', ''))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr  # XLA accepted the flags it was given
    from robot_rl.agents import CPU_XLA_FLAGS

    if _jaxlib_knows_the_flag():
        assert CPU_XLA_FLAGS in done.stdout, (
            f"jaxlib {version('jaxlib')} has YNNPACK fusions but robot_rl does not set "
            f"{CPU_XLA_FLAGS}: measure it and add the release to MEASURED_JAXLIB"
        )
    else:
        assert CPU_XLA_FLAGS not in done.stdout


def test_the_jaxlib_range_in_pyproject_stays_within_what_was_measured():
    from robot_rl.agents import MEASURED_JAXLIB

    text = (ROOT / "pyproject.toml").read_text()
    for package in ("jax", "jaxlib"):
        found = re.search(rf'"{package}>=[\d.]+,<(\d+)\.(\d+)"', text)
        assert found, f"{package} has no tested upper bound in pyproject.toml"
        cap = (int(found.group(1)), int(found.group(2)))
        newest = max(MEASURED_JAXLIB)
        assert cap <= (newest[0], newest[1] + 1), (
            f"{package}<{cap[0]}.{cap[1]} admits releases the XLA flag was not measured on"
        )


def test_a_caller_s_own_ynn_choice_is_kept():
    env = {**os.environ, "XLA_FLAGS": "--xla_cpu_experimental_ynn_fusion_type=default"}
    code = "import os, robot_rl.agents; print(os.environ['XLA_FLAGS'])"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    if done.returncode != 0:
        pytest.fail(done.stderr)
    assert done.stdout.strip() == "--xla_cpu_experimental_ynn_fusion_type=default"
