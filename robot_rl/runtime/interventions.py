"""Who may take over from the policy in a run (``--interventions``): nobody, the twin's
simulated human, or an operator on the ROS 2 teleop topics (SpaceMouse, gamepad, keyboard).

``with_interventions`` wraps a task env (``RobotEnv``: the twin or the ROS 2 backend) with the
``InterventionWrapper``; the wrapper owns its source and closes it with the env. ROS 2 and MuJoCo
are imported only for the kind that needs them.
"""

from __future__ import annotations

INTERVENTIONS = ("off", "sim", "ros")

ARM_TELEOP_AXES = ("linear.x", "linear.y", "linear.z", "gripper")
"""The axes of a task that names none (``Task.teleop_axes``) and has a 4-entry action."""


def check_interventions(kind: str, backend: str) -> None:
    """Raise ValueError when ``kind`` is unknown or cannot run on ``backend``."""
    if kind not in INTERVENTIONS:
        raise ValueError(f"interventions must be one of {', '.join(INTERVENTIONS)}, got {kind!r}")
    if kind == "sim" and backend != "twin":
        raise ValueError("--interventions sim needs the twin's scripted expert (--backend twin)")
    if kind == "ros" and backend not in ("twin", "ros"):
        raise ValueError("--interventions ros needs a task env (--backend twin or ros)")


def teleop_axes(task, action_dim: int) -> tuple[str, ...]:
    """The teleop mapping's axes for ``task`` (a ``Task``: its ``teleop_axes``), checked
    against the action size."""
    axes = getattr(task, "teleop_axes", None)
    if axes is None and action_dim == 4:
        axes = ARM_TELEOP_AXES
    if axes is None or len(axes) != action_dim:
        raise ValueError(
            f"no teleop mapping for task {getattr(task, 'name', task)!r} with {action_dim} "
            f"action entries; set `teleop_axes` on its task class (tasks/)"
        )
    return tuple(axes)


def make_ros_teleop(env, max_age_s: float = 0.3):
    """A ``RosTeleopSource`` on /teleop/twist and /teleop/joy, mapped to ``env``'s task."""
    try:
        from robot_rl.ros.teleop import RosTeleopSource, TeleopMapping
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ValueError(
            f"the ROS 2 teleop source needs rclpy: pip install -e '.[ros]' ({err})"
        ) from err
    axes = teleop_axes(env.unwrapped.task, env.action_space.shape[0])
    return RosTeleopSource(TeleopMapping(axes=axes), max_age_s=max_age_s, node_name="teleop_source")


def with_interventions(env, kind: str, seed: int = 0):
    """``env`` unchanged ('off') or wrapped so that the operator of ``kind`` can take over.
    If wrapping fails, ``env`` is closed before the error propagates."""
    if kind == "off":
        return env
    try:
        return _wrap(env, kind, seed)
    except BaseException:
        env.close()
        raise


def _wrap(env, kind: str, seed: int):
    if kind == "sim":
        from robot_rl.sim.simulated_human import with_simulated_human

        return with_simulated_human(env, seed=seed)
    if kind == "ros":
        from robot_rl.envs.intervention import InterventionConfig, InterventionWrapper

        source = make_ros_teleop(env)
        try:
            return InterventionWrapper(env, source, InterventionConfig(mode="motion"))
        except BaseException:
            source.close()
            raise
    raise ValueError(f"interventions must be one of {', '.join(INTERVENTIONS)}, got {kind!r}")


def realtime_pace(env, kind: str, backend: str):
    """A ``Rate`` at the task's control rate when a person drives the in-process twin
    ('ros' on the twin), else None (the simulated human keeps up at any speed; the ROS 2
    backend is paced by its own clock)."""
    if kind != "ros" or backend != "twin":
        return None
    from robot_rl.runtime.rate import Rate

    return Rate(env.unwrapped.task.control_hz)
