"""Ctrl-C during training writes a checkpoint, and --resume continues from it."""

import json
import re

from process_helpers import ROBOT_RL, Proc, run_cli


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
    proc = Proc([*ROBOT_RL, *args], tmp_path / "train.log")
    try:
        # Wait until the loop runs (the first progress line), then interrupt.
        proc.wait_for(lambda: re.search(r"(^|\n)step 500/3000", proc.output()), 300, "step 500")
        code = proc.interrupt(120, group=False)
    finally:
        proc.stop()
    out = proc.output()
    assert code == 130, out
    assert "checkpoint written" in out
    checkpoints = sorted((run_dir / "checkpoints").glob("step_*"))
    assert len(checkpoints) == 1
    interrupted_at = json.loads((checkpoints[0] / "meta.json").read_text())["step"]
    assert 500 <= interrupted_at < 3000

    resumed = run_cli(*args, "--resume", timeout=600)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"at step {interrupted_at}" in resumed.stdout
    assert json.loads((run_dir / "summary.json").read_text())["final_eval"]["step"] == 3000
