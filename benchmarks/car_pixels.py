"""car_lap from pixels in the twin: lap time and crash rate at fixed step counts, per seed, against
the scripted expert's lap.

    nice -n 10 python benchmarks/car_pixels.py train --seed 0 [--steps 10000 --every 2000]
    python benchmarks/car_pixels.py evaluate --seeds 0,1,2      # JSON lines to --results

What the policy observes: the forward camera (the only image, ``--image-size`` px) and the
13-vector of car_lap, whose checkpoint directions come from the car's own odometry (wheel speed and
IMU yaw rate integrated from where it was put down, drifting), never from the twin's true pose.
The agent is the car_lap recipe (RLPD: 10 critics, UTD 2, 5 scripted-expert demonstrations) with a
frozen, randomly initialised conv trunk whose features the embedding cache computes once per
frame (``--encoder conv`` trains the trunk instead, ~4x slower per update here).

``train`` writes a checkpoint every ``--every`` steps into ``<runs>/seed<N>``; ``evaluate`` runs
every checkpoint found (and the expert) on ``--episodes`` evaluation episodes (30 s each, fixed
seeds) and appends one JSON line per (seed, steps): the mean and best time of the laps finished,
the share of episodes with a finished lap, the crash rate (episodes ended by the car's own crash
or stuck detection), the twin's wall-contact rate (ground truth, evaluation only), the expert's
lap time on the same episodes and the training wall seconds up to that checkpoint.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results" / "car_pixels"


def train_config(args):
    from robot_rl.agents.config import AgentConfig
    from robot_rl.runtime.recipes import task_recipe

    agent = AgentConfig(
        num_critics=10,
        critic_subsample=2,
        init_temperature=0.01,
        encoder_frozen=args.encoder == "frozen",
    )
    return task_recipe(
        "car_lap",
        seed=args.seed,
        cameras=("front",),
        image_size=args.image_size,
        checkpoints=args.checkpoints,
        total_steps=args.steps,
        eval_every=10 * args.steps,
        eval_episodes=1,
        checkpoint_every=args.every,
        log_every=500,
        run_dir=str(Path(args.runs) / f"seed{args.seed}"),
        agent=agent,
    )


def train(args) -> None:
    from robot_rl.runtime.train_loop import train as run

    started = time.time()
    run_dir = Path(args.runs) / f"seed{args.seed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "started").write_text(f"{started}\n")
    run(train_config(args))
    print(
        json.dumps(
            {"seed": args.seed, "steps": args.steps, "wall_s": round(time.time() - started, 1)}
        )
    )


def lap_figures(policy, env, episodes: int, seed: int) -> dict:
    """Run ``episodes`` evaluation episodes; the laps, crashes and wall contacts seen."""
    laps, with_lap, crashes, contacts = [], 0, 0, 0
    for episode in range(episodes):
        obs, info = env.reset(seed=seed + episode)
        done_laps, contact, lapped = 0, False, False
        while True:
            obs, _, terminated, truncated, info = env.step(policy(env, obs))
            contact = contact or bool(env.reading.get("collision", [0.0])[0] > 0.5)
            if info["laps"] > done_laps:
                done_laps = info["laps"]
                laps.append(float(info["lap_time"]))
                lapped = True
            if terminated or truncated:
                break
        with_lap += int(lapped)
        crashes += int(terminated)
        contacts += int(contact)
    return {
        "lap_time": round(float(np.mean(laps)), 2) if laps else None,
        "best_lap_time": round(float(np.min(laps)), 2) if laps else None,
        "laps": len(laps),
        "lap_rate": with_lap / episodes,
        "crash_rate": crashes / episodes,
        "contact_rate": contacts / episodes,
    }


def evaluation_env(meta: dict, checkpoints: str | None):
    from robot_rl.runtime.environments import make_env
    from robot_rl.runtime.observation_mode import observation_from_metadata

    mode = observation_from_metadata(meta, checkpoints=checkpoints)
    return make_env("twin", "car_lap", "", 0, mode.task_options("car_lap", ground_truth=True))


def evaluate(args) -> None:
    from robot_rl.agents.checkpoint import list_checkpoints, read_metadata, restore_agent
    from robot_rl.agents.pretrained import create_agent
    from robot_rl.sim import make_expert

    RESULTS.mkdir(parents=True, exist_ok=True)
    out = Path(args.results)
    expert_figures = None
    for seed in [int(s) for s in args.seeds.split(",")]:
        run_dir = Path(args.runs) / f"seed{seed}"
        found = list_checkpoints(run_dir / "checkpoints")
        if not found:
            print(f"seed {seed}: no checkpoint in {run_dir}")
            continue
        started = float((run_dir / "started").read_text())
        for checkpoint in found:
            meta = read_metadata(checkpoint)
            env = evaluation_env(meta, args.checkpoints)
            if expert_figures is None:
                expert = make_expert(env.task)
                expert_figures = lap_figures(
                    lambda e, o, x=expert: x.act(e.reading), env, args.episodes, args.eval_seed
                )
                env.close()
                env = evaluation_env(meta, args.checkpoints)
            args.seed = seed
            template = create_agent(
                seed,
                env.observation_space,
                env.action_space,
                train_config(args).agent,
                load_weights=False,
            )
            agent = restore_agent(checkpoint, template)
            figures = lap_figures(
                lambda e, o, a=agent: a.eval_actions(o), env, args.episodes, args.eval_seed
            )
            env.close()
            line = {
                "seed": seed,
                "steps": meta["step"],
                **figures,
                "expert_lap_time": expert_figures["lap_time"],
                "expert_crash_rate": expert_figures["crash_rate"],
                "faster_than_expert": bool(
                    figures["best_lap_time"] is not None
                    and figures["best_lap_time"] < expert_figures["lap_time"]
                ),
                "wall_s": round((checkpoint / "meta.json").stat().st_mtime - started, 1),
                "episodes": args.episodes,
                "image_size": meta["image_size"],
                "encoder": args.encoder,
            }
            print(json.dumps(line), flush=True)
            with out.open("a") as stream:
                stream.write(json.dumps(line) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["train", "evaluate"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=2_000, help="steps between checkpoints")
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--encoder", choices=["frozen", "conv"], default="frozen")
    parser.add_argument("--checkpoints", default=None, help="car_lap checkpoints file")
    parser.add_argument("--episodes", type=int, default=5, help="evaluation episodes")
    parser.add_argument("--eval-seed", type=int, default=10_000)
    parser.add_argument("--runs", default="runs/car_pixels")
    parser.add_argument("--results", default=str(RESULTS / "results.jsonl"))
    args = parser.parse_args()
    train(args) if args.command == "train" else evaluate(args)


if __name__ == "__main__":
    main()
