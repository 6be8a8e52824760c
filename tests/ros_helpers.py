"""A test's own ROS 2 node, spun on an executor thread of its own."""

from __future__ import annotations

import threading


class Spinner:
    """Spins ``node`` (created in ``context``) until ``close``, which also shuts both down."""

    def __init__(self, node, context):
        from rclpy.executors import SingleThreadedExecutor

        self.node, self.context = node, context
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(node)
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        try:
            self.executor.spin()
        except Exception:
            if self.context.ok():  # an error while shutting down is expected
                raise

    def close(self):
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self.context.try_shutdown()
        self.thread.join(timeout=2)
