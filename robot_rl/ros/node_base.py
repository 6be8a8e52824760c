"""Conventions every robot_rl node follows, so that drivers and twin nodes behave alike.

- Parameters: each one is declared with a default, a description and a check (``Param``);
  ``declare_params`` reads them all and raises ``ParameterError`` naming the node, the
  parameter, the value and what it must be. A YAML file given with
  ``--ros-args --params-file FILE`` sets them (rclpy reads it from the arguments of ``main``).
- Lifecycle: anything that moves is a ``DeviceNode`` (its hooks say which transition does what).
  There is no lifecycle manager on these machines, so the ``autostart`` parameter (default true)
  walks the node to active when it starts.
- ``run_node(factory, args)``: the body of every node's ``main(args=None)`` (its docstring says
  the steps); a bad parameter exits with status 2 and one line on stderr, not a traceback.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import ExternalShutdownException
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.node import Node

from robot_rl.ros.executors import new_executor, spin

T = TypeVar("T")


class ParameterError(ValueError):
    """A parameter has a value the node cannot work with."""


@dataclass(frozen=True)
class Param:
    name: str
    default: Any
    description: str
    check: Callable[[Any], bool] | None = None
    requirement: str = ""
    """What ``check`` demands, in words (goes into the error message)."""


def positive(name: str, default: float, description: str) -> Param:
    return Param(name, float(default), description, lambda v: v > 0, "must be > 0")


def one_of(name: str, default: str, choices: Sequence[str], description: str) -> Param:
    return Param(
        name, default, description, lambda v: v in choices, f"must be one of {', '.join(choices)}"
    )


def _coerce(node: Node, param: Param, value: Any) -> Any:
    kind = type(param.default)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # YAML writes 5 for 5.0
    if kind in (list, tuple) and isinstance(value, (list, tuple)):
        return tuple(value)
    if not isinstance(value, kind):
        raise ParameterError(
            f"{node.get_fully_qualified_name()}: parameter {param.name!r} = {value!r} has type "
            f"{type(value).__name__}, expected {kind.__name__}"
        )
    return value


def declare_params(node: Node, params: Sequence[Param]) -> dict[str, Any]:
    """Declare every parameter (dynamic typing, so an int given for a float is accepted and
    converted) and return the validated values by name."""
    values: dict[str, Any] = {}
    for param in params:
        descriptor = ParameterDescriptor(description=param.description, dynamic_typing=True)
        default = list(param.default) if isinstance(param.default, tuple) else param.default
        raw = node.declare_parameter(param.name, default, descriptor).value
        value = _coerce(node, param, raw)
        if param.check is not None and not param.check(value):
            raise ParameterError(
                f"{node.get_fully_qualified_name()}: parameter {param.name!r} = {value!r} "
                f"{param.requirement or 'is invalid'} ({param.description})"
            )
        values[param.name] = value
    return values


def declare_config(node: Node, config_class: type[T]) -> T:
    """Declare each field of a driver's config dataclass (``robot_rl.drivers.config.param``) as
    a parameter of ``node`` and return the validated config."""
    params = []
    for f in dataclasses.fields(config_class):
        check, requirement = f.metadata.get("check") or (None, "")
        params.append(
            Param(f.name, f.default, f.metadata.get("description", ""), check, requirement)
        )
    return config_class(**declare_params(node, params))


AUTOSTART = Param("autostart", True, "configure and activate at start (no lifecycle manager)")


class DeviceNode(LifecycleNode):
    """A lifecycle node for a device that moves. Subclasses implement the four hooks; an
    exception in a hook fails the transition with the reason logged, never a crash."""

    def __init__(self, name: str, **kwargs):
        super().__init__(name, **kwargs)
        self.autostart = declare_params(self, [AUTOSTART])["autostart"]
        self.motion_enabled = False

    def open_device(self) -> None:
        """Connect to (or, on the twin, build) the device and start publishing its state."""

    def enable_motion(self) -> None:
        """Accept motion commands from now on."""

    def safe_stop(self) -> None:
        """Hold still and ignore motion commands (the device stays open)."""

    def close_device(self) -> None:
        """Release the device."""

    def _run_hook(self, hook: Callable[[], None], what: str) -> TransitionCallbackReturn:
        try:
            hook()
        except Exception as error:  # a failed transition must leave the node alive
            self.get_logger().error(f"{what} failed: {error}")
            return TransitionCallbackReturn.FAILURE
        return TransitionCallbackReturn.SUCCESS

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._run_hook(self.open_device, "configure (open device)")

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        result = self._run_hook(self.enable_motion, "activate (enable motion)")
        self.motion_enabled = result == TransitionCallbackReturn.SUCCESS
        if self.motion_enabled:  # and the node's lifecycle publishers, as rclpy's base does
            super().on_activate(state)
        return result

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.motion_enabled = False
        result = self._run_hook(self.safe_stop, "deactivate (safe stop)")
        super().on_deactivate(state)  # its lifecycle publishers go quiet too
        return result

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._run_hook(self.close_device, "cleanup (close device)")

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        if self.motion_enabled:
            self.motion_enabled = False
            self._run_hook(self.safe_stop, "shutdown (safe stop)")
        return self._run_hook(self.close_device, "shutdown (close device)")

    def log(self, level: str, message: str) -> None:
        """Log at ``level`` ("error", "warning", anything else: info): the device link's logger."""
        # rclpy ties a severity to each calling line: one line per severity
        logger = self.get_logger()
        if level == "error":
            logger.error(message)
        elif level == "warning":
            logger.warning(message)
        else:
            logger.info(message)

    def start(self) -> bool:
        """Walk to active (autostart); False if a transition failed."""
        if self.trigger_configure() != TransitionCallbackReturn.SUCCESS:
            return False
        return self.trigger_activate() == TransitionCallbackReturn.SUCCESS


