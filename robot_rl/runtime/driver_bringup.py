"""A hardware file's driver nodes, and nothing else, for as long as a ``with`` block runs::

    with drivers_up("hardware/fr3_sim.yaml", run_dir / "logs", console) as bringup:
        ...  # every node is active here; bringup.check() between steps notices a dead one

For ``up robot --drivers-only`` and ``eval``, ``record-demos``, ``record-labels`` with
``--hardware``. The processes are ``up robot``'s (``robot_rl.stack.driver_processes``) under the
stack's ``Supervisor``, each brought to ``active`` before the block runs. Leaving the block (an
exception, Ctrl-C, SIGTERM raised as ``KeyboardInterrupt``) stops them: SIGINT, then SIGKILL
after ``grace`` s. A driver that is not installed or does not come up is a ``UserError``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from robot_rl.errors import UserError


@dataclass
class DriverBringup:
    """The running drivers of one hardware file."""

    hardware: object
    """The parsed hardware file (``robot_rl.hardware.Hardware``)."""
    supervisor: object
    """The ``Supervisor`` that runs them (``children``: name -> process, logs)."""
    nodes: list
    """Their ``ProcessSpec``s, in start order."""
    console: object

    @property
    def names(self) -> list[str]:
        """Each node's fully qualified name (``/arm/franka_driver``)."""
        return [f"{p.namespace.rstrip('/')}/{p.name}" for p in self.nodes]

    def check(self) -> None:
        """Respawn what should come back (a camera) and say so; a driver that exited for
        good raises ``StackFailed`` naming it and its own error line."""
        from robot_rl.runtime.node_readiness import StackFailed, node_error

        for name, event, code in self.supervisor.poll():
            child = self.supervisor.children[name]
            if event == "died":
                self.console.print(f"[yellow]{name} died[/] ({code}); restarting it")
            elif event == "respawned":
                self.console.print(f"{name} restarted (start {child.starts})")
            else:
                raise StackFailed(f"{name} exited with {code}: {node_error(child.log)}")


@contextlib.contextmanager
def drivers_up(
    hardware_path: str | Path,
    log_dir: str | Path,
    console,
    ready_timeout: float = 120.0,
    grace: float = 20.0,
    ros_arguments: Sequence[str] = (),
) -> Iterator[DriverBringup]:
    """Start ``hardware_path``'s driver nodes, wait until each is active (at most
    ``ready_timeout`` s), print one line, yield a ``DriverBringup``; stop them on exit.
    ``ros_arguments`` (``-p name:=value``, ``--log-level debug`` ...) reach every node."""
    from robot_rl.hardware import load_hardware
    from robot_rl.runtime.node_readiness import StackFailed, wait_until_active
    from robot_rl.runtime.supervisor import Supervisor
    from robot_rl.stack import driver_processes

    hardware = load_hardware(hardware_path)
    missing = hardware.missing_executables()
    if missing:
        raise UserError(
            f"{hardware_path} names driver executables that are not installed: "
            f"{', '.join(sorted(set(missing)))}"
        )
    nodes = [
        dataclasses.replace(spec, extra_ros_arguments=tuple(ros_arguments))
        for spec in driver_processes(hardware)
    ]
    supervisor = Supervisor(log_dir)
    try:
        for spec in nodes:
            supervisor.start(spec)
        wait_until_active(supervisor, nodes, ready_timeout, console)
        bringup = DriverBringup(hardware, supervisor, nodes, console)
        console.print(
            f"[bold green]drivers active[/] ({hardware.name}, {len(nodes)} nodes): "
            f"{', '.join(bringup.names)}; logs {Path(log_dir)}"
        )
    except StackFailed as err:
        supervisor.stop(grace)
        raise UserError(f"the robot's drivers did not come up: {err}") from None
    except BaseException:
        supervisor.stop(grace)
        raise
    previous = _sigterm_as_ctrl_c()
    try:
        yield bringup
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        codes = supervisor.stop(grace)
        console.print("drivers stopped: " + ", ".join(f"{k} {v}" for k, v in codes.items()))


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


def _sigterm_as_ctrl_c():
    """SIGTERM stops the drivers as Ctrl-C does (from the main thread, where Python handles
    signals); returns the handler to restore, or None."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _interrupt)
