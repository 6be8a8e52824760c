"""car_lap from pixels in the twin: lap time and crash rate at fixed step counts, per seed, against
the scripted expert's lap.

    nice -n 10 python benchmarks/car_pixels.py train --seed 0 [--steps 10000 --every 2000]
    python benchmarks/car_pixels.py evaluate --seeds 0,1,2      # JSON lines to --results
    python benchmarks/car_pixels.py cost                        # s/step, frozen vs trained trunk

What the policy observes: the forward camera (the only image, ``--image-size`` px) and the
13-vector of car_lap, whose checkpoint directions come from the car's own odometry (wheel speed and
IMU yaw rate integrated from where it was put down, drifting), never from the twin's true pose.
The agent is the car_lap recipe with the pixel recipe (RLPD: 10 critics, UTD 2, batches of 64,
500 random steps, 5 scripted-expert demonstrations) with a frozen, randomly initialised conv trunk
whose features the embedding cache computes once per frame (``--encoder conv`` trains the trunk
instead; ``cost`` measures both).

``train`` writes a checkpoint every ``--every`` steps into ``<runs>/seed<N>`` (the training loop
keeps the newest 3: run ``evaluate`` while training goes on, it skips what it has done);
``evaluate`` runs every checkpoint found (and the expert) on ``--episodes`` evaluation episodes (30
s each, fixed seeds) and appends one JSON line per (seed, steps): the mean and best time of the
laps finished, the share of episodes with a finished lap, the crash rate (episodes ended by the
car's own crash or stuck detection; ``train_crash_rate``: the same over the training episodes of
the last ``--every`` steps, exploration included), the twin's wall-contact rate (ground truth,
evaluation only), the expert's lap time on the same episodes and the training wall seconds up to
that checkpoint. Laps are counted by the task (on the car's odometry) and, as a check, by the
twin's true pose (``true_laps``, ``true_lap_time``: full turns along the track's centreline).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results" / "car_pixels"


def train_config(args):
    from task_recipes import task_recipe

    from robot_rl.agents.config import AgentConfig

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


class TrueLaps:
    """Ground truth for evaluation only: laps by the twin's true pose, as progress along the
    track's centreline, so a lap the task counts on its drifting odometry can be checked."""

    def __init__(self, control_hz: float):
        from robot_rl.sim.car_track import DEFAULT_TRACK, centreline

        self.line, self.control_hz = centreline(DEFAULT_TRACK), control_hz
        self.index = self.progress = self.steps = self.last_lap_step = 0
        self.times: list[float] = []

    def start(self, reading: dict) -> None:
        self.index = self.line.nearest(reading["pose"])
        self.progress = self.steps = self.last_lap_step = 0

    def update(self, reading: dict) -> None:
        index = self.line.nearest(reading["pose"])
        n = len(self.line)
        step = (index - self.index + n // 2) % n - n // 2  # signed, wrap-aware
        self.index, self.steps = index, self.steps + 1
        self.progress += step
        if self.progress >= n:  # one more full turn of the track
            self.progress -= n
            self.times.append((self.steps - self.last_lap_step) / self.control_hz)
            self.last_lap_step = self.steps


def lap_figures(policy, env, episodes: int, seed: int) -> dict:
    """Run ``episodes`` evaluation episodes; the laps, crashes and wall contacts seen."""
    laps, with_lap, crashes, contacts = [], 0, 0, 0
    truth = TrueLaps(env.task.control_hz)
    for episode in range(episodes):
        obs, info = env.reset(seed=seed + episode)
        truth.start(env.reading)
        done_laps, contact, lapped = 0, False, False
        while True:
            obs, _, terminated, truncated, info = env.step(policy(env, obs))
            truth.update(env.reading)
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
    true = truth.times
    return {
        "lap_time": round(float(np.mean(laps)), 2) if laps else None,
        "best_lap_time": round(float(np.min(laps)), 2) if laps else None,
        "laps": len(laps),
        "lap_rate": with_lap / episodes,
        "crash_rate": crashes / episodes,
        "contact_rate": contacts / episodes,
        "true_laps": len(true),
        "true_lap_time": round(float(np.mean(true)), 2) if true else None,
    }


def training_crash_rate(run_dir: Path, step: int, window: int, max_length: int) -> float | None:
    """Share of the training episodes that ended in the ``window`` steps before ``step`` on a
    crash or stuck (an episode shorter than the time limit: car_lap ends on nothing else)."""
    lengths = []
    with (run_dir / "metrics.jsonl").open() as stream:
        for line in stream:
            row = json.loads(line)
            if "charts/episode_length" in row and step - window < row["step"] <= step:
                lengths.append(row["charts/episode_length"])
    return round(float(np.mean([n < max_length for n in lengths])), 3) if lengths else None


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
    done = set()  # (seed, steps) already in the results file: evaluated while training went on
    if out.is_file():
        done = {(r["seed"], r["steps"]) for r in map(json.loads, out.read_text().splitlines())}
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
            if (seed, meta["step"]) in done:
                continue
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
                "expert_true_lap_time": expert_figures["true_lap_time"],
                "faster_than_expert": bool(
                    figures["best_lap_time"] is not None
                    and figures["best_lap_time"] < expert_figures["lap_time"]
                ),
                "train_crash_rate": training_crash_rate(
                    run_dir, meta["step"], args.every, env.task.max_episode_steps
                ),
                "wall_s": round((checkpoint / "meta.json").stat().st_mtime - started, 1),
                "episodes": args.episodes,
                "image_size": meta["image_size"],
                "encoder": args.encoder,
            }
            print(json.dumps(line), flush=True)
            with out.open("a") as stream:
                stream.write(json.dumps(line) + "\n")


