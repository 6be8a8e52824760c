"""Checkpoints of a forward-backward run (``robot-rl train-fb``) and ``--resume`` from them.

Each direction's checkpoint is an ordinary one of ``robot-rl train`` (``save_checkpoint``: agent
with its optimiser states, replay and demo buffers, metadata), so ``robot-rl eval --checkpoint
<run_dir>/forward/checkpoints`` reads it; its meta.json also holds that direction's counters.
Both are written at the same global step, then ``<run_dir>/fb_state.json`` (tmp file, fsync,
rename) names that step with the shared loop state and the config. It is written last, so it
always names a complete pair: a crash between the two directions' writes leaves the previous
pair in force, and ``--resume`` loads exactly the named step for both.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

from robot_rl.agents.checkpoint import AGENT_FILE, config_differences, list_checkpoints
from robot_rl.runtime.run_dir import EVAL_FILE, METRICS_FILE

STATE_FILE = "fb_state.json"
RESUME_FIELDS = ("task", "backward_task", "replay_capacity")
"""Config fields (besides the agent's) a resumed run must share with the checkpoint; the demo
buffer's capacity follows from replay_capacity."""


def checkpoint_dir(run_dir: Path, name: str) -> Path:
    return run_dir / name / "checkpoints"


def step_dir(run_dir: Path, name: str, step: int) -> Path:
    return checkpoint_dir(run_dir, name) / f"step_{step:010d}"


def config_json(cfg) -> dict:
    values = json.loads(json.dumps(dataclasses.asdict(cfg), default=str))
    values["backward_task"] = cfg.backward_name
    return values


def save_direction(d, directory: Path, step: int, seed: int) -> None:
    """A checkpoint `robot-rl eval --checkpoint <dir>` reads like one of `robot-rl train`'s,
    with the direction's counters for --resume."""
    task = d.env.task
    metadata = {
        "task": task.name,
        "backend": "twin",
        "env_id": "",
        "cameras": list(task.cameras),
        "image_size": task.image_size,
        "seed": seed,
        "direction": d.name,
        **d.state_dict(),
    }
    d.core.save(directory, step, metadata)


def save_pair(run_dir: Path, cfg, directions, step: int, loop_state: dict) -> None:
    """Both directions at ``step``, then the state file naming that step (atomically)."""
    for d in directions:
        save_direction(d, checkpoint_dir(run_dir, d.name), step, cfg.seed)
    data = json.dumps({"step": step, **loop_state, "config": config_json(cfg)}, indent=2)
    tmp = run_dir / f".{STATE_FILE}.tmp"
    with open(tmp, "w") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, run_dir / STATE_FILE)


def read_state(run_dir: Path, cfg) -> dict:
    """The state of the last complete pair; a clear error when there is none or when it was
    written with a config that differs in a field that matters."""
    path = run_dir / STATE_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"--resume: no train-fb checkpoint in {run_dir} ({STATE_FILE} is missing)"
        )
    state = json.loads(path.read_text())
    saved, now = state["config"], config_json(cfg)
    differences = [
        f"{k}: checkpoint has {saved.get(k)!r}, this run has {now[k]!r}"
        for k in RESUME_FIELDS
        if saved.get(k) != now[k]
    ]
    differences += [f"agent.{d}" for d in config_differences(saved.get("agent", {}), cfg.agent)]
    if differences:
        raise ValueError(
            f"--resume: {run_dir} was trained with another configuration:\n  "
            + "\n  ".join(differences)
        )
    for name in ("forward", "backward"):
        if not (step_dir(run_dir, name, state["step"]) / AGENT_FILE).is_file():
            raise FileNotFoundError(
                f"--resume: {STATE_FILE} names step {state['step']}, but "
                f"{step_dir(run_dir, name, state['step'])} is missing"
            )
    return state


def restore_pair(run_dir: Path, cfg, directions, step: int) -> None:
    """Load both directions at ``step`` (agent, buffers, counters), drop checkpoints newer than
    it (a pair whose write did not complete) and log lines after it (they happen again)."""
    for d in directions:
        checkpoint = step_dir(run_dir, d.name, step)
        d.load_state(d.core.restore(checkpoint))
        for path in list_checkpoints(checkpoint_dir(run_dir, d.name)):
            if int(path.name.removeprefix("step_")) > step:
                shutil.rmtree(path, ignore_errors=True)
        for log in (run_dir / d.name / METRICS_FILE, run_dir / d.name / EVAL_FILE):
            if log.is_file():
                lines = log.read_text().splitlines(keepends=True)
                kept = [line for line in lines if _logged_step(line) <= step]
                if len(kept) < len(lines):
                    log.write_text("".join(kept))


def _logged_step(line: str) -> float:
    """A log line's step; a line cut short by a crash counts as after every step."""
    try:
        return json.loads(line)["step"]
    except (ValueError, KeyError, TypeError):
        return float("inf")
