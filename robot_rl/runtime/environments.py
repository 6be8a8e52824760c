"""Build the environment a run asks for: the in-process twin of a task, or a gymnasium env."""

from __future__ import annotations

BACKENDS = ("twin", "gym")


def make_env(backend: str, task: str, env_id: str, seed: int, task_options: dict | None = None):
    if backend == "gym":
        from robot_rl.envs.gym_adapter import make_gym_env

        return make_gym_env(env_id, seed=seed)
    if backend == "twin":
        from robot_rl.envs.task import make_task

        try:
            from robot_rl.sim import make_twin_env
        except ImportError as err:  # pragma: no cover - depends on the install
            raise ValueError(f"the twin needs MuJoCo: pip install -e '.[sim]' ({err})") from err
        return make_twin_env(make_task(task, **(task_options or {})), seed=seed)
    raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
