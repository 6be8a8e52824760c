"""The one way tests start, watch and stop real processes (robot-rl commands, ROS 2 nodes,
``ros2 launch``, franky-sim). The process itself (``Proc``, ``Processes``, ``CellProcesses``,
``wait_for``, ...) is ``robot_rl.sim.cells.processes``, which the benchmarks use too; here is
what only tests need on top: tiny agents, ``ros2 launch``'s environment, ``run_cli``, ``UpStack``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from skips import needs

from robot_rl.sim.cells.processes import (
    BIN,
    ROBOT_RL,
    CellProcesses,
    Proc,
    Processes,
    node_command,
    prepend_path,
    process_env,
    wait_for,
)

__all__ = [
    "BIN",
    "PREFIX",
    "ROBOT_RL",
    "SMALL_AGENT",
    "UP_ROBOT_TINY",
    "CellProcesses",
    "Proc",
    "Processes",
    "UpStack",
    "alive_pids",
    "holds_within",
    "node_command",
    "process_env",
    "require_launch",
    "ros2_env",
    "run_cli",
    "wait_for",
]

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


def ros2_env(log_dir: Path) -> dict[str, str]:
    """What a shell that sourced scripts/setup.sh has, plus a log folder (launch_ros's
    composition_interfaces comes with robot_rl: ``provide_composition_interfaces``)."""
    env = process_env({"ROS_LOG_DIR": str(log_dir)})
    env["AMENT_PREFIX_PATH"] = prepend_path(PREFIX, env.get("AMENT_PREFIX_PATH"))
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
