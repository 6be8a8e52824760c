"""A test's own ROS 2 nodes: one spun on an executor thread of its own, a topic watcher and a
/diagnostics reader."""

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
        if self.thread is None:  # closed already
            return
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self.context.try_shutdown()
        self.thread.join(timeout=2)
        self.thread = None


class Watcher:
    """A test's ROS 2 node keeping the newest message (and a count) of some topics, on sensor
    data QoS (``/diagnostics`` on the default one) unless ``qos`` says otherwise."""

    def __init__(self, topics: dict[str, type], qos=None, name: str = "test_watcher"):
        import rclpy

        from robot_rl.ros.qos import sensor_qos

        context = rclpy.Context()
        rclpy.init(context=context)
        self.node = rclpy.create_node(name, context=context)
        self.latest: dict[str, object] = {}
        self.counts: dict[str, int] = dict.fromkeys(topics, 0)
        self._lock = threading.Lock()
        for topic, msg_type in topics.items():
            profile = qos or (10 if topic == "/diagnostics" else sensor_qos())
            self.node.create_subscription(msg_type, topic, self._keeper(topic), profile)
        self.spinner = Spinner(self.node, context)

    def _keeper(self, topic: str):
        def keep(msg) -> None:
            with self._lock:
                self.latest[topic] = msg
                self.counts[topic] += 1

        return keep

    def get(self, topic: str):
        with self._lock:
            return self.latest.get(topic)

    def close(self) -> None:
        self.spinner.close()


class Diagnostics:
    """The newest /diagnostics status of every node, by name (its values and its message),
    heard by ``node``."""

    def __init__(self, node):
        from diagnostic_msgs.msg import DiagnosticArray

        self.status: dict[str, dict[str, str]] = {}
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on, 50)

    def _on(self, msg) -> None:
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            values["message"] = status.message
            self.status[status.name] = values

    def get(self, name: str) -> dict[str, str]:
        return dict(self.status.get(name, {}))
