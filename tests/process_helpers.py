"""The one way tests start, watch and stop real processes (robot-rl commands, ROS 2 nodes,
``ros2 launch``, franky-sim): each child in a process group of its own, its output in a file,
its environment this run's (ROS 2 discovery on this host, the run's ``ROS_DOMAIN_ID``, this
venv's executables first); waits that are bounded but generous and say what they waited for;
and a stop that interrupts (SIGINT), then kills the whole group after a grace period, so
nothing is left behind.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from skips import needs

BIN = Path(sys.executable).parent
"""This venv's executables: console scripts and ``ros2``."""
ROBOT_RL = [sys.executable, "-m", "robot_rl.cli"]
"""``robot-rl`` as this Python runs it."""
PREFIX = Path(sys.prefix)
"""The ROS 2 prefix that scripts/setup.sh indexes robot_rl under: the venv."""

SMALL_AGENT = [
    "--agent.num-critics", "2", "--agent.hidden-dims", "32", "32", "--batch-size", "32",
]  # fmt: skip
"""Learner options for a tiny, quickly compiled agent in process tests."""
UP_ROBOT_TINY = [
    "--total-steps", "100000", "--start-steps", "20", "--batch-size", "16", "--utd-ratio", "1",
    "--agent.num-critics", "2", "--agent.hidden-dims", "32", "32", "--eval-episodes", "0",
    "--ready-timeout", "300", "--grace", "30", "--log-every", "2",
]  # fmt: skip
"""``up robot`` options for a simulated cell: a tiny agent that learns from the 20th step, no
evaluation, generous start-up and shutdown bounds."""


def _paths(first, existing: str | None) -> str:
    return os.pathsep.join([str(first), *[p for p in (existing or "").split(os.pathsep) if p]])


def process_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a child: ROS 2 discovery limited to this host in this
    run's domain (conftest.py chose it), unbuffered wide output, this venv first on PATH."""
    return {
        **os.environ,
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "ROS_DOMAIN_ID": os.environ["ROS_DOMAIN_ID"],
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "250",
        "PATH": _paths(BIN, os.environ.get("PATH")),
        **(extra or {}),
    }


def ros2_env(log_dir: Path) -> dict[str, str]:
    """What a shell that sourced scripts/setup.sh has, plus a log folder (launch_ros's
    composition_interfaces comes with robot_rl: ``provide_composition_interfaces``)."""
    env = process_env({"ROS_LOG_DIR": str(log_dir)})
    env["AMENT_PREFIX_PATH"] = _paths(PREFIX, env.get("AMENT_PREFIX_PATH"))
    return env


def require_launch() -> str:
    """The ``ros2`` executable beside this Python; skips when it is missing (fails where
    ``ROBOT_RL_REQUIRE`` names ``launch``, as in CI: tests/skips.py)."""
    ros2 = shutil.which("ros2", path=str(BIN))
    if ros2 is None or importlib.util.find_spec("launch_ros") is None:
        needs(
            "launch",
            "the ROS 2 launch tooling is not in this venv: source a ROS 2 installation, or put "
            "its wheels in ../shared/wheels/ros2-launch and run scripts/setup.sh (README: ROS 2)",
        )
    return ros2


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


def holds_within(condition, timeout: float, interval: float = 0.02) -> bool:
    """Whether ``condition`` holds within ``timeout`` seconds (for ``assert holds_within(...)``)."""
    try:
        wait_for(condition, timeout, "", interval)
    except AssertionError:
        return False
    return True


def run_cli(*args: str, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess[str]:
    """``robot-rl ARGS`` to completion, output captured, wide enough for one-line progress."""
    return subprocess.run(
        [*ROBOT_RL, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=process_env(),
        **kwargs,
    )


def node_command(module: str, namespace: str | None = None, **params) -> list[str]:
    """``python -m MODULE --ros-args`` with a namespace and ``-p name:=value`` parameters."""
    args = [sys.executable, "-m", module, "--ros-args"]
    if namespace is not None:
        args += ["-r", f"__ns:={namespace}"]
    for name, value in params.items():
        args += ["-p", f"{name}:={value}"]
    return args


def alive_pids(pids) -> list[int]:
    """Those of ``pids`` that are still running (a zombie has finished)."""
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if state != "Z":
            alive.append(pid)
    return alive


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


class UpStack:
    """``robot-rl up ARGS`` as a process, with every descendant it was ever seen to have (so
    that a Ctrl-C can be checked to leave none of them behind)."""

    def __init__(self, args: list[str], log: Path):
        self.proc = Proc([*ROBOT_RL, "up", *args], log)
        self.descendants: set[int] = set()
        self.stopped: tuple[int | None, list[int]] | None = None

    def output(self) -> str:
        return self.proc.output()

    def alive(self) -> bool:
        """True, noting the descendants; fails when up has exited."""
        import psutil

        assert self.proc.alive(), f"up exited ({self.proc.returncode}):\n{self.output()[-3000:]}"
        children = psutil.Process(self.proc.pid).children(recursive=True)
        self.descendants.update(p.pid for p in children)
        return True

    def wait_for(self, condition, timeout: float, what: str):
        """``condition`` while up keeps running."""
        return wait_for(lambda: self.alive() and condition(), timeout, what)

    def ctrl_c(self, timeout: float = 120) -> tuple[int | None, list[int]]:
        """SIGINT to up alone (up stops its children); its exit code (None: it had to be
        killed) and the descendants left alive (killed now). Once: later calls answer the same."""
        if self.stopped is None:
            if self.proc.alive():
                with contextlib.suppress(AssertionError, ProcessLookupError):
                    self.alive()
                self.proc.send(signal.SIGINT, group=False)
            try:
                code = self.proc.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                code = None
            time.sleep(0.5)
            left = alive_pids(self.descendants)  # before the group is killed: up's own work
            self.proc.finish(0)
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.stopped = (code, left)
        return self.stopped
