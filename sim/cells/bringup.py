"""Bring a driver up once the simulated robot it talks to is there: a small lifecycle manager.

A real cell's robot is powered on before anyone starts its driver. A simulated cell starts with
its driver, and its world takes longer to build (MuJoCo, franky-sim) than the Franka node takes
to try connecting, which is refused at once when nobody listens. So the cell's world manages
the driver node as a lifecycle manager would (ROS 2's nav2 lifecycle manager does the same for
its servers): the node is started with ``autostart: false``, and once franky-sim serves, the
world asks it to configure and activate, retrying a failed step every ``retry_period`` until
``timeout``. It never deactivates anything: stopping the arm stays the driver's and the
operator's business.
"""

from __future__ import annotations

import time

from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState


class LifecycleBringup:
    """Walks each named lifecycle node to active, from ``node``'s timers (never blocking)."""

    def __init__(self, node, names: list[str], retry_period: float = 2.0, timeout: float = 300.0):
        self.node = node
        self.retry_period = retry_period
        self.deadline = time.monotonic() + timeout
        self.pending = {name: None for name in names}  # name -> future in flight
        self.active: list[str] = []
        self.last_problem: dict[str, str] = {}
        self._clients = {
            name: (
                node.create_client(GetState, f"{name}/get_state"),
                node.create_client(ChangeState, f"{name}/change_state"),
            )
            for name in names
        }
        self._timer = node.create_timer(retry_period, self._tick) if names else None

    def _tick(self) -> None:
        if not self.pending or time.monotonic() > self.deadline:
            if self.pending:
                self.node.get_logger().error(
                    f"gave up bringing up {sorted(self.pending)}: {self.last_problem}"
                )
            self._timer.cancel()
            return
        for name, future in list(self.pending.items()):
            if future is not None and not future.done():
                continue  # a request is in flight
            get_state, _ = self._clients[name]
            if not get_state.service_is_ready():
                self.last_problem[name] = "not running yet"
                continue
            self.pending[name] = get_state.call_async(GetState.Request())
            self.pending[name].add_done_callback(lambda f, n=name: self._on_state(n, f.result()))

    def _on_state(self, name: str, response) -> None:
        if response is None:
            return
        state = response.current_state.id
        if state == State.PRIMARY_STATE_ACTIVE:
            self.pending.pop(name, None)
            self.active.append(name)
            self.node.get_logger().info(f"{name} is active")
            return
        transition = {
            State.PRIMARY_STATE_UNCONFIGURED: Transition.TRANSITION_CONFIGURE,
            State.PRIMARY_STATE_INACTIVE: Transition.TRANSITION_ACTIVATE,
        }.get(state)
        if transition is None:  # finalized or in a transition: look again later
            self.last_problem[name] = f"in state {response.current_state.label}"
            return
        _, change = self._clients[name]
        request = ChangeState.Request(transition=Transition(id=transition))
        future = change.call_async(request)
        self.pending[name] = future
        future.add_done_callback(lambda f, n=name, t=transition: self._on_change(n, t, f))

    def _on_change(self, name: str, transition: int, future) -> None:
        result = future.result()
        configured = transition == Transition.TRANSITION_CONFIGURE
        step = "configure" if configured else "activate"
        if result is None or not result.success:
            self.last_problem[name] = f"{step} failed"
            self.node.get_logger().warning(
                f"{name}: {step} failed; retrying in {self.retry_period:g} s",
                throttle_duration_sec=10.0,
            )
            return
        state = (  # configured: go on to activate at once
            State(id=State.PRIMARY_STATE_INACTIVE, label="inactive")
            if configured
            else State(id=State.PRIMARY_STATE_ACTIVE, label="active")
        )
        self._on_state(name, GetState.Response(current_state=state))
