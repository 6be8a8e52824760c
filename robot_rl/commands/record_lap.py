"""`robot-rl record-lap`: a person drives one slow lap; its odometry becomes car_lap's checkpoints.

With ``--hardware FILE`` the file's drivers are brought up here and stopped at the end
(``--no-start-drivers``: use running ones); staleness bounds follow the file's sensor rates. It
reads only what the car publishes (``odom``, ``imu``, cameras; never ``/sim/``), passes
``/teleop/twist`` (``linear.x`` speed, ``angular.z`` steering, in [-1, 1] of ``--max-speed`` and
the steering limit) on to ``cmd_vel``, and stops the car once back within ``--close-radius`` of
the start after at least ``--min-length`` metres. ``--out`` gets ``lap.mcap`` (every control
step's odometry, IMU, command and images, written as it goes) and ``checkpoints.json`` (a point
every ``--spacing`` metres in the odometry frame: ``robot_rl.data.lap_checkpoints``).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console

from robot_rl.errors import UserError
from robot_rl.ros.config import RosBackendConfig


class LapNotClosedError(UserError):
    """The drive ended before the car came back to where it started."""


@dataclass
class RecordLapConfig:
    hardware: str | None = None
    """The car's hardware file (its namespace and cameras); default: a car at /car."""
    out: str | None = None
    """Directory for lap.mcap and checkpoints.json; default laps/<time>/."""
    cameras: tuple[str, ...] | None = None
    """Cameras to record; default: every camera of the hardware file."""
    image_size: int = 64
    """Side of the recorded camera images (pixels)."""
    spacing: float = 1.5
    """Metres between checkpoints along the lap."""
    min_length: float = 10.0
    """Metres the car must cover before coming back counts as a lap (most of the track)."""
    close_radius: float = 0.8
    """The lap closes once the car is this close (m) to where it started."""
    max_seconds: float = 180.0
    """Give up (and write no checkpoints) when the lap has not closed by then."""
    max_speed: float = 1.5
    """Speed (m/s) at full teleop deflection: the demonstration lap is a slow one."""
    teleop_max_age: float = 0.3
    """Seconds after which a teleop command counts as none (the car is told to stop)."""
    control_hz: float = 10.0
    """Rate of the recording and of the commands."""
    stale_hold: float = 5.0
    """A stale reading (a sensor late beyond the staleness bound) holds the car until the
    readings are fresh again; give up after this many seconds of it."""
    start_drivers: bool = True
    """With --hardware: start the hardware file's driver nodes (as `up robot` does), wait until
    each is active, stop them at the end; --no-start-drivers uses nodes that already run."""
    ready_timeout: float = 120.0
    """With --hardware: seconds for every driver node to become active."""
    grace: float = 20.0
    """With --hardware: seconds between SIGINT and SIGKILL when stopping the drivers."""
    ros: RosBackendConfig = field(default_factory=lambda: RosBackendConfig(use_sim_time=False))
    """The ROS 2 backend's namespaces, staleness bounds and timeouts (--hardware sets the
    namespaces); ``--ros.use-sim-time True`` for a twin publishing /clock."""

    def check(self) -> None:
        for name in (
            "spacing",
            "min_length",
            "close_radius",
            "max_seconds",
            "max_speed",
            "teleop_max_age",
            "control_hz",
            "stale_hold",
            "ready_timeout",
            "grace",
        ):
            if not getattr(self, name) > 0:
                raise UserError(f"--{name.replace('_', '-')} must be > 0")
        if self.max_speed > 5.0:
            raise UserError("--max-speed above the car's 5 m/s limit")


