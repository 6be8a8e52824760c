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
from another thread (both seen with this rclpy).
"""

from __future__ import annotations

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


def spin(executor: Executor) -> None:
    """Run ``executor``'s callbacks until its context shuts down; a callback's exception and
    the shutdown (ExternalShutdownException) propagate as from ``Executor.spin``."""
    while True:
        executor.spin_once(timeout_sec=POLL_SECONDS)
