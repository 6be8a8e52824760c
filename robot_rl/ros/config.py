"""Options of the ROS 2 robot backend, as a plain dataclass: the actor's command line and the
stack description build it without importing rclpy (robot_rl.ros.backend does that)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RosBackendConfig:
    namespace: str = ""
    """The robot's namespace; empty: ``/arm`` or ``/car`` by the task's robot kind."""
    camera_namespaces: dict[str, str] = field(default_factory=dict)
    """Camera name -> namespace; a camera not listed is at ``/<name>_cam``."""
    use_sim_time: bool | None = True
    """Stamps and periods on ``/clock`` (the twin); None: as the ``use_sim_time`` ROS parameter
    says (``--ros-args -p use_sim_time:=true``, what a launch file sets)."""
    node_name: str = ""
    """Name of the backend's node; empty: ``robot_rl_backend_<robot>`` (the actor is ``actor``)."""
    ros_args: tuple[str, ...] = ()
    """ROS arguments for the backend's context (``--ros-args -r __node:=... -p ...``)."""
    max_age: float = 0.3
    """Staleness bound (s): the newest data of every topic must be younger than this."""
    slop: float = 0.1
    """Approximate sync (s): the assembled messages' stamps lie within this of each other."""
    clock_timeout: float = 2.0
    """Wall seconds without ``/clock`` after which sim time counts as stopped (stale)."""
    service_timeout: float = 10.0
    """Wall seconds to wait for a service (reset, estop, clear_error)."""
    ready_timeout: float = 20.0
    """Wall seconds a reset may wait for fresh readings and for the robot to settle."""
    objects: tuple[str, ...] | None = None
    """Twin-only object poses to read from ``/sim/objects/<name>/pose`` (None: those the task's
    privileged state needs)."""
    settle_tolerance: float = 0.005
    """move_to is done when the TCP is this close to the target (m)."""
    settle_stall: float = 1.5
    """Seconds (by the pose readings' stamps) the TCP may stand still, moving no more than
    ``settle_tolerance``, short of a move_to's target before the move counts as over: the
    target is out of reach (``ready_timeout`` still bounds a move that keeps creeping)."""
    wheelbase: float = 0.26
    """The car's wheelbase (m): steering <-> yaw rate in ``cmd_vel``."""
    frame_paced: bool = True
    """On wall time with cameras: a control tick waits, within a tenth of a period either side
    of its schedule, for the next set of camera frames (every camera newer than at the previous
    tick), so the policy acts on frames just delivered rather than up to a period old; no new
    set by then, it ticks anyway (a silent camera shows up as a stale reading)."""

    def __post_init__(self) -> None:
        for name in (
            "max_age",
            "slop",
            "clock_timeout",
            "service_timeout",
            "ready_timeout",
            "settle_tolerance",
            "settle_stall",
            "wheelbase",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"RosBackendConfig.{name} must be > 0, got {getattr(self, name)}")
        if self.ros_args and self.ros_args[0] != "--ros-args":
            raise ValueError(f"ros_args must start with --ros-args, got {self.ros_args[:3]}")
