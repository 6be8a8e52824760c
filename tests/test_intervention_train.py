"""`robot-rl train --interventions sim`: the simulated human's corrections reach both buffers and
the per-episode intervention figures are logged and printed."""

import json
import subprocess
import sys

import numpy as np
import pytest

from robot_rl.agents.checkpoint import latest_checkpoint
from robot_rl.data.replay import ReplayBuffer


def test_train_with_simulated_interventions(tmp_path):
    pytest.importorskip("mujoco")
    run_dir = tmp_path / "run"
    args = [
        *("train", "--task", "pick_cube", "--interventions", "sim"),
        *("--total-steps", "120", "--start-steps", "60", "--demos", "1"),
        *("--eval-every", "120", "--eval-episodes", "1", "--log-every", "60"),
        *("--batch-size", "16", "--utd-ratio", "1", "--agent.num-critics", "2"),
        *("--run-dir", str(run_dir)),
    ]
    result = subprocess.run(
        [sys.executable, "-m", "robot_rl.cli", *args], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "interventions (last 20)" in result.stdout

    episodes = [
        json.loads(line)
        for line in (run_dir / "metrics.jsonl").read_text().splitlines()
        if "charts/episode_length" in line
    ]
    assert episodes and all("robot/intervention_rate" in e for e in episodes)
    for e in episodes:
        assert 0.0 <= e["robot/intervention_rate"] <= 1.0
        rate_seconds = e["robot/intervention_rate"] * e["charts/episode_length"] / 10.0
        assert e["robot/intervention_seconds"] == pytest.approx(rate_seconds)

    checkpoint = latest_checkpoint(run_dir / "checkpoints")
    replay = ReplayBuffer.load(checkpoint / "replay.npz")
    demos = ReplayBuffer.load(checkpoint / "demos.npz")
    online = replay.gather(np.arange(len(replay)))["intervened"]
    demo_flags = demos.gather(np.arange(len(demos)))["intervened"]
    assert len(replay) == 120 and online.any()
    # the scripted demonstration first, then every intervened online step, in order
    assert demo_flags.sum() == online.sum() == len(demos) - (~demo_flags).sum()
    assert not demo_flags[: (~demo_flags).sum()].any()


def test_interventions_need_the_twin():
    from robot_rl.runtime.recipes import resolve
    from robot_rl.runtime.train_loop import TrainConfig

    cfg = resolve(TrainConfig(backend="gym", interventions="sim"))
    with pytest.raises(ValueError, match="--interventions sim needs the twin"):
        cfg.validate()
