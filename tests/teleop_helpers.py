"""A teleop driver node run in-process on a device the test plugs, feeds and unplugs, heard by the
real consumer of its topics (``RosTeleopSource``, as the actor uses it) and by a
``/diagnostics`` listener. Waits are bounded but generous; nothing asserts time."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from process_helpers import Proc
from rclpy.context import Context
from ros_helpers import Spinner

from robot_rl.ros.teleop import RosTeleopSource, TeleopMapping

ALL_AXES = TeleopMapping(
    axes=("linear.x", "linear.y", "linear.z", "angular.x", "angular.y", "angular.z", "gripper")
)
"""The source reads all six twist entries and the gripper (+1 close, -1 open)."""
WAIT_S = 30.0


def ros_context(params: dict[str, str]) -> Context:
    args = ["--ros-args"]
    for name, value in params.items():
        args += ["-p", f"{name}:={value}"]
    context = Context()
    rclpy.init(context=context, args=args)
    return context


class DiagnosticsListener:
    """The newest ``/diagnostics`` status whose name ends with ``node_name``."""

    def __init__(self, node_name: str):
        self.node_name = node_name
        self._lock = threading.Lock()
        self.latest = None
        self.context = Context()
        rclpy.init(context=self.context)
        node = rclpy.create_node(f"diag_listener_{node_name}", context=self.context)
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_array, 10)
        self.spinner = Spinner(node, self.context)

    def _on_array(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name.endswith(self.node_name):
                with self._lock:
                    self.latest = status

    def wait_for(self, predicate, what: str, timeout: float = WAIT_S):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                status = self.latest
            if status is not None and predicate(status):
                return status
            time.sleep(0.05)
        raise AssertionError(f"diagnostics never showed {what}; last: {self.latest}")

    def close(self) -> None:
        self.spinner.close()


class TeleopHarness:
    """The node under test spinning in its own context, the source, the diagnostics listener."""

    def __init__(self, node_class, opener, params: dict[str, str]):
        self.context = ros_context(params)
        self.node = node_class(opener=opener, context=self.context)
        self.source = None
        self.diagnostics = None
        self.spinner = None
        try:
            self.source = RosTeleopSource(
                ALL_AXES, max_age_s=10.0, node_name=f"{self.node.get_name()}_test_source"
            )
            self.diagnostics = DiagnosticsListener(self.node.get_name())
            self.started = self.node.start()
            self.spinner = Spinner(self.node, self.context)
        except Exception:
            self.close()
            raise

    def wait_for(self, predicate, what: str, every=None, timeout: float = WAIT_S):
        """The first command from the source that satisfies ``predicate``."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if every is not None:
                every()
            command = self.source.poll()
            if command is not None:
                last = command
                if predicate(command):
                    return command
            time.sleep(0.05)
        raise AssertionError(f"the node never published {what}; last command: {last}")

    def wait_released(self):
        return self.wait_for(
            lambda c: not c.button and not np.any(c.action),
            "a released frame (no motion, intervention off)",
        )

    def close(self) -> None:
        if self.spinner is not None:
            self.spinner.close()
        else:
            self.node.destroy_node()
            self.context.try_shutdown()
        if self.source is not None:
            self.source.close()
        if self.diagnostics is not None:
            self.diagnostics.close()

    def __enter__(self) -> TeleopHarness:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def console_script(name: str, module: str) -> list[str]:
    """The installed console script, or the same ``main`` through ``python -m``."""
    script = os.path.join(os.path.dirname(sys.executable), name)
    return [script] if os.path.exists(script) else [sys.executable, "-m", module]


def run_until(args: list[str], text: str, timeout: float = 60.0) -> str:
    """Start a node process, wait until its output shows ``text`` (or it exits), stop it."""
    with tempfile.TemporaryDirectory() as directory:
        child = Proc(args, Path(directory) / "node.log")
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and child.alive():
                if text in child.output():
                    break
                time.sleep(0.1)
        finally:
            child.stop()
        return child.output()
