"""Runs a stack's processes (``robot_rl.stack.ProcessSpec``) and leaves none behind.

Every child runs in its own process group (so Ctrl-C on the terminal reaches only the
supervisor, which then stops the children in order) with its output in ``<log_dir>/<name>.log``.
A child marked ``respawn`` is started again after ``respawn_delay`` when it dies, as
launch_ros's ``respawn=True`` does; any other exit is reported to the caller. ``stop`` sends
SIGINT to every group (each node's own clean shutdown: the learner checkpoints, drivers stop
safely), waits up to ``grace`` seconds, then SIGKILLs the groups that remain.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
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
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "250", **(env or {})}
        self.respawn_delay = respawn_delay
        self.children: dict[str, Child] = {}
        self.stopping = False

    def start(self, spec) -> Child:
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
        (self.log_dir / "processes.json").write_text(json.dumps(pids, indent=2))

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
