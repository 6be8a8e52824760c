"""Asks nodes of a running stack how far they got: a lifecycle node's state through its
``<node>/get_state`` service (``lifecycle_msgs/srv/GetState``), a plain node's presence in the
graph. ``robot-rl up robot`` uses it to start the actor only once every driver is ``active``.

It runs one node of its own (``robot_rl_up_probe``, a ``BackgroundNode``), so a caller without
rclpy elsewhere (``robot-rl up``) imports rclpy only here.
"""

from __future__ import annotations

from lifecycle_msgs.srv import GetState

from robot_rl.ros.background_node import BackgroundNode, call_service


class LifecycleProbe(BackgroundNode):
    def __init__(self, name: str = "robot_rl_up_probe"):
        super().__init__(name, [], args=[], start_parameter_services=False)
        self._clients: dict[str, object] = {}

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
        client = self._clients.get(fqn)
        if client is None:
            client = self._clients[fqn] = self.node.create_client(GetState, f"{fqn}/get_state")
        if not client.service_is_ready():
            return None
        result = call_service(client, GetState.Request(), timeout)
        return None if result is None else result.current_state.label