def expert(args) -> None:
    """The scripted expert alone on the evaluation episodes: its full figures (also the true
    laps) as one JSON line in ``expert.jsonl``."""
    from robot_rl.sim import make_expert

    meta = {"task": "car_lap", "observation": {"cameras": ["front"], "image_size": args.image_size}}
    env = evaluation_env(meta, args.checkpoints)
    try:
        driver = make_expert(env.task)
        figures = lap_figures(
            lambda e, o: driver.act(e.reading), env, args.episodes, args.eval_seed
        )
    finally:
        env.close()
    line = {"policy": "scripted expert", "episodes": args.episodes, **figures}
    print(json.dumps(line), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    with (RESULTS / "expert.jsonl").open("a") as stream:
        stream.write(json.dumps(line) + "\n")


def cost(args) -> None:
    """Seconds per training step (acting, rendering and RLPD updates) once updates run, for a
    short run of each trunk: what a budget of steps costs on this machine."""
    import io
    import re
    import tempfile

    from rich.console import Console

    from robot_rl.runtime.train_loop import train as run

    RESULTS.mkdir(parents=True, exist_ok=True)
    for encoder in ("frozen", "conv"):
        with tempfile.TemporaryDirectory() as runs:
            args.encoder, args.runs, args.seed = encoder, runs, 0
            cfg = train_config(args)
            # random steps first, then the same number with updates: the second progress line
            # is the rate of the learning phase alone
            cfg.total_steps, cfg.start_steps, cfg.demos = 2 * args.cost_steps, args.cost_steps, 0
            cfg.log_every, cfg.checkpoint_every = args.cost_steps, 10 * cfg.total_steps
            cfg.eval_every = 10 * cfg.total_steps
            console = Console(record=True, file=io.StringIO(), width=1000)
            run(cfg, console=console)
            rates = re.findall(r"([\d.]+) env steps/s \| ([\d.]+) updates/s", console.export_text())
        steps_per_s, updates_per_s = (float(v) for v in rates[-1])
        line = {
            "encoder": encoder,
            "image_size": args.image_size,
            "steps": args.cost_steps,
            "env_steps_per_s": steps_per_s,
            "updates_per_s": updates_per_s,
            "s_per_step": round(1 / steps_per_s, 3),
            "utd": cfg.utd_ratio,
            "critics": cfg.agent.num_critics,
            "batch": cfg.batch_size,
        }
        print(json.dumps(line), flush=True)
        with (RESULTS / "cost.jsonl").open("a") as stream:
            stream.write(json.dumps(line) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["train", "evaluate", "expert", "cost"])
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
    parser.add_argument("--cost-steps", type=int, default=400, help="cost: steps timed")
    args = parser.parse_args()
    {"train": train, "evaluate": evaluate, "expert": expert, "cost": cost}[args.command](args)


if __name__ == "__main__":
    main()