def backend_config(config: RecordLapConfig) -> tuple[RosBackendConfig, tuple[str, ...]]:
    """The backend's namespaces and the cameras, from the hardware file where given."""
    ros, cameras = config.ros, config.cameras
    if config.hardware is None:
        return ros, tuple(cameras or ())
    from robot_rl.hardware import load_hardware

    hardware = load_hardware(config.hardware)
    if hardware.robot_kind != "car":
        raise UserError(
            f"{config.hardware}: record-lap drives a car; its robot kind is {hardware.robot_kind!r}"
        )
    from robot_rl.stack import hardware_ros_config

    namespaces = {**hardware.cameras, **ros.camera_namespaces}
    cameras = tuple(hardware.cameras) if cameras is None else tuple(cameras)
    unknown = set(cameras) - set(namespaces)
    if unknown:
        raise UserError(f"{config.hardware} has no camera {sorted(unknown)[0]!r}")
    given = ros.namespace  # an option given here wins over the hardware file's
    ros = hardware_ros_config(ros, hardware, cameras)  # bounds from the sensors' rates
    ros = dataclasses.replace(
        ros, namespace=given or hardware.robot_namespace, camera_namespaces=namespaces
    )
    return ros, cameras


def operator_command(teleop, reading, max_age: float) -> tuple[float, float]:
    """The operator's (speed, steering) deflections in [-1, 1]; (0, 0) without a fresh one."""
    command = teleop.poll(reading)
    if command is None or time.monotonic() - command.stamp > max_age:
        return 0.0, 0.0
    action = np.asarray(command.action, np.float64).reshape(-1)
    if action.shape != (2,) or not np.all(np.isfinite(action)):
        return 0.0, 0.0
    speed, steering = np.clip(action, -1.0, 1.0)
    return float(speed), float(steering)


def run(config: RecordLapConfig, teleop=None) -> int:
    """Record; ``teleop``: a ``TeleopSource`` (tests) instead of the /teleop topics. With
    ``--hardware`` (and without ``--no-start-drivers``) the drivers run for the recording."""
    config.check()
    out = Path(config.out or f"laps/{time.strftime('%Y%m%d-%H%M%S')}")
    if (out / "checkpoints.json").exists():
        raise UserError(f"{out} already holds a checkpoints.json; choose another --out")
    if config.hardware is None or not config.start_drivers:
        return _record(config, out, teleop)
    from robot_rl.runtime.driver_bringup import drivers_up

    backend_config(config)  # a wrong hardware file or camera fails before anything starts
    console = Console(soft_wrap=True)
    with drivers_up(
        config.hardware,
        out / "logs",
        console,
        ready_timeout=config.ready_timeout,
        grace=config.grace,
    ):
        return _record(config, out, teleop)


