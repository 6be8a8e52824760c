"""The twin's task suite, in the spirit of dm_control's suite tests, for every task."""

import itertools
import os

import numpy as np
import pytest

pytest.importorskip("mujoco")

import robot_rl.tasks  # noqa: F401  (registers every task)
from robot_rl.envs.task import TASKS as REGISTRY
from robot_rl.envs.task import make_task
from robot_rl.sim import make_twin_env

TASKS = sorted(REGISTRY)
"""Every registered task: a new task is held to the suite without editing this file."""
ENDS_ON_SUCCESS = [name for name in TASKS if REGISTRY[name].ends_on_success]
STEPS = 25


def rollout(task_name: str, seed: int, steps: int = STEPS, **task_options):
    env = make_twin_env(make_task(task_name, **task_options))
    try:
        actions = np.random.default_rng(seed).uniform(-1, 1, (steps, *env.action_space.shape))
        obs, _ = env.reset(seed=seed)
        observations = [obs]
        for action in actions:
            obs, reward, terminated, truncated, _ = env.step(action.astype(np.float32))
            observations.append(obs)
            assert np.isfinite(reward)
            if terminated or truncated:
                obs, _ = env.reset()
                observations.append(obs)
        return env.observation_space, observations
    finally:
        env.close()


@pytest.mark.parametrize("task_name", TASKS)
def test_same_seed_same_trajectory(task_name):
    _, first = rollout(task_name, seed=3)
    _, second = rollout(task_name, seed=3)
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)


@pytest.mark.parametrize("task_name", TASKS)
def test_observations_match_the_spec_and_share_no_buffers(task_name):
    space, observations = rollout(task_name, seed=0)
    for obs in observations:
        assert set(obs) == set(space.spaces)
        for key, value in obs.items():
            assert value.dtype == space[key].dtype, key
            assert value.shape == space[key].shape, key
        assert space.contains(obs)
    for previous, current in itertools.pairwise(observations):
        for key in current:
            assert not np.shares_memory(previous[key], current[key]), key
    first = observations[0]
    keys = list(first)
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            assert not np.shares_memory(first[a], first[b]), (a, b)


@pytest.mark.parametrize("task_name", TASKS)
def test_no_observation_element_stays_constant(task_name):
    _, observations = rollout(task_name, seed=1, steps=60)
    states = np.stack([obs["state"] for obs in observations])
    constant = [i for i in range(states.shape[1]) if np.all(states[:, i] == states[0, i])]
    assert not constant, f"state elements {constant} never change"


@pytest.mark.parametrize("task_name", TASKS)
def test_initial_state_is_randomised(task_name):
    env = make_twin_env(make_task(task_name))
    try:
        starts = [env.reset(seed=seed)[0]["state"] for seed in range(4)]
    finally:
        env.close()
    for i in range(len(starts)):
        for j in range(i + 1, len(starts)):
            assert not np.array_equal(starts[i], starts[j]), (i, j)


def egl_available() -> bool:
    return os.environ.get("MUJOCO_GL") == "egl"


@pytest.mark.skipif(not egl_available(), reason="headless rendering needs MUJOCO_GL=egl")
@pytest.mark.parametrize("task_name", TASKS)
def test_cameras_render_images_of_the_requested_size(task_name):
    probe = make_twin_env(make_task(task_name))
    cameras = probe.backend.camera_names
    probe.close()
    _space, observations = rollout(task_name, seed=0, steps=3, cameras=cameras, image_size=32)
    for camera in cameras:
        images = np.stack([obs[camera] for obs in observations])
        assert images.shape[1:] == (32, 32, 3)
        assert images.std() > 1.0, f"{camera} renders a constant image"


@pytest.mark.parametrize("task_name", ENDS_ON_SUCCESS)
def test_finishing_pays_more_than_lingering(task_name):
    """Dense shaping of a task that ends on success: every step before success costs."""
    from robot_rl.sim import make_expert

    env = make_twin_env(make_task(task_name))
    expert = make_expert(env.task)
    env.reset(seed=0)
    expert.reset(np.random.default_rng(0))
    rewards = []
    while True:
        _, reward, terminated, truncated, info = env.step(expert.act(env.reading))
        rewards.append(reward)
        if terminated or truncated:
            break
    env.close()
    assert info["success"] and terminated
    assert rewards[-1] == 0.0
    assert all(-1.0 <= r < 0.0 for r in rewards[:-1])
