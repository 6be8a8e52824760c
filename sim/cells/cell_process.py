"""What the simulated cells' processes share (``car_cell``, ``fr3_cell``): one console script
runs a cell's world or one of its parts, chosen by the ``part`` parameter; the world reports the
pace of its physics on ``/diagnostics`` and brings up the driver nodes it manages."""

from __future__ import annotations

import itertools
import sys

from diagnostic_msgs.msg import DiagnosticStatus

SLOW_FACTOR = 0.5
"""Below this real-time factor the world's status is a warning."""


def chosen_part(args: list[str] | None, parts: tuple[str, ...]) -> str:
    """The ``part`` parameter as given on the command line (``-p part:=camera``; ``args`` None:
    sys.argv): it decides which node class to build, before any node exists to read it. A part
    the cell does not have exits with status 2."""
    part = "world"
    for flag, value in itertools.pairwise(list(sys.argv if args is None else args)):
        if flag in ("-p", "--param") and value.startswith("part:="):
            part = value.split(":=", 1)[1].strip("'\"")
    if part not in parts:
        print(f"error: part must be one of {', '.join(parts)}, got {part!r}", file=sys.stderr)
        sys.exit(2)
    return part


def physics_status(world, factor: float) -> tuple[bytes, str]:
    """The world's diagnostic level and message at real-time ``factor``: stopped, slow, at pace."""
    if world.error is not None or not world.alive:
        return DiagnosticStatus.ERROR, f"physics stopped: {world.error}"
    if factor < SLOW_FACTOR:
        return DiagnosticStatus.WARN, f"physics at {factor:.2f}x real time"
    return DiagnosticStatus.OK, f"physics at {factor:.2f}x real time"


def bringup(node, manage: str):
    """A ``LifecycleBringup`` of ``node`` for the comma-separated node names ``manage``."""
    from robot_rl.sim.cells.bringup import LifecycleBringup

    return LifecycleBringup(node, [name.strip() for name in manage.split(",") if name.strip()])
