"""`robot-rl eval`: success rate with a 95% confidence interval, cycle time, optional MP4."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console


@dataclass
class EvalConfig:
    checkpoint: str
    """A checkpoint directory (step_*/) or a run's checkpoints/ directory (newest is used)."""
    task: str | None = None
    """Task to evaluate on; default: the task the checkpoint was trained on."""
    episodes: int = 50
    """Evaluation episodes (deterministic policy, seeded resets)."""
    seed: int = 1_000
    """Seed of the first evaluation episode's reset."""
    video: str | None = None
    """Write an MP4 of the episodes to this path."""
    video_size: int = 256
    """Side of the video frames in pixels."""
    json_out: bool = False
    """Print the result as one JSON line instead of text."""
    privileged_state: bool | None = None
    """Override the checkpoint's recorded privileged state (a checkpoint written before runs
    recorded their observation mode had it on)."""


def run(config: EvalConfig) -> int:
    console = Console(soft_wrap=True)
    from robot_rl.agents.checkpoint import (
        CheckpointError,
        latest_checkpoint,
        read_config,
        read_metadata,
        restore_agent,
    )
    from robot_rl.agents.sac import SACAgent
    from robot_rl.runtime.environments import make_env
    from robot_rl.runtime.evaluation import evaluate
    from robot_rl.runtime.observation_mode import observation_from_metadata
    from robot_rl.runtime.video import VideoRecorder

    if config.episodes < 1:
        console.print("[red]error:[/] --episodes must be >= 1")
        return 2
    path = latest_checkpoint(config.checkpoint)
    if path is None:
        console.print(f"[red]error:[/] no checkpoint at {config.checkpoint}")
        return 2
    try:
        meta = read_metadata(path)
    except CheckpointError as err:  # a damaged meta.json: one line that names it
        console.print(f"[red]error:[/] {err}")
        return 2
    task = config.task or meta.get("task")
    backend, env_id = meta.get("backend", "twin"), meta.get("env_id", "")
    try:
        # the observation mode the checkpoint was trained in, scored by the twin's ground truth
        mode = observation_from_metadata(meta, privileged_state=config.privileged_state)
        options = mode.task_options(task, ground_truth=True) if backend != "gym" else {}
        env = make_env(backend, task, env_id, config.seed, options)
        template = SACAgent.create(0, env.observation_space, env.action_space, read_config(path))
        agent = restore_agent(path, template)
    except (ValueError, CheckpointError) as err:
        console.print(f"[red]error:[/] {err}")
        return 2

    recorder = VideoRecorder(config.video, config.video_size) if config.video else None
    result = evaluate(
        agent.eval_actions,
        env,
        config.episodes,
        seed=config.seed,
        on_frame=recorder.capture if recorder else None,
    )
    env.close()
    control_hz = getattr(getattr(env, "task", None), "control_hz", None)
    label = task if backend == "twin" else env_id
    out = {"checkpoint": str(path), "task": label, "step": meta.get("step"), **result.as_dict()}
    if control_hz:
        out["cycle_time_s"] = result.length_mean / control_hz
    if recorder:
        out["video"] = str(recorder.close())
    if config.json_out:
        print(json.dumps(out))
    else:
        console.print(
            f"{label} @ {Path(path).name}: success {result.success_rate:.0%} "
            f"(95% CI {result.success_ci_low:.0%}-{result.success_ci_high:.0%}) over "
            f"{result.episodes} episodes; "
            f"return {result.return_mean:.1f} +- {result.return_std:.1f}; "
            f"episode length {result.length_mean:.1f} steps"
            + (f" = {out['cycle_time_s']:.1f} s" if control_hz else "")
        )
        if result.failure_rate:
            console.print(
                f"episodes ending in failure (crash, dropped object): {result.failure_rate:.0%}"
            )
        if result.final_info:
            console.print(
                "at episode end: "
                + ", ".join(f"{k} {v:.2f}" for k, v in sorted(result.final_info.items()))
            )
        if recorder:
            console.print(f"video: {out['video']}")
    return 0
