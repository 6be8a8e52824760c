"""Does the embedding cache's feature-map shift help? pick_cube from pixels only (front and wrist
at 64 px, no privileged state), frozen random conv trunk with the embedding cache, the same run
with and without the one-cell shift of sampled feature maps. One JSON line per run and evaluation:
success rate at each evaluation, wall seconds.

    python benchmarks/feature_shift.py --seeds 0 1 --steps 2000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from robot_rl.agents.config import AgentConfig
from robot_rl.runtime.run_dir import EVAL_FILE


def run(seed: int, steps: int, shift: bool, batch_size: int, eval_episodes: int) -> dict:
    import robot_rl.data.embedding_cache as cache_module
    from robot_rl.runtime.train_loop import TrainConfig, train

    cache_module.MIN_SHIFT_CELLS = 8 if shift else 10**6  # 10**6: no map is ever shifted
    agent = AgentConfig(
        num_critics=10,
        critic_subsample=2,
        init_temperature=0.01,
        encoder="conv",
        encoder_frozen=True,
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as run_dir:
        summary = train(
            TrainConfig(
                task="pick_cube",
                cameras=("front", "wrist"),
                image_size=64,
                seed=seed,
                total_steps=steps,
                batch_size=batch_size,
                eval_every=max(steps // 4, 1),
                eval_episodes=eval_episodes,
                checkpoint_every=steps,
                log_every=max(steps // 4, 1),
                run_dir=run_dir,
                agent=agent,
            )
        )
        with open(f"{run_dir}/{EVAL_FILE}") as f:
            curve = [json.loads(line) for line in f]
    return {
        "benchmark": "feature_shift",
        "task": "pick_cube",
        "cameras": "front+wrist 64px",
        "encoder": "conv frozen (random), embedding cache",
        "feature_shift": shift,
        "seed": seed,
        "steps": steps,
        "batch_size": batch_size,
        "success_curve": [(e["step"], e["success_rate"]) for e in curve],
        "final_success": summary["final_eval"]["success_rate"],
        "wall_seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--shift", choices=("on", "off", "both"), default="both")
    args = parser.parse_args()
    variants = {"on": (True,), "off": (False,), "both": (False, True)}[args.shift]
    for seed in args.seeds:
        for shift in variants:
            line = run(seed, args.steps, shift, args.batch_size, args.eval_episodes)
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
