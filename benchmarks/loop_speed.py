"""Does the training loop keep the update's speed? One JSON line per round, then a summary.

    python benchmarks/loop_speed.py [--env-id Hopper-v5] [--steps 3000] [--rounds 2]

Each round times, interleaved under the same load:
- ``pure``: the agent's jitted update alone, at the loop's own settings (the recipe's batch,
  critic updates per call, agent), on a fixed batch, each call waited for;
- ``loop``: ``robot-rl train --backend gym`` for ``--steps`` env steps at the same settings,
  in this process: its updates per second of loop time, with and without its evaluations, and
  where the rest of its time went (sampling from the real replay, acting and env steps).

``share_of_pure`` is the loop's updates/s (evaluation excluded) over the pure rate: issue 18
asks for >= 0.8, or for what bounds it, which the ``seconds`` breakdown tells.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from agent_fixtures import random_batch

from robot_rl.agents.sac import SACAgent
from robot_rl.runtime.environments import make_env
from robot_rl.runtime.train_loop import TrainConfig, train


def pure_rate(cfg: TrainConfig, chunk: int, calls: int) -> float:
    env = make_env("gym", cfg.task, cfg.env_id, 0, {})
    obs_space, act_space = env.observation_space, env.action_space
    env.close()
    agent = SACAgent.create(0, obs_space, act_space, cfg.agent)
    batch = random_batch(obs_space, act_space.shape[0], cfg.batch_size * chunk)
    agent, _ = agent.update(batch, chunk)
    jax.block_until_ready(agent)
    t0 = time.perf_counter()
    for _ in range(calls):
        agent, info = agent.update(batch, chunk)
        jax.block_until_ready(info)
    return chunk * calls / (time.perf_counter() - t0)


def loop_rate(cfg: TrainConfig) -> dict:
    from rich.console import Console

    with tempfile.TemporaryDirectory() as run_dir:
        summary = train(dataclasses.replace(cfg, run_dir=run_dir), Console(quiet=True))
    seconds = summary["seconds"]
    updates = summary["updates"]
    without_eval = seconds["loop"] - seconds["evaluation"]
    return {
        "updates": updates,
        "updates_per_s": round(updates / seconds["loop"], 2),
        "updates_per_s_without_eval": round(updates / without_eval, 2),
        "updates_per_s_inside_update": round(updates / seconds["updates"], 2),
        "env_steps_per_s": round(cfg.total_steps / seconds["loop"], 2),
        "seconds": {
            **seconds,
            "acting_env_and_rest": round(without_eval - seconds["updates"], 2),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="Hopper-v5")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--start-steps", type=int, default=1000)
    parser.add_argument("--utd-ratio", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    cfg = TrainConfig(
        backend="gym",
        env_id=args.env_id,
        total_steps=args.steps,
        start_steps=args.start_steps,
        demos=0,
        utd_ratio=args.utd_ratio,
        eval_every=args.steps,
        checkpoint_every=10 * args.steps,
        log_every=10 * args.steps,
    )
    chunk = cfg.utd_ratio * cfg.update_every
    shares = []
    for round_ in range(args.rounds):
        pure = pure_rate(cfg, chunk, args.calls)
        loop = loop_rate(cfg)
        share = loop["updates_per_s_without_eval"] / pure
        shares.append(share)
        line = {
            "round": round_,
            "env_id": cfg.env_id,
            "batch": cfg.batch_size,
            "critic_updates_per_call": chunk,
            "num_critics": cfg.agent.num_critics,
            "pure_updates_per_s": round(pure, 2),
            **{f"loop_{k}": v for k, v in loop.items()},
            "share_of_pure": round(share, 3),
            "load_avg_1m": round(os.getloadavg()[0], 1),
        }
        print(json.dumps(line), flush=True)
    print(json.dumps({"summary": "loop_speed", "share_of_pure_median": float(np.median(shares))}))


if __name__ == "__main__":
    main()
