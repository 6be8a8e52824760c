"""The main job's learner update rate for candidate recipes: one JSON line per configuration.

    python benchmarks/main_job_learner.py [--seconds 6] [--rounds 2]

pick_cube's spaces (state 10, action 4), the learner's call shape (``update_chunk`` critic
updates per jitted call, half online, half demo batches of random data), timed after warm-up
with ``block_until_ready``, interleaved over ``--rounds`` so that every configuration meets the
same machine load. Ratios between lines carry over to another load; absolute rates do not.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import jax

from robot_rl.agents.config import AgentConfig
from robot_rl.agents.random_batches import random_batch
from robot_rl.agents.sac import SACAgent
from robot_rl.envs.task import make_task

CANDIDATES = {
    "recipe_10critics_b256_car1": dict(batch=256, num_critics=10, critic_actor_ratio=1),
    "10critics_b256_car2": dict(batch=256, num_critics=10, critic_actor_ratio=2),
    "10critics_b128_car2": dict(batch=128, num_critics=10, critic_actor_ratio=2),
    "5critics_b256_car2": dict(batch=256, num_critics=5, critic_actor_ratio=2),
    "2critics_b256_car2": dict(batch=256, num_critics=2, critic_actor_ratio=2),
    "2critics_b256_car1": dict(batch=256, num_critics=2, critic_actor_ratio=1),
}


def build(spec: dict, chunk: int):
    task = make_task("pick_cube")
    obs_space, act_space = task.observation_space(), task.action_space()
    config = AgentConfig(
        num_critics=spec["num_critics"], critic_subsample=2, init_temperature=0.01,
        critic_actor_ratio=spec["critic_actor_ratio"],
    )  # fmt: skip
    agent = SACAgent.create(0, obs_space, act_space, config)
    batch = random_batch(obs_space, act_space.shape[0], spec["batch"] * chunk)
    agent, _ = agent.update(batch, utd_ratio=chunk)  # compile
    jax.block_until_ready(agent)
    return agent, batch


def measure(agent, batch, chunk: int, seconds: float):
    calls, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        agent, _ = agent.update(batch, utd_ratio=chunk)
        calls += 1
    jax.block_until_ready(agent)
    return agent, calls * chunk, time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=4)
    parser.add_argument("--only", default=",".join(CANDIDATES))
    args = parser.parse_args(argv)
    names = args.only.split(",")
    built = {name: build(CANDIDATES[name], args.chunk) for name in names}
    totals = {name: [0, 0.0] for name in names}
    for _ in range(args.rounds):
        for name in names:
            agent, batch = built[name]
            agent, updates, seconds = measure(agent, batch, args.chunk, args.seconds)
            built[name] = (agent, batch)
            totals[name][0] += updates
            totals[name][1] += seconds
    base = totals[names[0]][0] / totals[names[0]][1]
    for name in names:
        rate = totals[name][0] / totals[name][1]
        print(json.dumps({
            "config": name, **CANDIDATES[name], "update_chunk": args.chunk,
            "updates_per_s": round(rate, 2), "relative_to_first": round(rate / base, 2),
            "rounds": args.rounds, "seconds_each": args.seconds,
            "load_average_1min": round(__import__("os").getloadavg()[0], 1),
        }))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
