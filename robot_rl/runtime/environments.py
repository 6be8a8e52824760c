"""Build the environment a run asks for: the in-process twin of a task, the task over the ROS 2
robot backend (driver or twin nodes), or a gymnasium env."""

from __future__ import annotations

BACKENDS = ("twin", "ros", "gym")


def make_env(
    backend: str,
    task: str,
    env_id: str,
    seed: int,
    task_options: dict | None = None,
    ros=None,
):
    """``task_options``: ``make_task``'s keyword arguments, or for 'gym' ``make_gym_env``'s
    (``env_kwargs``, ``cameras``, ``image_size``, ``state_keys``, ``render_mode``). ``ros``: a
    ``robot_rl.ros.config.RosBackendConfig`` for the 'ros' backend (default one if None)."""
    if backend == "gym":
        from robot_rl.envs.gym_adapter import make_gym_env

        return make_gym_env(env_id, seed=seed, **(task_options or {}))
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    from robot_rl.envs.task import make_task

    spec = make_task(task, **(task_options or {}))
    if backend == "ros":
        return make_ros_env(spec, ros)
    try:
        from robot_rl.sim import make_twin_env
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ValueError(f"the twin needs MuJoCo: pip install -e '.[sim]' ({err})") from err
    return make_twin_env(spec, seed=seed)


def make_ros_env(task, config=None):
    """RobotEnv(task) over the driver topics; returns once every topic it needs is fresh (the
    nodes may still be starting), or raises StaleReadingError naming the silent one. Its
    resets wait for stale sensors (``robot_rl.ros.robot_env``)."""
    try:
        from robot_rl.ros.backend import make_ros_backend
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ValueError(f"the ros backend needs rclpy: pip install -e '.[ros]' ({err})") from err
    from robot_rl.ros.robot_env import RosRobotEnv

    backend = make_ros_backend(task, config)
    try:
        backend.wait_until_ready()
    except BaseException:
        backend.close()
        raise
    return RosRobotEnv(task, backend)
