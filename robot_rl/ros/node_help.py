"""``--help`` of a node executable: its ROS 2 parameters (name, default, description), printed
before anything opens a device, starts a simulator or initialises rclpy.

A node's parameters are its config dataclass's fields (``robot_rl.drivers.config.param``) or a
list of ``node_base.Param``; both are read as (name, default, description) here. Pure Python, so
it costs nothing to ask.
"""

from __future__ import annotations

import dataclasses
import sys
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path

HELP_FLAGS = ("-h", "--help")
ROS_ARGS_USAGE = "[--ros-args [-p NAME:=VALUE]... [--params-file FILE] [-r FROM:=TO]...]"


def help_asked(args: Sequence[str] | None) -> bool:
    """``-h``/``--help`` among the process's own arguments (before ``--ros-args``; ``args``
    None: ``sys.argv``)."""
    argv = list(sys.argv[1:] if args is None else args)
    own = argv[: argv.index("--ros-args")] if "--ros-args" in argv else argv
    return any(arg in HELP_FLAGS for arg in own)


def parameters_of(source) -> list[tuple[str, object, str]]:
    """(name, default, description) of each parameter: ``source`` is a config dataclass or an
    iterable of ``Param``-like objects (``name``, ``default``, ``description``)."""
    if dataclasses.is_dataclass(source):
        return [
            (f.name, f.default, f.metadata.get("description", ""))
            for f in dataclasses.fields(source)
        ]
    return [(p.name, p.default, p.description) for p in source]


def summary_of(module_name: str) -> str:
    """The first paragraph of a module's docstring, on one line."""
    doc = (sys.modules[module_name].__doc__ or "").strip()
    return " ".join(doc.split("\n\n", 1)[0].split())


def program_name() -> str:
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "node"
    return "python -m <module>" if name in ("__main__.py", "-c") or name.endswith(".py") else name


def help_text(
    summary: str,
    sections: Iterable[tuple[str, list[tuple[str, object, str]]]],
    prog: str | None = None,
) -> str:
    """The whole help: usage, summary, then each section's parameters."""
    lines = [f"usage: {prog or program_name()} [-h] {ROS_ARGS_USAGE}", ""]
    if summary:
        lines += [*textwrap.wrap(summary, 96), ""]
    for title, params in sections:
        lines.append(f"{title}:")
        for name, default, description in params:
            lines.append(f"  {name} ({type(default).__name__}, default {_shown(default)})")
            lines += textwrap.wrap(
                description, 92, initial_indent=" " * 6, subsequent_indent=" " * 6
            )
        lines.append("")
    lines += textwrap.wrap(
        "Set a parameter with --ros-args -p NAME:=VALUE, or in a hardware file's node "
        "'parameters:' (robot-rl up robot --hardware FILE).",
        96,
    )
    return "\n".join(lines)


def _shown(value: object) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return repr(value)
