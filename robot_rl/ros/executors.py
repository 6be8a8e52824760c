"""The executor every robot_rl node spins, and how it spins.

rclpy's ``EventsExecutor`` (``rclpy.experimental``, in C++) where this rclpy has it, else its
``SingleThreadedExecutor``. The Python executor rebuilds a wait set of every entity for each
callback: a node taking the Franka node's five 100 Hz state topics spent about a quarter of a
core on that alone. Measured here (rclpy of Kilted, 500 JointState messages/s, 11
subscriptions): 480 us of CPU per message with the Python executor, 160-190 us with the events
executor.

``spin`` loops on ``spin_once`` until the context shuts down (ExternalShutdownException, as the
Python executor's ``spin`` raises): the events executor's own ``spin`` delivered nothing when
called on a thread other than the main one, and did not return when the context was shut down
from another thread (both seen with this rclpy). ``SpinThread`` spins one on a thread of its
own and leaves it before its node is destroyed.
"""

from __future__ import annotations

import threading

from rclpy.context import Context
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.node import Node

POLL_SECONDS = 0.5
"""How long one ``spin_once`` waits for work: a shutdown wakes it sooner."""


def new_executor(context: Context | None = None, node: Node | None = None) -> Executor:
    """An events executor on ``context`` (None: the default one), else a Python one: where
    this rclpy has none, or for a ``node`` whose class sets ``events_executor = False`` (one
    that makes guard conditions, which the events executor refuses)."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:  # an rclpy before Jazzy
        EventsExecutor = None
    if EventsExecutor is None or not getattr(node, "events_executor", True):
        return SingleThreadedExecutor(context=context)
    return EventsExecutor(context=context)


def spin(executor: Executor, stop: threading.Event | None = None) -> None:
    """Run ``executor``'s callbacks until its context shuts down or ``stop`` is set; a
    callback's exception and the shutdown (ExternalShutdownException) propagate as from
    ``Executor.spin``."""
    while stop is None or not stop.is_set():
        executor.spin_once(timeout_sec=POLL_SECONDS)


class SpinThread:
    """``executor`` spun on a daemon thread until ``close``. A node must not be destroyed while
    another thread is inside ``spin_once`` on it: with the events executor that crashed the
    process (SIGSEGV in ``destroy_service``, an actor at the end of a 30-minute cell run).
    ``close`` returns once the thread has left the executor; then the caller tears down."""

    def __init__(self, executor: Executor, context: Context, name: str):
        self.executor, self.context = executor, context
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            spin(self.executor, self._stop)
        except Exception:  # the context was shut down under it: the other way out
            if self.context.ok() and not self._stop.is_set():
                raise

    def close(self, node: Node) -> None:
        """Stop spinning, then destroy ``node`` and shut the context down. A thread held in a
        callback past the wait is woken by the context's shutdown; one that still does not
        leave keeps its node (the process is ending: a leak, not a crash)."""
        if self._stop.is_set():  # closed before
            return
        self._stop.set()
        self._thread.join(timeout=4 * POLL_SECONDS)
        if self._thread.is_alive():
            self.context.try_shutdown()
            self._thread.join(timeout=4 * POLL_SECONDS)
        if not self._thread.is_alive():
            self.executor.shutdown(timeout_sec=1.0)
            node.destroy_node()
        self.context.try_shutdown()
