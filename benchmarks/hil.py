"""Human in the loop, measured in the twin: env steps to 90% success with and without the
simulated human's interventions (state observations, the task's recipe: 20 demonstrations).

    python benchmarks/hil.py [--quick] [--tasks pick_cube] [--seeds 0,1,2]

Each run trains with `robot-rl train`'s loop (``--interventions off`` or ``sim``) and stops at the
first evaluation of the deterministic policy, which acts alone, at or above --target success.
One JSON line per run, with the success curve and the intervention-rate curve (intervened steps
over all training steps, per evaluation window); one summary line per task and mode; one line
comparing the two (steps with / steps without: below 1 means interventions speed learning up).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sample_efficiency import add_arguments, configure, run_to_target, spread

from robot_rl.envs.intervention import INTERVENTION_RATE
from robot_rl.runtime.run_dir import EVAL_FILE, METRICS_FILE

MODES = ("off", "sim")


def read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def curves(run_dir: str, eval_every: int) -> dict:
    """Success per evaluation and the intervention rate per evaluation window of a run."""
    run = Path(run_dir)
    success = [[e["step"], e["success_rate"]] for e in read_jsonl(run / EVAL_FILE)]
    windows: dict[int, list[float]] = {}  # window end -> [intervened steps, steps]
    for record in read_jsonl(run / METRICS_FILE):
        if INTERVENTION_RATE not in record:
            continue
        end = -(-record["step"] // eval_every) * eval_every
        length = record["charts/episode_length"]
        tally = windows.setdefault(end, [0.0, 0.0])
        tally[0] += record[INTERVENTION_RATE] * length
        tally[1] += length
    rate = [[end, round(i / n, 4)] for end, (i, n) in sorted(windows.items()) if n]
    return {"success_curve": success, "intervention_rate_curve": rate}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser, "pick_cube")
    parser.set_defaults(eval_every=1000)
    args = parser.parse_args(argv)
    for task in args.tasks.split(","):
        means = {}
        for mode in MODES:
            runs = []
            for seed in (int(s) for s in args.seeds.split(",")):
                cfg = configure(task, seed, args)
                cfg.interventions = mode
                run = run_to_target(cfg, args.target, lambda d, e=cfg.eval_every: curves(d, e))
                runs.append(run)
                name = f"{task}_{mode}_seed{seed}"
                line = {"config": name, "task": task, "interventions": mode, "seed": seed, **run}
                print(json.dumps(line), flush=True)
            summary = spread(runs)
            means[mode] = summary["env_steps_mean"]
            head = {"config": f"{task}_{mode}_summary", "task": task, "interventions": mode}
            print(json.dumps({**head, "target_success": args.target, **summary}), flush=True)
        comparison = {
            "config": f"{task}_hil_vs_off",
            "task": task,
            "steps_ratio_sim_over_off": round(means["sim"] / means["off"], 3),
        }
        print(json.dumps(comparison), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
