"""The operator's devices as tests drive them: a /teleop/joy publisher that holds a button state
and publishes it at a device's steady rate, and bounded waits."""

from __future__ import annotations

import threading

from process_helpers import wait_for

__all__ = ["JoyDevice", "wait_for"]


class JoyDevice:
    """Publishes ``sensor_msgs/Joy`` on /teleop/joy at ``rate_hz`` with the buttons held now."""

    def __init__(self, buttons: int = 5, rate_hz: float = 20.0):
        import rclpy
        from rclpy.context import Context
        from sensor_msgs.msg import Joy

        from robot_rl.ros.qos import teleop_qos
        from robot_rl.ros.teleop import JOY_TOPIC

        self._joy = Joy
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("test_operator_device", context=self.context)
        self.publisher = self.node.create_publisher(Joy, JOY_TOPIC, teleop_qos())
        self.state = [0] * buttons
        self.period = 1.0 / rate_hz
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            msg = self._joy()
            msg.header.stamp = self.node.get_clock().now().to_msg()
            msg.buttons = list(self.state)
            self.publisher.publish(msg)
            self._stop.wait(self.period)

    def subscribed(self) -> bool:
        return self.publisher.get_subscription_count() > 0

    def press(self, button: int, until, timeout: float = 20.0, what: str = "the press") -> None:
        """Hold ``button`` until ``until()`` is true (the subscriber saw it), then release."""
        self.state[button] = 1
        try:
            wait_for(until, timeout, what)
        finally:
            self.state[button] = 0

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.node.destroy_node()
        self.context.try_shutdown()
