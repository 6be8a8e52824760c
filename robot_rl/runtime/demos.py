"""Scripted demonstrations into a demonstration buffer (successful episodes only)."""

from __future__ import annotations

import numpy as np

from robot_rl.data.replay import ReplayBuffer
from robot_rl.data.transition import from_step
from robot_rl.runtime.evaluation import episode_success


def collect_demos(
    env,
    expert,
    buffer: ReplayBuffer,
    episodes: int,
    seed: int,
    max_attempts: int | None = None,
) -> dict:
    """Run ``expert`` until ``episodes`` successful episodes are stored in ``buffer``; failed
    attempts are discarded whole (a demonstration buffer holds only successes). Returns counts
    (stored episodes, attempts, transitions)."""
    max_attempts = max_attempts or 3 * episodes + 10
    rng = np.random.default_rng(seed)
    stored, attempts, transitions = 0, 0, 0
    while stored < episodes:
        if attempts >= max_attempts:
            raise RuntimeError(
                f"the scripted expert succeeded in only {stored} of {attempts} attempts"
            )
        attempts += 1
        obs, _ = env.reset(seed=seed + attempts)
        expert.reset(rng)
        episode = []
        success = False
        while True:
            action = np.asarray(expert.act(env.reading), np.float32)
            result = env.step(action)
            transition = from_step(obs, action, result)
            episode.append(transition)
            success = success or episode_success(result[4])
            obs = transition.next_obs
            if transition.terminated or transition.truncated:
                break
        if success:
            for transition in episode:
                buffer.add(*transition.replay_args())
            stored += 1
            transitions += len(episode)
    return {"episodes": stored, "attempts": attempts, "transitions": transitions}


def fill_demo_buffer(
    buffer: ReplayBuffer, demo_path, scripted: int, make_env, seed: int, log, make_expert=None
):
    """Recorded (MCAP) demonstrations from ``demo_path``, else ``scripted`` successful
    scripted-expert episodes on ``make_env(seed)`` (the expert ``make_expert(env)`` makes;
    default: the twin task's), into an empty demo buffer (a resumed run has its
    demonstrations back)."""
    if len(buffer):
        return
    if demo_path:
        from robot_rl.data.mcap_demos import load_demos

        _, counts = load_demos(demo_path, buffer)
        log(
            f"demos: {counts['episodes']} recorded episodes ({counts['transitions']} "
            f"transitions) from {demo_path}"
        )
    elif scripted:
        if make_expert is None:
            from robot_rl.sim import make_expert as make_task_expert

            make_expert = lambda env: make_task_expert(env.task)
        env = make_env(seed)
        try:
            counts = collect_demos(env, make_expert(env), buffer, scripted, seed=seed)
        finally:
            env.close()
        log(
            f"demos: {counts['episodes']} successful expert episodes "
            f"({counts['attempts']} attempts, {counts['transitions']} transitions)"
        )
