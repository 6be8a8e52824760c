"""Runs a stack's processes (``robot_rl.stack.ProcessSpec``) and leaves none behind.

Each child runs in its own process group with its output in ``<log_dir>/<name>.log``, SIGINT at
its default action and, on Linux, SIGINT when its parent dies (``PR_SET_PDEATHSIG``). A child
marked ``respawn`` is started again after ``respawn_delay``; any other exit is reported to the
caller. ``stop`` sends SIGINT to every group (each node's clean shutdown), waits up to ``grace``
seconds, then SIGKILLs the groups that remain.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Child:
    spec: object
    popen: subprocess.Popen
    log: Path
    starts: int = 1
    respawn_at: float | None = None
    reported: bool = False

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None


class Supervisor:
    def __init__(self, log_dir: str | Path, env: dict | None = None, respawn_delay: float = 2.0):
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # a child that crashes (SIGSEGV, SIGABRT) leaves its Python stacks in its log
        self.env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "COLUMNS": "250",
            "PYTHONFAULTHANDLER": "1",
            **(env or {}),
        }
        self.respawn_delay = respawn_delay
        self.children: dict[str, Child] = {}
        self.stopping = False

    def start(self, spec, niceness: int = 0) -> Child:
        """Start ``spec``; ``niceness`` > 0 lowers its CPU priority (a learner beside the
        robot's own processes on one machine: the control loop must not wait for it)."""
        if spec.name in self.children and self.children[spec.name].alive:
            raise RuntimeError(f"{spec.name} is already running")
        log = self.log_dir / f"{spec.name}.log"
        with open(log, "ab") as out:
            popen = subprocess.Popen(
                spec.command(),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
                preexec_fn=_child_setup(os.getpid(), niceness),
            )
        previous = self.children.get(spec.name)
        child = Child(spec, popen, log, starts=previous.starts + 1 if previous else 1)
        self.children[spec.name] = child
        self.write_pids()
        return child

    def poll(self) -> list[tuple[str, str, int | None]]:
        """Events since the last call: (name, 'exited' | 'respawned', exit code)."""
        events = []
        now = time.monotonic()
        for name, child in list(self.children.items()):
            if child.alive:
                continue
            if child.spec.respawn and not self.stopping:
                if child.respawn_at is None:
                    child.respawn_at = now + self.respawn_delay
                    events.append((name, "died", child.popen.returncode))
                elif now >= child.respawn_at:
                    self.start(child.spec)
                    events.append((name, "respawned", None))
            elif not child.reported:
                child.reported = True
                events.append((name, "exited", child.popen.returncode))
        return events

    def returncode(self, name: str) -> int | None:
        return self.children[name].popen.poll()

    def write_pids(self) -> None:
        pids = {name: child.popen.pid for name, child in self.children.items()}
        path = self.log_dir / "processes.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(pids, indent=2))
        os.replace(tmp, path)  # a reader (a test, a monitor) never sees a half-written file

    def stop(self, grace: float = 20.0, names: list[str] | None = None) -> dict[str, int]:
        """SIGINT, then SIGKILL after ``grace`` s; returns each child's exit code."""
        self.stopping = names is None
        chosen = [c for n, c in self.children.items() if names is None or n in names]
        for child in chosen:
            _signal_group(child.popen, signal.SIGINT)
        deadline = time.monotonic() + grace
        for child in chosen:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.popen.wait(max(0.0, deadline - time.monotonic()))
        for child in chosen:
            # the group too: a child that exited may have left its own children
            _signal_group(child.popen, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.popen.wait(10)
        return {c.spec.name: c.popen.returncode for c in chosen}


def _signal_group(popen: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(popen.pid, sig)


PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
"""Loaded here, not in the forked child (no dlopen between fork and exec)."""


def _child_setup(parent: int, niceness: int = 0):
    """What a child runs between fork and exec: SIGINT at its default action, its niceness,
    and SIGINT from the kernel when the supervisor dies. If the supervisor died before the
    request took effect the child is already an orphan, and exits at once."""

    def setup() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if niceness:
            os.nice(niceness)
        if _LIBC is None:
            return
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGINT)
        if os.getppid() != parent:
            os._exit(1)

    return setup
