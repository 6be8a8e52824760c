"""The executor every node spins (robot_rl.ros.executors): messages reach a node spun on a
thread of its own, entities made while it spins work, a shutdown ends the spin, a node that
needs the Python executor gets it, and a spinning thread is out of the executor before its
node is destroyed."""

from __future__ import annotations

import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from robot_rl.ros.executors import SpinThread, new_executor, spin  # noqa: E402


def _wait_for(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_a_node_spun_on_a_thread_gets_its_messages_and_stops_on_shutdown():
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("executor_probe", context=context)
    executor = new_executor(context)
    executor.add_node(node)
    ended: list[BaseException] = []

    def run():
        try:
            spin(executor)
        except BaseException as error:  # the way out: recorded for the assertion
            ended.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        got: list[str] = []
        # made while the executor spins: the way the backend adds its arm topics
        topic = "/executor_probe/chatter"
        node.create_subscription(String, topic, lambda m: got.append(m.data), 10)
        publisher = node.create_publisher(String, topic, 10)
        assert _wait_for(lambda: publisher.get_subscription_count() > 0)
        for i in range(20):
            publisher.publish(String(data=str(i)))
            time.sleep(0.01)
        assert _wait_for(lambda: len(got) == 20), got
        assert got == [str(i) for i in range(20)]
    finally:
        context.try_shutdown()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert len(ended) == 1 and isinstance(ended[0], ExternalShutdownException)
    executor.shutdown(timeout_sec=1.0)
    node.destroy_node()


def test_a_node_that_asks_for_the_python_executor_gets_it():
    class NeedsGuards:
        events_executor = False

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        assert isinstance(new_executor(context, NeedsGuards()), SingleThreadedExecutor)
        assert not isinstance(new_executor(context), SingleThreadedExecutor)
    finally:
        context.try_shutdown()


def test_closing_a_spin_thread_waits_for_the_running_callback_before_destroying_the_node():
    """Destroying a node while the events executor ran on it in another thread crashed an
    actor (SIGSEGV in destroy_service): close() must leave the executor first."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("spin_thread_probe", context=context)
    events: list[str] = []
    started = threading.Event()

    def slow_callback(msg) -> None:
        started.set()
        time.sleep(0.5)  # a callback still running when close() is called
        events.append("callback ended")

    topic = "/spin_thread_probe/chatter"
    node.create_subscription(String, topic, slow_callback, 10)
    node.create_service(Trigger, "/spin_thread_probe/srv", _answer)  # as the actor has
    destroy = node.destroy_node
    node.destroy_node = lambda: (events.append("node destroyed"), destroy())[1]
    executor = new_executor(context)
    executor.add_node(node)
    spinner = SpinThread(executor, context, "probe")
    publisher = node.create_publisher(String, topic, 10)
    assert _wait_for(lambda: publisher.get_subscription_count() > 0)
    publisher.publish(String(data="x"))
    assert started.wait(30)
    spinner.close(node)
    assert events == ["callback ended", "node destroyed"]
    assert not context.ok()
    spinner.close(node)  # a second close does nothing
    assert events == ["callback ended", "node destroyed"]


def _answer(request, response):
    return response
