"""A recording session on a robot: what ``record-demos --hardware`` and ``record-labels
--hardware`` share.

The task env in robot mode over the ROS 2 backend (namespaces and staleness bounds from the
hardware file as for ``up robot``'s actor, wall time, its node named after the command); the
file's drivers brought up and stopped (``driver_bringup.drivers_up``) unless
``--no-start-drivers``; a refused reset retried (``robot_rl.resets.retry``); a driver dead for
good ends the session with its own error line. ROS 2 is imported only when a session starts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from robot_rl.errors import UserError
from robot_rl.ros.config import RosBackendConfig

NOT_READY = (
    "no fresh readings from the robot's drivers ({error}); are they running? Start them here "
    "(leave out --no-start-drivers) or in another terminal: robot-rl up robot --hardware "
    "{hardware} --drivers-only"
)


@dataclass(kw_only=True)
class RobotSessionOptions:
    hardware: str | None = None
    """Record on the robot of this hardware file (hardware/*.yaml), in robot mode: only what
    its drivers publish is read (no /sim/ topic), the teleop device drives."""
    start_drivers: bool = True
    """With --hardware: start the hardware file's driver nodes (as `up robot` does), wait until
    each is active, stop them at the end; --no-start-drivers uses nodes that already run."""
    ready_timeout: float = 120.0
    """With --hardware: seconds for every driver node to become active."""
    grace: float = 20.0
    """With --hardware: seconds between SIGINT and SIGKILL when stopping the drivers."""
    reset_tries: int = 6
    """With --hardware: a refused reset (the driver reconnecting to the robot, a service that
    does not answer, readings not fresh yet) is tried this often in all before the recording
    stops, the episodes kept so far kept."""
    reset_wait: float = 2.0
    """With --hardware: seconds before the second try of a refused reset; each later wait
    doubles (up to 30 s)."""
    teleop_max_age: float = 0.3
    """Seconds after which an operator command counts as none (the robot holds still)."""
    ros: RosBackendConfig = field(default_factory=RosBackendConfig)
    """The ROS 2 backend's bounds. With --hardware: namespaces and staleness bounds come from
    the hardware file (an option given here wins) and stamps are wall time."""

    def check_session(self) -> None:
        if self.hardware is None:
            return
        from robot_rl.hardware import find_hardware

        find_hardware(self.hardware)  # a path, or a name (fr3_sim) the package ships
        if not self.ready_timeout > 0 or self.grace < 0:
            raise UserError("--ready-timeout must be > 0 and --grace >= 0")
        if self.reset_tries < 1 or self.reset_wait < 0:
            raise UserError("--reset-tries must be >= 1 and --reset-wait >= 0")
        if not self.teleop_max_age > 0:
            raise UserError(f"--teleop-max-age must be > 0, got {self.teleop_max_age}")


@dataclass
class RobotSession:
    """The open session: its env and, when started here, its drivers."""

    env: object
    bringup: object | None
    """The ``DriverBringup`` of drivers started here (None: they ran already)."""
    options: RobotSessionOptions
    log: Callable[[str], None]

    def check_drivers(self) -> None:
        """Between episodes: a camera that died is restarted (said in one line); a driver that
        exited for good ends the session (``StackFailed`` with its error line)."""
        if self.bringup is not None:
            self.bringup.check()

    def reset(self, env, seed: int):
        """``env.reset(seed=seed)`` (``env``: the session's env or a wrapper of it); a refused
        reset is tried again (``robot_rl.resets.retry``: bounded, one line each, the drivers
        checked between tries), then ``ResetFailed``."""
        from robot_rl.resets.retry import ResetRetry, reset_with_retry

        def sleep(seconds: float) -> None:
            time.sleep(seconds)
            self.check_drivers()

        retry = ResetRetry(
            tries=self.options.reset_tries,
            first_wait=self.options.reset_wait,
            max_wait=max(30.0, self.options.reset_wait),
        )
        return reset_with_retry(
            env, retry=retry, log=lambda line: self.log(f"[yellow]{line}[/]"), sleep=sleep,
            seed=seed,
        )  # fmt: skip


def robot_ros_config(options: RobotSessionOptions, hardware, cameras, node_name: str):
    """The backend's options for ``hardware``'s nodes (``stack.hardware_ros_config``), on wall
    time, its node named ``node_name`` unless the user named it."""
    from robot_rl.stack import hardware_ros_config

    ros = dataclasses.replace(
        options.ros, use_sim_time=False, node_name=options.ros.node_name or node_name
    )
    return hardware_ros_config(ros, hardware, tuple(cameras))


@contextlib.contextmanager
def robot_session(
    options: RobotSessionOptions,
    task_name: str,
    task_options: dict,
    cameras: tuple[str, ...],
    seed: int,
    log_dir: str | Path,
    console,
    node_name: str,
    wrap_build: Callable | None = None,
) -> Iterator[RobotSession]:
    """Bring the drivers up (unless they run already), open the task env in robot mode on them
    and yield the session; on exit close the env and stop the drivers started here.
    ``wrap_build(build, task_options)``: builds the env through ``build(options)`` itself (a
    reward classifier's wrapper, which adds its camera)."""
    from robot_rl.envs.backend import StaleReadingError
    from robot_rl.envs.task import make_task
    from robot_rl.hardware import load_hardware
    from robot_rl.runtime.environments import make_env

    hardware = load_hardware(options.hardware)
    hardware.check_task(make_task(task_name, **task_options))
    ros = robot_ros_config(options, hardware, cameras, node_name)
    with contextlib.ExitStack() as stack:
        bringup = None
        if options.start_drivers:
            from robot_rl.runtime.driver_bringup import drivers_up

            bringup = stack.enter_context(
                drivers_up(
                    options.hardware,
                    Path(log_dir),
                    console,
                    ready_timeout=options.ready_timeout,
                    grace=options.grace,
                )
            )
        try:
            build = lambda opts: make_env("ros", task_name, "", seed, opts, ros=ros)
            env = wrap_build(build, task_options) if wrap_build else build(task_options)
        except StaleReadingError as error:
            raise UserError(
                NOT_READY.format(error=str(error).splitlines()[0], hardware=options.hardware)
            ) from None
        stack.callback(env.close)
        yield RobotSession(env, bringup, options, console.print)
