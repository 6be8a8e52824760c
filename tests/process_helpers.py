"""Start real robot_rl processes for integration tests, read their progress, never leak them."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

SMALL_AGENT = [
    "--agent.num-critics", "2", "--agent.hidden-dims", "32", "32", "--batch-size", "32",
]  # fmt: skip
"""Learner options for a tiny, quickly compiled agent in process tests."""


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``robot-rl ARGS`` to completion, output captured, wide enough for one-line progress."""
    return subprocess.run(
        [sys.executable, "-m", "robot_rl.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "250"},
    )


class Proc:
    """A child process in its own process group, its output in a file."""

    def __init__(self, args: list[str], log: Path, env: dict | None = None):
        self.log = log
        self._file = open(log, "w")  # noqa: SIM115 (closed in stop)
        environment = {**os.environ, "COLUMNS": "250", "PYTHONUNBUFFERED": "1", **(env or {})}
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "robot_rl.cli", *args],
            stdout=self._file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=environment,
            start_new_session=True,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def last_int(self, pattern: str) -> int:
        """The last integer captured by ``pattern`` in the output (-1 if none yet)."""
        found = re.findall(pattern, self.output())
        return int(found[-1]) if found else -1

    def wait_for(self, condition, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            if self.popen.poll() is not None and not condition():
                raise AssertionError(
                    f"{what}: process exited ({self.popen.returncode}):\n{self.tail()}"
                )
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}:\n{self.tail()}")

    def wait_exit(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired as err:
            raise AssertionError(f"process did not exit in {timeout} s:\n{self.tail()}") from err

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, sig)
            self.popen.wait(10)

    def stop(self) -> None:
        self.kill()
        self._file.close()

    def tail(self, lines: int = 25) -> str:
        return "\n".join(self.output().splitlines()[-lines:])


class Processes:
    """Every process a test starts; ``close`` kills what is left."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.started: list[Proc] = []

    def start(self, name: str, *args: str) -> Proc:
        proc = Proc(list(args), self.directory / f"{name}-{len(self.started)}.log")
        self.started.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.started:
            proc.stop()