def run_node(factory: Callable[[], Node], args: list[str] | None = None) -> int:
    """Init rclpy with ``args`` (None: sys.argv, so --ros-args work), build the node, start it
    (lifecycle nodes with autostart), spin until shutdown, then stop safely and tear down."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _interrupt_unless_ros_stops)
    rclpy.init(args=args)
    node = None
    try:
        try:
            node = factory()
        except ParameterError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        if isinstance(node, DeviceNode) and node.autostart and not node.start():
            node.get_logger().error("could not start (see above); waiting for a lifecycle manager")
        executor = new_executor(node=node)
        executor.add_node(node)
        spin(executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # SIGTERM shuts the context down under a running callback, whose next publish then
        # fails: that is an ordinary stop, anything else is a real error
        if rclpy.ok():
            raise
    finally:
        # Ctrl-C in a terminal reaches every process of ros2 launch's group and launch then sends
        # its own SIGINT: the second one must not cut the safe stop short (a traceback, exit -2)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        if node is not None:
            _tear_down(node)
        rclpy.try_shutdown()
    return 0


def _interrupt_unless_ros_stops(signum, frame) -> None:
    """Ctrl-C: rclpy's own handler has already shut the context down (spin ends) and calls
    this one after it; Python's default would raise KeyboardInterrupt wherever the main thread
    is, a garbage collector's callback included (a traceback printed, then ignored). Raise only
    where rclpy did not stop."""
    if rclpy.ok():
        raise KeyboardInterrupt


def _tear_down(node: Node) -> None:
    try:
        if isinstance(node, DeviceNode):
            if node.motion_enabled:
                node.motion_enabled = False
                node.safe_stop()
            node.close_device()
        node.destroy_node()
    except Exception as error:  # the context may already be gone; the process is ending
        print(f"{node.get_name()}: teardown: {error}", file=sys.stderr)


def node_parameters(node_class: type[Node]) -> list[Param]:
    """A node class's parameters, without building it: its ``declared_parameters()`` (a
    classmethod that returns the ``Param`` list its constructor declares), else its config
    dataclass (``config_class``); a ``DeviceNode``'s ``autostart`` last."""
    from robot_rl.ros.node_help import parameters_of

    declared = getattr(node_class, "declared_parameters", None)
    source = declared() if declared is not None else node_class.config_class
    params = [Param(*entry) for entry in parameters_of(source)]
    return params + ([AUTOSTART] if issubclass(node_class, DeviceNode) else [])


def node_help(node_class: type[Node], parts: dict[str, type[Node]] | None = None) -> str:
    """``--help`` of a node executable (``robot_rl.ros.node_help``): ``node_class``'s
    parameters; an executable that runs one of several node classes (a cell's ``part``) gives
    them all in ``parts`` (title -> class)."""
    from robot_rl.ros.node_help import help_text, parameters_of, summary_of

    sections = [
        (title, parameters_of(node_parameters(cls)))
        for title, cls in (parts or {"parameters": node_class}).items()
    ]
    return help_text(summary_of(node_class.__module__), sections)


def main_for(node_class: type[Node]) -> Callable[[list[str] | None], None]:
    """A standard ``main(args=None)`` for a node class with a no-argument constructor;
    ``--help`` prints its parameters and exits before rclpy starts or a device opens."""

    def main(args: list[str] | None = None) -> None:
        from robot_rl.ros.node_help import help_asked

        if help_asked(args):
            print(node_help(node_class))
            sys.exit(0)
        sys.exit(run_node(node_class, args))

    return main
