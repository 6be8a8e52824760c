"""ROS 2 message definitions (``ros2msg`` schema text) for MCAP files, from installed .msg files.

An MCAP file written with ROS 2 message encoding carries, per message type, the type's .msg text
followed by the text of every type it uses, each introduced by a line of ``=`` and
``MSG: pkg/Type`` (the layout ``ros2 bag record`` writes). The text comes from the message
packages' ``share/<pkg>/msg/<Type>.msg``: the ROS 2 wheels install them under the environment's
prefix, a sourced ROS 2 install lists its prefixes in ``AMENT_PREFIX_PATH``; the few types
without a wheel come from ``FALLBACK_DEFINITIONS``. Nothing here imports rclpy; the files are
needed to *write* recordings only (a reader takes the schema from the file).
"""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path

from robot_rl.errors import UserError

PRIMITIVE_TYPES = frozenset(
    {
        "bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16",
        "int32", "uint32", "int64", "uint64", "string", "wstring",
    }
)  # fmt: skip
SEPARATOR = "=" * 80
FALLBACK_DEFINITIONS = {
    ("tf2_msgs", "TFMessage"): "geometry_msgs/TransformStamped[] transforms\n",
}
"""The .msg text of types whose package has no PyPI wheel (tf2_msgs), as their ROS 2 package has
it; used only where no installed .msg file is found (an installed one wins)."""


class MessageDefinitionError(UserError, LookupError):
    """A message type's .msg file is not installed on this machine (one line: the ros extra)."""


def share_dirs() -> list[Path]:
    """Where message packages may live: ``AMENT_PREFIX_PATH`` entries, then this Python's prefix."""
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    prefixes += [sys.prefix, sys.base_prefix]
    seen, dirs = set(), []
    for prefix in prefixes:
        share = Path(prefix) / "share"
        if share.is_dir() and share not in seen:
            seen.add(share)
            dirs.append(share)
    return dirs


def _split_type(type_name: str) -> tuple[str, str]:
    """'sensor_msgs/msg/Image' or 'sensor_msgs/Image' -> ('sensor_msgs', 'Image')."""
    parts = type_name.split("/")
    if len(parts) == 3 and parts[1] == "msg":
        parts = [parts[0], parts[2]]
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"message type must look like 'pkg/msg/Type', got {type_name!r}")
    return parts[0], parts[1]


@functools.cache
def _msg_text(package: str, name: str) -> str:
    for share in share_dirs():
        path = share / package / "msg" / f"{name}.msg"
        if path.is_file():
            return path.read_text()
    if (package, name) in FALLBACK_DEFINITIONS:
        return FALLBACK_DEFINITIONS[package, name]
    raise MessageDefinitionError(
        f"no definition of {package}/msg/{name} (looked for {package}/msg/{name}.msg under "
        f"{', '.join(str(d) for d in share_dirs()) or 'no share directory'}); install the "
        f"ROS 2 message packages: pip install -e '.[ros]', or source a ROS 2 installation"
    )


def _field_types(package: str, text: str) -> list[tuple[str, str]]:
    """Non-primitive types (package, name) that a .msg text's fields use, in order."""
    found = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        base = re.sub(r"\[.*\]$", "", line.split()[0])  # drop array suffixes
        base = base.split("<=")[0]  # bounded strings
        if base in PRIMITIVE_TYPES:
            continue
        if base == "Header":  # the ROS 1 spelling, still accepted by the parsers
            found.append(("std_msgs", "Header"))
        elif "/" in base:
            found.append(_split_type(base))
        else:
            found.append((package, base))
    return found


@functools.cache
def message_definition(type_name: str) -> str:
    """The full ``ros2msg`` schema text of ``type_name`` with its dependencies, depth first."""
    package, name = _split_type(type_name)
    root = _msg_text(package, name)
    parts, done = [root], {(package, name)}
    pending = _field_types(package, root)
    while pending:
        dep = pending.pop(0)
        if dep in done:
            continue
        done.add(dep)
        text = _msg_text(*dep)
        parts.append(f"{SEPARATOR}\nMSG: {dep[0]}/{dep[1]}\n{text}")
        pending = _field_types(dep[0], text) + pending
    return "\n".join(part.rstrip("\n") for part in parts) + "\n"
