"""Runs behave as people expect (issue 28 point 5): SIGTERM stops training as Ctrl-C does
(checkpoint, one line, exit code 143), progress lines carry an ETA and stay whole lines in a log
file, a bad option is one line on stderr naming it, and Weights & Biases is optional (no import
unless asked, offline run with --wandb, one line when asked for without the package)."""

from __future__ import annotations

import importlib.util
import json
import re
import signal
import subprocess
import sys

import pytest
from process_helpers import ROBOT_RL, Proc, process_env, run_cli

from robot_rl.runtime.progress import JobProgress, format_seconds

TINY_GYM = ["train", "--backend", "gym", "--env-id", "Pendulum-v1", "--eval-episodes", "1",
            "--agent.num-critics", "2", "--agent.hidden-dims", "32", "32", "--batch-size", "32",
            "--utd-ratio", "1"]  # fmt: skip


def test_sigterm_stops_training_like_ctrl_c_with_a_checkpoint_and_143(tmp_path):
    run_dir = tmp_path / "run"
    args = [*TINY_GYM, "--total-steps", "100000", "--start-steps", "400", "--eval-every",
            "100000", "--checkpoint-every", "100000", "--log-every", "200",
            "--run-dir", str(run_dir)]  # fmt: skip
    proc = Proc([*ROBOT_RL, *args], tmp_path / "train.log")
    try:
        proc.wait_for(lambda: re.search(r"(^|\n)step 400/100000", proc.output()), 300, "step 400")
        proc.send(signal.SIGTERM, group=False)
        code = proc.wait_exit(120)
    finally:
        proc.stop()
    out = proc.output()
    assert code == 143, out
    stopped = [line for line in out.splitlines() if "stopped (SIGTERM)" in line]
    assert len(stopped) == 1 and "checkpoint written" in stopped[0], out
    assert "Traceback" not in out
    (checkpoint,) = sorted((run_dir / "checkpoints").glob("step_*"))
    assert json.loads((checkpoint / "meta.json").read_text())["step"] >= 400
    # progress lines in a log file: whole lines (no bar redrawn with \r) that carry an ETA
    assert "\r" not in out
    assert re.search(r"(^|\n)step 400/100000 .*\| ETA \d", out), out


def test_progress_off_a_terminal_is_one_line_per_update_with_an_eta():
    import io

    from rich.console import Console

    now = [0.0]
    out = io.StringIO()
    progress = JobProgress(
        "eval", 10, unit="episodes", console=Console(file=out), min_interval=5.0,
        clock=lambda: now[0],
    )  # fmt: skip
    for done in range(1, 11):
        now[0] += 2.0  # an episode every 2 s: a line at most every 5 s, and the last one
        progress.update(done, note=f"success {done}/{done}")
    lines = out.getvalue().splitlines()
    assert lines[0] == "eval 1/10 episodes (10%) | 0.5 episodes/s | ETA 18s | success 1/1"
    assert lines[-1].startswith("eval 10/10 episodes (100%)") and "ETA 0s" in lines[-1]
    assert 3 <= len(lines) <= 5
    assert format_seconds(3725) == "1h02m" and format_seconds(None) == "?"


def test_a_bad_option_value_is_one_line_on_stderr_naming_the_option():
    proc = run_cli("train", "--total-steps", "ten", timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: --total-steps: 'ten' is not an integer (see robot-rl train --help)"
    ]
    assert proc.stdout == ""


def test_without_wandb_nothing_of_it_is_imported():
    code = (
        "import sys; from robot_rl.runtime import train_loop, wandb_log; "
        "assert 'wandb' not in sys.modules, 'imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_wandb_asked_for_but_not_installed_is_one_line():
    """The package hidden from this process (sys.modules entry None): as if not installed."""
    code = (
        "import sys; sys.modules['wandb'] = None; from robot_rl.cli import main; "
        "sys.exit(main(['train', '--backend', 'gym', '--wandb', '--total-steps', '10']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
        env=process_env(), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: --wandb: the wandb package is not installed: pip install 'robot-rl[wandb]' "
        "(or leave --wandb out; TensorBoard logs are always written)"
    ]


def test_wandb_logs_an_offline_run_beside_tensorboard(tmp_path):
    if importlib.util.find_spec("wandb") is None:
        pytest.skip("wandb is not installed (the wandb extra; scripts/setup.sh installs it)")
    run_dir = tmp_path / "run"
    args = [*TINY_GYM, "--total-steps", "300", "--start-steps", "250", "--eval-every", "300",
            "--log-every", "100", "--run-dir", str(run_dir), "--wandb",
            "--wandb-project", "robot-rl-test"]  # fmt: skip
    env = process_env({"WANDB_MODE": "offline", "WANDB_SILENT": "true"})
    done = subprocess.run(
        [*ROBOT_RL, *args], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert list((run_dir / "tb").iterdir()), "TensorBoard still written"
    offline = list((run_dir / "wandb").glob("offline-run-*"))
    assert len(offline) == 1, list((run_dir / "wandb").iterdir())
    assert list(offline[0].glob("*.wandb")), "the run's records"
