"""Replay buffer throughput and memory: one JSON line per figure.

    python benchmarks/replay.py [--quick]

Configs: ``a_state`` (20-d state, 4-d action) and ``b_state_2cams_128`` (20-d state plus two
128x128x3 uint8 cameras). For each: insert rate (transitions/s) and sample rate (batches of 256
per second, and transitions/s). For b also ``bytes_per_image_transition``: the buffer's stored
arrays divided by its capacity, against the naive size of storing obs and next obs per transition.
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np

from robot_rl.data.replay import ReplayBuffer

BATCH = 256


def spaces(cameras: int, size: int = 128) -> tuple[gym.spaces.Dict, gym.spaces.Box]:
    obs = {"state": gym.spaces.Box(-np.inf, np.inf, (20,), np.float32)}
    for i in range(cameras):
        obs[f"cam{i}"] = gym.spaces.Box(0, 255, (size, size, 3), np.uint8)
    return gym.spaces.Dict(obs), gym.spaces.Box(-1.0, 1.0, (4,), np.float32)


def measure(config: str, cameras: int, capacity: int, inserts: int, batches: int) -> list[dict]:
    obs_space, act_space = spaces(cameras)
    buffer = ReplayBuffer(obs_space, act_space, capacity)
    rng = np.random.default_rng(0)
    # A pool of distinct frames reused cyclically, so generating data is not what gets timed.
    pool = [obs_space.sample() for _ in range(64)]
    actions = rng.uniform(-1, 1, (64, 4)).astype(np.float32)
    start = time.perf_counter()
    for step in range(inserts):
        end = step % 100 == 99
        buffer.add(pool[step % 64], actions[step % 64], 1.0, False, end, pool[(step + 1) % 64])
    insert_s = time.perf_counter() - start
    buffer.sample(rng, BATCH)  # warm-up
    start = time.perf_counter()
    for _ in range(batches):
        buffer.sample(rng, BATCH)
    sample_s = time.perf_counter() - start
    lines = [
        {
            "config": config,
            "figure": "insert",
            "transitions_per_s": inserts / insert_s,
            "transitions": inserts,
        },
        {
            "config": config,
            "figure": "sample",
            "batch": BATCH,
            "batches_per_s": batches / sample_s,
            "transitions_per_s": batches * BATCH / sample_s,
        },
    ]
    if cameras:
        frame_bytes = sum(
            int(np.prod(s.shape)) * np.dtype(s.dtype).itemsize for s in obs_space.spaces.values()
        )
        per_transition = buffer.nbytes / buffer.capacity
        naive = 2 * frame_bytes + 4 * 4 + 3 * 4
        lines.append(
            {
                "config": config,
                "figure": "memory",
                "capacity": capacity,
                "bytes_per_image_transition": per_transition,
                "naive_obs_plus_next_obs_bytes": naive,
                "ratio_to_naive": per_transition / naive,
            }
        )
    return lines


def run(quick: bool = False) -> list[dict]:
    scale = 1 if quick else 10
    return measure("a_state", 0, 10_000 * scale, 5_000 * scale, 50 * scale) + measure(
        "b_state_2cams_128", 2, 1_000 * scale, 1_500 * scale, 10 * scale
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    for line in run(quick=parser.parse_args(argv).quick):
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