def _record(config: RecordLapConfig, out: Path, teleop=None) -> int:
    """Drive and record one lap on drivers that are up; write the checkpoints."""
    from robot_rl.data.lap_checkpoints import (
        LapWatcher,
        checkpoints_from_lap,
        write_checkpoints,
    )
    from robot_rl.data.mcap_lap import LapLog
    from robot_rl.envs.backend import StaleReadingError
    from robot_rl.envs.task import make_task
    from robot_rl.resets.car_recovery import command, odometry_pose
    from robot_rl.ros.backend import RosCarBackend

    console = Console(soft_wrap=True)
    ros, cameras = backend_config(config)
    task = make_task(
        "car_lap", cameras=cameras, image_size=config.image_size, control_hz=config.control_hz
    )
    backend = RosCarBackend(task, ros)
    log, watcher = None, None
    try:
        if teleop is None:
            from robot_rl.ros.teleop import RosTeleopSource, TeleopMapping

            teleop = RosTeleopSource(
                TeleopMapping(axes=("linear.x", "angular.z")),
                max_age_s=config.teleop_max_age,
                node_name="record_lap",
            )
        try:
            reading = backend.wait_until_ready()
        except StaleReadingError as error:
            raise UserError(
                f"the car is not publishing ({error}): bring its drivers up first "
                "(leave out --no-start-drivers, or robot-rl up robot --hardware FILE "
                "--drivers-only)"
            ) from None
        log = LapLog(out / "lap.mcap", backend.namespace, ros.camera_namespaces, cameras)
        watcher = LapWatcher(
            config.min_length, config.close_radius, leave_radius=max(2 * config.close_radius, 1.5)
        )
        watcher.add(odometry_pose(reading))
        console.print(
            f"[bold]record-lap[/]: drive one lap and come back to the start "
            f"(at least {config.min_length:g} m, {config.max_seconds:g} s at most)"
        )
        steps, limit = 0, round(config.max_seconds * config.control_hz)
        stale, held, hold_limit = 0, 0, round(config.stale_hold * config.control_hz)
        max_steering = task.max_steering
        while not watcher.closed:
            if steps >= limit:
                raise LapNotClosedError(_not_closed(watcher, config.max_seconds))
            if held:  # the last reading was stale: nothing stale drives the car, it holds
                cmd = command(0.0, 0.0)
            else:
                speed, steering = operator_command(teleop, reading, config.teleop_max_age)
                cmd = command(speed * config.max_speed, steering * max_steering)
            backend.send(cmd)
            if not held:
                log.write(reading, cmd)
            backend.advance()
            steps += 1
            try:
                reading, held = backend.read(), 0
            except StaleReadingError as error:
                stale, held = stale + 1, held + 1
                if held >= hold_limit:
                    raise UserError(
                        f"the car's readings stayed stale for {config.stale_hold:g} s "
                        f"({str(error).splitlines()[0]}): are its drivers and cameras up?"
                    ) from None
                if held == 1:
                    console.print(
                        f"  [yellow]stale reading[/] ({str(error).splitlines()[0]}): "
                        f"the car holds until it is fresh ({stale} held steps so far)"
                    )
                continue
            watcher.add(odometry_pose(reading))
            if steps % round(5 * config.control_hz) == 0:
                console.print(
                    f"  {steps / config.control_hz:.0f} s: {watcher.length:.1f} m "
                    f"driven, {_distance_to_start(watcher):.1f} m from the start"
                )
        backend.send(command(0.0, 0.0))
        log.write(reading, command(0.0, 0.0))
    except KeyboardInterrupt:
        backend.send(command(0.0, 0.0))
        if watcher is None:
            raise LapNotClosedError("interrupted before the lap began") from None
        raise LapNotClosedError("interrupted: " + _not_closed(watcher, None)) from None
    finally:
        if log is not None:
            log.close()
        close = getattr(teleop, "close", None)
        if callable(close):
            close()
        backend.close()
    poses = np.array(watcher.poses)
    # the lap is a loop: it ends where it began (it closed within --close-radius of it)
    points = checkpoints_from_lap(np.vstack([poses, poses[:1]]), config.spacing)
    path = write_checkpoints(
        out / "checkpoints.json",
        points,
        spacing=config.spacing,
        lap_length=watcher.length,
        start=poses[0],
        hardware=config.hardware,
        mcap="lap.mcap",
        recorded=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        how="robot-rl record-lap",
    )
    train = (
        f"robot-rl up robot --hardware {config.hardware} --task car_lap"
        if config.hardware is not None
        else "robot-rl train --task car_lap"
    )
    console.print(
        f"[bold]lap closed[/]: {watcher.length:.1f} m in {steps / config.control_hz:.1f} s, "
        f"{len(points)} checkpoints in {path}"
        + (f" ({stale} steps held on stale readings)" if stale else "")
        + f"; train with: {train} --checkpoints {path}"
    )
    return 0


def _distance_to_start(watcher) -> float:
    return float(np.linalg.norm(watcher.poses[-1][:2] - watcher.poses[0][:2]))


def _not_closed(watcher, seconds: float | None) -> str:
    when = f"after {seconds:g} s" if seconds is not None else "before"
    return (
        f"the lap did not close {when} (drove {watcher.length:.1f} m, ended "
        f"{_distance_to_start(watcher):.1f} m from the start): no checkpoints written; "
        "drive all the way round, back to where you started"
    )
