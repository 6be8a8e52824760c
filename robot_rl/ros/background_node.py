"""A node of its own, in its own rclpy context, spun on a daemon thread: how library code (the
actor's teleop source, the operator's buttons) reads topics without owning the process's
executor, and coexists with any other rclpy use in the process."""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable

import rclpy
from rclpy.context import Context
from rclpy.qos import QoSProfile

from robot_rl.ros.executors import SpinThread, new_executor

_OWN_NODE_REMAP = re.compile(r"^(?:[\w/]+:)?__(?:node|name|ns):=")
"""``__node:=x``, ``__ns:=/y``, and the same for one node by name (``actor:__node:=x``)."""


def library_ros_args(argv: list[str] | None = None) -> list[str]:
    """The process's arguments (None: sys.argv) for a node of its own: the same ROS options
    (log level, topic remappings, parameters) less the remaps that name and place the
    process's node (``-r __node:=actor`` from a launch file or ``robot-rl up``). With them,
    every library node of the actor's process (its teleop source, the operator's buttons) was
    named ``/actor`` too."""
    argv = list(sys.argv if argv is None else argv)
    kept, skip = [], False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        following = argv[i + 1] if i + 1 < len(argv) else ""
        if arg in ("-r", "--remap") and _OWN_NODE_REMAP.match(following):
            skip = True
            continue
        kept.append(arg)
    return kept


class BackgroundNode:
    """``subscriptions``: (message type, topic, callback, QoS) for each topic read; ``args``:
    the context's arguments (None: ``library_ros_args()``, the process's less its own node's
    name); ``node_options`` go to ``rclpy.create_node``. Its own context installs no signal
    handlers: the process's Ctrl-C stays its own."""

    def __init__(
        self,
        node_name: str,
        subscriptions: list[tuple[type, str, Callable, QoSProfile]],
        args: list[str] | None = None,
        **node_options,
    ):
        self.context = Context()
        rclpy.init(context=self.context, args=library_ros_args() if args is None else args)
        try:
            self.node = rclpy.create_node(node_name, context=self.context, **node_options)
            for msg_type, topic, callback, qos in subscriptions:
                self.node.create_subscription(msg_type, topic, callback, qos)
            executor = new_executor(self.context)
            executor.add_node(self.node)
        except Exception:
            self.context.try_shutdown()
            raise
        self._spinner = SpinThread(executor, self.context, node_name)

    def close(self) -> None:
        self._spinner.close(self.node)


def call_service(client, request, timeout: float):
    """``client``'s answer to ``request``, or None when none came within ``timeout`` seconds
    (its node spun elsewhere: a background thread)."""
    done = threading.Event()
    future = client.call_async(request)
    future.add_done_callback(lambda _: done.set())
    if not done.wait(timeout):
        client.remove_pending_request(future)
        return None
    return future.result()
