"""A node of its own, in its own rclpy context, spun on a daemon thread: how library code (the
actor's teleop source, the operator's buttons) reads topics without owning the process's
executor, and coexists with any other rclpy use in the process."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

import rclpy
from rclpy.context import Context
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.qos import QoSProfile


class BackgroundNode:
    """``subscriptions``: (message type, topic, callback, QoS) for each topic read; ``args``:
    the context's arguments (None: sys.argv); ``node_options`` go to ``rclpy.create_node``.
    Its own context installs no signal handlers: the process's Ctrl-C stays its own."""

    def __init__(
        self,
        node_name: str,
        subscriptions: list[tuple[type, str, Callable, QoSProfile]],
        args: list[str] | None = None,
        **node_options,
    ):
        self.context = Context()
        rclpy.init(context=self.context, args=args)
        try:
            self.node = rclpy.create_node(node_name, context=self.context, **node_options)
            for msg_type, topic, callback, qos in subscriptions:
                self.node.create_subscription(msg_type, topic, callback, qos)
            self._executor = SingleThreadedExecutor(context=self.context)
            self._executor.add_node(self.node)
        except Exception:
            self.context.try_shutdown()
            raise
        self._thread = threading.Thread(target=self._spin, name=node_name, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        # close() shuts the context down under the spinning executor: that is the way out
        with contextlib.suppress(ExternalShutdownException):
            self._executor.spin()

    def close(self) -> None:
        self._executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self.context.try_shutdown()
        self._thread.join(timeout=2.0)


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
