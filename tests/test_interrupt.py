"""Ctrl-C during training writes a checkpoint, and --resume continues from it."""

import json
import signal
import subprocess
import sys
import time

ROBOT_RL = [sys.executable, "-m", "robot_rl.cli"]


def test_sigint_checkpoints_and_resume_finishes(tmp_path):
    run_dir = tmp_path / "run"
    args = [
        "train",
        "--backend",
        "gym",
        "--env-id",
        "Pendulum-v1",
        "--total-steps",
        "3000",
        "--start-steps",
        "2500",
        "--eval-every",
        "3000",
        "--eval-episodes",
        "1",
        "--checkpoint-every",
        "100000",
        "--log-every",
        "500",
        "--run-dir",
        str(run_dir),
    ]
    proc = subprocess.Popen(
        ROBOT_RL + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    # Wait until the loop runs (the first progress line), then interrupt.
    deadline = time.time() + 300
    for line in proc.stdout:
        if line.startswith("step 500/3000") or time.time() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert "checkpoint written" in out
    checkpoints = sorted((run_dir / "checkpoints").glob("step_*"))
    assert len(checkpoints) == 1
    interrupted_at = json.loads((checkpoints[0] / "meta.json").read_text())["step"]
    assert 500 <= interrupted_at < 3000

    resumed = subprocess.run(
        [*ROBOT_RL, *args, "--resume"], capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"at step {interrupted_at}" in resumed.stdout
    assert json.loads((run_dir / "summary.json").read_text())["final_eval"]["step"] == 3000
