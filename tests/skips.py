"""Skips for a component that the README's setup cannot install everywhere (the ROS 2 launch
tooling, ...): the reason is one line that says how to get it, and CI turns the skip into a
failure so that it never skips such a test silently.

``needs(component, how)`` skips with "needs <component>: <how>". With ``ROBOT_RL_REQUIRE`` set to
a comma-separated list of components (or ``all``), as ``.ci/run`` sets it, a test that needs one
of them fails with the same line instead. ``CI`` alone changes nothing: a user's own CI that runs
``scripts/test.sh`` on a clone has no ``../shared`` either.
"""

from __future__ import annotations

import os

import pytest

REQUIRE = "ROBOT_RL_REQUIRE"


def required(component: str, environ=os.environ) -> bool:
    """Whether this run must have ``component`` (``ROBOT_RL_REQUIRE``)."""
    wanted = {part.strip() for part in environ.get(REQUIRE, "").split(",") if part.strip()}
    return component in wanted or "all" in wanted


def needs(component: str, how: str) -> None:
    """Skip the calling test (or fixture) for a missing ``component``; fail where it is required."""
    why = f"needs {component}: {how}"
    if required(component):
        pytest.fail(f"{why} ({REQUIRE}={os.environ[REQUIRE]} makes this a failure)", pytrace=False)
    pytest.skip(why)


def cpu_lacks_bf16_convolutions() -> bool:
    """oneDNN's bf16 convolutions need AVX512 (or AMX); the default f32 ones run anywhere."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(f.read().split())
    except OSError:
        return False  # not Linux: let the test say
    return not flags & {"avx512f", "amx_bf16"}


BF16_CONVOLUTIONS = pytest.mark.skipif(
    cpu_lacks_bf16_convolutions(),
    reason="bf16 convolutions need a CPU with AVX512 or AMX; this one has neither "
    "(--agent.encoder-dtype float32, the default, runs here)",
)
