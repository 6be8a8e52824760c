"""The MuJoCo twin: models, in-process envs, ROS 2 nodes. Imported as ``robot_rl.sim``.

``make_twin_env(task)`` builds a ``RobotEnv`` whose backend is the in-process twin of the
task's robot kind; ``make_expert(task)`` gives the task's scripted expert (``sim/experts/``).
MuJoCo is imported only when a twin is built.
"""

from __future__ import annotations

import os

# MuJoCo picks its GL backend when it is imported: with no display, glfw aborts the process at
# the first rendered frame. A headless machine gets EGL unless the user chose otherwise.
if "MUJOCO_GL" not in os.environ and not (
    os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
):
    os.environ["MUJOCO_GL"] = "egl"
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")


def make_twin_backend(task, seed: int | None = None):
    from robot_rl.robot_kinds import resolve, robot_kind

    return resolve(robot_kind(task.robot).twin_factory)(task, seed=seed)


def make_twin_env(task, seed: int | None = None):
    from robot_rl.envs.robot_env import RobotEnv

    return RobotEnv(task, make_twin_backend(task, seed=seed))


def make_expert(task):
    from robot_rl.sim.experts import make_expert as _make_expert

    return _make_expert(task)
