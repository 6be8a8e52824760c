"""Whether a stack's driver nodes came up: each one ``active`` (a lifecycle node) or at least
in the graph (a plain node), else the node named with its own error line. Shared by
``robot-rl up robot`` and evaluation on the robot (``runtime/robot_evaluation.py``)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from rich.console import Console


class StackFailed(RuntimeError):
    """A process of the stack failed; the message names it and says why."""


def wait_until_active(supervisor, nodes, timeout: float, console: Console) -> None:
    """Until each driver node of the hardware file is ``active`` (a lifecycle node, asked
    through its ``get_state`` service) or at least up (a plain node, in the graph); a node
    whose process exits, or that is not there within ``timeout`` s, raises StackFailed naming
    the device and the node's own error line."""
    from robot_rl.ros.lifecycle_probe import LifecycleProbe

    probe = LifecycleProbe(f"robot_rl_probe_{os.getpid()}")  # unique: two commands may wait
    deadline = time.monotonic() + timeout
    try:
        pending = {f"{p.namespace.rstrip('/')}/{p.name}": p for p in nodes}
        states: dict[str, str | None] = dict.fromkeys(pending)
        first_seen: dict[str, float] = {}
        while pending:
            for fqn, spec in list(pending.items()):
                code = supervisor.returncode(spec.name)
                if code is not None:
                    raise StackFailed(
                        f"{_device(spec)} exited ({code}) before it was active: "
                        f"{node_error(supervisor.children[spec.name].log)}"
                    )
                if _plain(spec, probe, fqn, first_seen):
                    states[fqn] = "up"
                else:
                    states[fqn] = probe.state(fqn) or states[fqn]
                if states[fqn] in ("active", "up"):
                    console.print(f"{spec.name} {states[fqn]}")
                    del pending[fqn]
                elif states[fqn] is not None and logged_error(supervisor.children[spec.name].log):
                    # it answers, so its own start (autostart) is over, and it failed
                    raise StackFailed(
                        f"{_device(spec)} is {states[fqn]}, not active: "
                        f"{node_error(supervisor.children[spec.name].log)}"
                    )
            if pending and time.monotonic() > deadline:
                fqn, spec = next(iter(pending.items()))
                state = states[fqn] or "no answer from its get_state service"
                raise StackFailed(
                    f"{_device(spec)} is not active after {timeout:g} s "
                    f"({state}): {node_error(supervisor.children[spec.name].log)}"
                )
            time.sleep(0.5)
    finally:
        probe.close()


PLAIN_AFTER = 5.0
"""Seconds a node of an executable the registry does not know must be in the graph without a
``get_state`` service before it counts as a plain node: a lifecycle node is in the graph a
moment before its services are (and DDS may discover them later still)."""


def _plain(spec, probe, fqn: str, first_seen: dict[str, float]) -> bool:
    """Whether ``spec``'s node is a plain node that is up: the registry says which nodes are
    lifecycle nodes; for one it does not know, the graph says so (``PLAIN_AFTER``)."""
    from robot_rl.drivers.registry import by_executable

    device = by_executable(spec.executable) if spec.executable else None
    if device is not None and device.lifecycle:
        return False
    if not probe.visible(fqn):
        first_seen.pop(fqn, None)
        return False
    if device is not None:
        return True
    if probe.is_lifecycle(fqn):
        return False
    seen = first_seen.setdefault(fqn, time.monotonic())
    return time.monotonic() - seen >= PLAIN_AFTER


def _device(spec) -> str:
    return f"{spec.name} ({spec.executable or spec.module}, {spec.namespace})"


_ROS_LOG_PREFIX = re.compile(r"^\[(?:ERROR|FATAL)\] \[[\d.]+\] \[[^\]]*\]: ")


def _log_lines(log: Path) -> list[str]:
    if not log.is_file():
        return []
    return [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]


def logged_error(log: Path) -> str | None:
    """The first error line of a node's log: a ROS ``[ERROR]`` record or an ``error:`` line
    (a bad parameter), without its prefix; or the exception that ended the process."""
    lines = _log_lines(log)
    for line in lines:
        if _ROS_LOG_PREFIX.match(line):
            return _ROS_LOG_PREFIX.sub("", line)
        if line.startswith("error:"):
            return line[len("error:") :].strip()
    if "Traceback (most recent call last):" in lines:
        return next(
            (
                line
                for line in reversed(lines)
                if re.match(r"^\w[\w.]*(Error|Exception|Interrupt)\b", line)
            ),
            None,
        )
    return None


def node_error(log: Path) -> str:
    """The node's own account of what went wrong (``logged_error``), else its last line."""
    lines = _log_lines(log)
    return logged_error(log) or (lines[-1] if lines else "its log is empty")
