"""Processes as tests and benchmarks start, watch and stop them (robot-rl commands, ROS 2 nodes,
a simulated cell's parts, franky-sim): each child in a process group of its own, its output in a
file, its environment this run's (ROS 2 discovery on this host, the run's ``ROS_DOMAIN_ID``, which
must be set, this venv's executables first); waits that are bounded and say what they waited
for; and a stop that interrupts (SIGINT), then kills the whole group after a grace period, so
nothing is left behind.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
"""This venv's executables: console scripts and ``ros2``."""
ROBOT_RL = [sys.executable, "-m", "robot_rl.cli"]
"""``robot-rl`` as this Python runs it."""


def prepend_path(first, existing: str | None) -> str:
    """``first`` ahead of the entries of a PATH-like ``existing`` (None or empty: alone)."""
    return os.pathsep.join([str(first), *[p for p in (existing or "").split(os.pathsep) if p]])


def process_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a child: ROS 2 discovery limited to this host in this
    run's domain (tests/conftest.py or scripts/setup.sh chose it), unbuffered wide output, this
    venv first on PATH."""
    return {
        **os.environ,
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "ROS_DOMAIN_ID": os.environ["ROS_DOMAIN_ID"],
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "250",
        "PATH": prepend_path(BIN, os.environ.get("PATH")),
        **(extra or {}),
    }


def wait_for(
    condition, timeout: float = 10.0, what: str = "condition", interval: float = 0.02, proc=None
):
    """Poll ``condition`` until it returns something true (returned) or ``timeout`` seconds
    pass; with ``proc``, a process that exits meanwhile fails the wait with its output."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if proc is not None and not proc.alive():
            raise AssertionError(f"{what}: process exited ({proc.returncode}):\n{proc.tail()}")
        time.sleep(interval)
    more = f":\n{proc.tail()}" if proc is not None else ""
    raise AssertionError(f"timed out after {timeout} s waiting for {what}{more}")


def node_command(module: str, namespace: str | None = None, **params) -> list[str]:
    """``python -m MODULE --ros-args`` with a namespace and ``-p name:=value`` parameters."""
    args = [sys.executable, "-m", module, "--ros-args"]
    if namespace is not None:
        args += ["-r", f"__ns:={namespace}"]
    for name, value in params.items():
        args += ["-p", f"{name}:={value}"]
    return args


class Proc:
    """One child in a process group of its own, its output (stdout and stderr) in ``log``.

    With ``pipes`` the child talks a line protocol: stdin and stdout are pipes to this
    process and only stderr goes to the log. With ``terminal`` (a pseudo-terminal's file
    descriptor) that terminal is its stdin and stdout, and only stderr goes to the log.
    """

    def __init__(
        self,
        command: list[str],
        log: Path,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        pipes: bool = False,
        terminal: int | None = None,
    ):
        self.log = Path(log)
        self._file = open(self.log, "a")  # noqa: SIM115 (closed in stop)
        if terminal is not None:
            stdin = stdout = terminal
        elif pipes:
            stdin = stdout = subprocess.PIPE
        else:
            stdin, stdout = subprocess.DEVNULL, self._file
        self.popen = subprocess.Popen(
            command,
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.STDOUT if stdout is self._file else self._file,
            text=pipes,
            env=process_env(env),
            cwd=cwd,
            start_new_session=True,
        )
        self.pid = self.popen.pid
        self._finished: int | None = None

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    def alive(self) -> bool:
        return self.popen.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

    def last_int(self, pattern: str) -> int:
        """The last integer captured by ``pattern`` in the output (-1 if none yet)."""
        found = re.findall(pattern, self.output())
        return int(found[-1]) if found else -1

    def wait_for(self, condition, timeout: float, what: str, interval: float = 0.1):
        """``condition`` within ``timeout`` seconds; this process exiting first fails."""
        return wait_for(condition, timeout, what, interval, proc=self)

    def wait_for_text(self, text: str, timeout: float):
        """Until ``text`` appears in the output."""
        return self.wait_for(lambda: text in self.output(), timeout, repr(text))

    def wait_exit(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired as err:
            raise AssertionError(f"process did not exit in {timeout} s:\n{self.tail()}") from err

    def send(self, sig: int, group: bool = True) -> None:
        """``sig`` to the whole process group (as a terminal's Ctrl-C) or to the child alone."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                if group:
                    os.killpg(self.pid, sig)
                else:
                    self.popen.send_signal(sig)

    def interrupt(self, timeout: float = 120, group: bool = True) -> int:
        """SIGINT, then its exit code; not exiting within ``timeout`` fails."""
        self.send(signal.SIGINT, group)
        return self.wait_exit(timeout)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """``sig`` to the group, waiting (10 s at most) for the child to go."""
        if self.alive():
            self.send(sig)
            self.popen.wait(10)

    def stop(self, grace: float = 20.0, group: bool = True) -> int:
        """SIGINT (unless it has already exited), SIGKILL to the group after ``grace``
        seconds; the exit code. Whatever is left in the group goes too."""
        self.send(signal.SIGINT, group)
        return self.finish(grace)

    def finish(self, grace: float = 20.0) -> int:
        """Wait ``grace`` seconds for an exit already asked for, then kill the group."""
        if self._finished is not None:
            return self._finished
        try:
            code = self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            code = self.popen.wait(10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)  # a grandchild that outlived its parent
        for stream in (self.popen.stdin, self.popen.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._file.close()
        self._finished = code
        return code


class Processes:
    """Every process a test starts, logging into ``directory``; ``close`` stops them all
    (SIGINT to each, then SIGKILL to what outlives the grace period)."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.started: dict[str, Proc] = {}
        """Every process started, by name (``NAME-N`` for the Nth start of a name used again)."""
        self._newest: dict[str, Proc] = {}

    def command(self, name: str, command: list[str], **kwargs) -> Proc:
        """``command`` as ``name``; a name used again (a restart) gets a log of its own."""
        label = name if name not in self._newest else f"{name}-{len(self.started)}"
        proc = Proc(command, self.directory / f"{name}-{len(self.started)}.log", **kwargs)
        self.started[label] = self._newest[name] = proc
        return proc

    def start(self, name: str, *args: str, **kwargs) -> Proc:
        """``robot-rl ARGS`` as ``name``."""
        return self.command(name, [*ROBOT_RL, *args], **kwargs)

    def __getitem__(self, name: str) -> Proc:
        """The newest process started as ``name``."""
        return self._newest[name]

    def close(self, grace: float = 20.0) -> dict[str, int]:
        """Every exit code, by name."""
        for proc in self.started.values():
            proc.send(signal.SIGINT)
        return {name: proc.finish(grace) for name, proc in self.started.items()}


class CellProcesses(Processes):
    """The nodes of a hardware file as processes (their executables from this venv), or the
    ``only`` ones named."""

    def __init__(self, hardware_file: Path, logs: Path, only: tuple[str, ...] | None = None):
        from robot_rl.hardware import load_hardware
        from robot_rl.stack import driver_processes

        super().__init__(logs)
        self.hardware = load_hardware(hardware_file)
        for spec in driver_processes(self.hardware):
            if only is None or spec.name in only:
                self.command(spec.name, spec.command())

    def output(self, name: str) -> str:
        return self[name].output()

    def alive(self, name: str) -> bool:
        return self[name].alive()

    def stop(self) -> dict[str, int]:
        return self.close()
