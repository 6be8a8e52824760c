"""Twin speed: environment steps per second per task, state only and with cameras.

    python benchmarks/twin.py [--quick] [--tasks pick_cube,peg_insert,car_lap]

One JSON line per (task, observation mode). Random actions; resets included in the time.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from robot_rl.envs.task import make_task
from robot_rl.sim import make_twin_env


def measure(task_name: str, steps: int, cameras: tuple[str, ...] | None, size: int) -> dict:
    probe = make_twin_env(make_task(task_name))
    all_cameras = probe.backend.camera_names
    probe.close()
    chosen = () if cameras is None else all_cameras[:2]
    env = make_twin_env(make_task(task_name, cameras=chosen, image_size=size))
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    resets = 0
    t0 = time.perf_counter()
    for _ in range(steps):
        action = rng.uniform(-1, 1, env.action_space.shape).astype(np.float32)
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
            resets += 1
    seconds = time.perf_counter() - t0
    env.close()
    return {
        "config": f"{task_name}_{'state' if not chosen else f'{len(chosen)}cams_{size}px'}",
        "task": task_name,
        "cameras": list(chosen),
        "image_size": size if chosen else None,
        "env_steps_per_s": round(steps / seconds, 1),
        "ms_per_step": round(seconds / steps * 1e3, 3),
        "steps": steps,
        "resets": resets,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tasks", default="pick_cube,peg_insert,car_lap")
    args = parser.parse_args(argv)
    for task in args.tasks.split(","):
        print(json.dumps(measure(task, 200 if args.quick else 2000, None, 64)), flush=True)
        print(json.dumps(measure(task, 30 if args.quick else 300, (), 128)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
