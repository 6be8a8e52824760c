"""Asks nodes of a running stack how far they got: a lifecycle node's state through its
``<node>/get_state`` service (``lifecycle_msgs/srv/GetState``), a plain node's presence in the
graph. ``robot-rl up robot`` uses it to start the actor only once every driver is ``active``.

It runs one node of its own (``robot_rl_up_probe``) in a context of its own, spun on a thread,
so a caller without rclpy elsewhere (``robot-rl up``) imports rclpy only here.
"""

from __future__ import annotations

import threading


class LifecycleProbe:
    def __init__(self, name: str = "robot_rl_up_probe"):
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions

        self.context = Context()
        # the caller's Ctrl-C and SIGTERM handling stays its own (up stops its children)
        rclpy.init(context=self.context, args=[], signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(name, context=self.context, start_parameter_services=False)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._clients: dict[str, object] = {}
        self._thread = threading.Thread(target=self._spin, name="lifecycle-probe", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except Exception:
            if self.context.ok():  # an error while shutting down is expected
                raise

    def visible(self, fqn: str) -> bool:
        """Whether the node ``fqn`` (``/namespace/name``) is in the graph."""
        namespace, _, name = fqn.rpartition("/")
        return (name, namespace or "/") in self.node.get_node_names_and_namespaces()

    def is_lifecycle(self, fqn: str) -> bool:
        """Whether the (visible) node offers ``get_state``."""
        namespace, _, name = fqn.rpartition("/")
        try:
            services = self.node.get_service_names_and_types_by_node(name, namespace or "/")
        except Exception:  # gone between the two graph queries
            return False
        return any(service == f"{fqn}/get_state" for service, _ in services)

    def state(self, fqn: str, timeout: float = 2.0) -> str | None:
        """The node's lifecycle state label ('unconfigured', 'inactive', 'active', ...), or
        None when nobody answered within ``timeout`` seconds."""
        from lifecycle_msgs.srv import GetState

        client = self._clients.get(fqn)
        if client is None:
            client = self._clients[fqn] = self.node.create_client(GetState, f"{fqn}/get_state")
        if not client.service_is_ready():
            return None
        done = threading.Event()
        future = client.call_async(GetState.Request())
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout):
            client.remove_pending_request(future)
            return None
        result = future.result()
        return None if result is None else result.current_state.label

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self.context.try_shutdown()
        self._thread.join(timeout=2)
