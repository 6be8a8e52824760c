"""A camera driver node under test and a probe node that records what it publishes, spun
together in a context of their own (discovery on this host, this run's domain: conftest.py)."""

from __future__ import annotations

import threading
from collections import defaultdict

from process_helpers import wait_for


def image_pixels(msg):
    """An Image message's pixels as an array (the library's own conversion)."""
    from robot_rl.ros.convert import image_to_array

    return image_to_array(msg)


def stamp_seconds(msg) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def wait_until(predicate, timeout: float = 60.0, what: str = "condition") -> None:
    """Poll ``predicate`` until it holds; generous bounds, the machine may be loaded."""
    wait_for(predicate, timeout, what, interval=0.05)


def node_factory(node_class, values: dict, autostart: bool, **kwargs):
    """A ``CameraHarness`` node factory: ``node_class`` in the harness's context and namespace,
    ``values`` as its parameters, started (and checked to be active) when ``autostart``."""

    def make(context, namespace):
        from rclpy.parameter import Parameter

        node = node_class(
            context=context,
            namespace=namespace,
            parameter_overrides=[Parameter(k, value=v) for k, v in values.items()],
            **kwargs,
        )
        if autostart:
            assert node.start(), "the node did not reach active"
        return node

    return make


class CameraHarness:
    """Spins a camera node and a probe subscribed to its topics; ``close`` tears both down."""

    def __init__(self, make_node, namespace: str = "/test_cam", depth: bool = False):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from sensor_msgs.msg import CameraInfo, Image

        from robot_rl.ros.qos import sensor_qos

        self.context = Context()
        rclpy.init(context=self.context)
        self.node = make_node(self.context, namespace)
        self.probe = rclpy.create_node("camera_probe", context=self.context)
        self._lock = threading.Lock()
        self.messages: dict[str, list] = defaultdict(list)
        topics = {"image_raw": Image, "camera_info": CameraInfo}
        if depth:
            topics.update({"depth/image_raw": Image, "depth/camera_info": CameraInfo})
        for topic, kind in topics.items():
            self.probe.create_subscription(
                kind, f"{namespace}/{topic}", self._recorder(topic), sensor_qos()
            )
        self.probe.create_subscription(
            DiagnosticArray, "/diagnostics", self._recorder("diagnostics"), 10
        )
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.probe)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _recorder(self, topic: str):
        def record(msg) -> None:
            with self._lock:
                self.messages[topic].append(msg)

        return record

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except Exception:
            if self.context.ok():
                raise

    def get(self, topic: str) -> list:
        with self._lock:
            return list(self.messages[topic])

    def statuses(self) -> list:
        """This node's diagnostic statuses, oldest first."""
        name = self.node.get_fully_qualified_name()
        return [s for array in self.get("diagnostics") for s in array.status if s.name == name]

    def wait_for_status(self, predicate, timeout: float = 60.0, what: str = "a status"):
        found = []

        def seen() -> bool:
            found[:] = [s for s in self.statuses() if predicate(s)]
            return bool(found)

        wait_until(seen, timeout, what)
        return found[-1]

    def close(self) -> None:
        self.node.close_device()
        self.executor.shutdown(timeout_sec=2.0)
        self.node.destroy_node()
        self.probe.destroy_node()
        self.context.try_shutdown()
        self._thread.join(timeout=5)
