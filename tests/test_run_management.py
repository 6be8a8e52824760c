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
from pathlib import Path

import pytest
from process_helpers import ROBOT_RL, Proc, process_env, run_cli

from robot_rl.runtime.progress import Every, JobProgress, PerSecond, format_seconds, on_stop

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


def test_the_loops_bookkeeping_keeps_its_grid_its_rates_and_its_final_save():
    steps = Every(500, start=523)  # a run resumed at step 523 logs at 1000, 1500, ...
    assert [s for s in range(524, 2001) if steps.due(s)] == [1000, 1500, 2000]
    seconds = Every(5.0, 100.0, grid=False)  # 5 s after the start, then after each line
    assert [t for t in (104.0, 105.5, 108.0, 110.6) if seconds.due(t)] == [105.5, 110.6]
    now = [0.0]
    rate = PerSecond(10, clock=lambda: now[0])
    now[0] = 2.0
    assert rate(30) == 10.0 and rate(30) == 0.0
    saved = []
    with pytest.raises(KeyboardInterrupt), on_stop(lambda: saved.append("checkpoint")):
        raise KeyboardInterrupt
    assert saved == ["checkpoint"]


def test_recording_and_classifier_training_show_progress_with_an_eta(tmp_path, capsys):
    """record-demos, record-labels and train-reward (here on the twin): whole progress lines
    with an ETA off a terminal, the classifier's on stderr (its stdout may be JSON)."""
    pytest.importorskip("mujoco")
    from robot_rl.cli import main

    demos, labels = tmp_path / "demos", tmp_path / "labels.npz"
    assert main(["record-demos", "--task", "pick_cube", "--episodes", "2",
                 "--out", str(demos)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert re.search(r"(^|\n)record-demos 2/2 demos \(100%\) .*\| ETA 0s \| \d+ attempts", out), out
    assert main(["record-labels", "--task", "pick_cube", "--episodes", "4", "--camera", "front",
                 "--image-size", "32", "--out", str(labels)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert re.search(r"(^|\n)record-labels 4/4 episodes \(100%\) .*\| ETA 0s \| \d+ frames", out)
    assert main(["train-reward", "--labels", str(labels), "--steps", "20", "--hidden-dim", "8",
                 "--out", str(tmp_path / "classifier"), "--json-out"]) == 0  # fmt: skip
    captured = capsys.readouterr()
    json.loads(captured.out.strip().splitlines()[-1])  # stdout: the result alone
    assert re.search(r"(^|\n)train-reward 20/20 steps \(100%\) .*\| ETA 0s \| loss", captured.err)
    assert "\r" not in out + captured.err


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


# ------------------------------------------------------------------ errors: one line on stderr


def _one_error_line(done: subprocess.CompletedProcess, *names: str) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for name in names:
        assert name in lines[0], lines[0]
    return lines[0]


def test_hardware_files_are_found_by_name_here_and_under_an_installed_prefix(tmp_path, monkeypatch):
    from robot_rl.hardware import find_hardware, load_hardware

    root = Path(__file__).resolve().parents[1]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert find_hardware("fr3_sim") == root / "hardware" / "fr3_sim.yaml"
    assert find_hardware("fr3_sim.yaml") == root / "hardware" / "fr3_sim.yaml"
    # a wheel's copies: share/robot_rl/hardware under a ROS 2 prefix
    prefix = tmp_path / "prefix"
    installed = prefix / "share" / "robot_rl" / "hardware"
    installed.mkdir(parents=True)
    (installed / "my_cell.yaml").write_text((root / "hardware" / "fr3_sim.yaml").read_text())
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(prefix))
    assert find_hardware("my_cell") == installed / "my_cell.yaml"
    assert load_hardware("my_cell").robot_namespace
    with pytest.raises(ValueError) as err:
        find_hardware("no_such_cell")
    assert "no hardware file at no_such_cell" in str(err.value)
    assert "fr3_sim" in str(err.value) and "my_cell" in str(err.value)


def test_a_broken_hardware_file_is_one_line_naming_it_and_refused_first(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("robot:\n  kind: [unclosed\n")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"robot:\n  kind: caf\xe9\n")
    line = _one_error_line(run_cli("up", "robot", "--hardware", str(bad), timeout=300), str(bad))
    assert "not valid YAML at line 3, column 1" in line
    line = _one_error_line(run_cli("up", "robot", "--hardware", str(latin)), str(latin))
    assert "not UTF-8" in line
    # missing: said first, before the refusals of the task and the reward source
    line = _one_error_line(
        run_cli("up", "robot", "--hardware", str(tmp_path / "gone.yaml")), "gone.yaml"
    )
    assert line.startswith("error: no hardware file at")


def test_record_demos_without_the_ros_message_definitions_is_one_line(tmp_path):
    """As without the ros extra: no .msg files found (share_dirs() empty in that process)."""
    code = (
        "import sys; import robot_rl.data.ros_schemas as s; s.share_dirs = lambda: []; "
        "from robot_rl.cli import main; "
        f"sys.exit(main(['record-demos', '--episodes', '1', '--out', {str(tmp_path / 'd')!r}]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
        env=process_env(), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    line = _one_error_line(done, "sensor_msgs/msg/Image.msg")
    assert "pip install -e '.[ros]'" in line
    assert not (tmp_path / "d").exists() or not list((tmp_path / "d").iterdir())


@pytest.fixture(scope="module")
def gym_run(tmp_path_factory):
    """A tiny Hopper-free gym run (Pendulum-v1): the checkpoint and the run folder."""
    run_dir = tmp_path_factory.mktemp("gym") / "run"
    args = [*TINY_GYM, "--total-steps", "300", "--start-steps", "250", "--eval-every", "300",
            "--log-every", "100", "--run-dir", str(run_dir)]  # fmt: skip
    done = run_cli(*args, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return run_dir


def test_eval_video_of_a_gym_checkpoint_is_one_line(gym_run, tmp_path):
    done = run_cli(
        "eval", "--checkpoint", str(gym_run / "checkpoints"), "--episodes", "1",
        "--video", str(tmp_path / "v.mp4"),
    )  # fmt: skip
    _one_error_line(done, "--video", "Pendulum-v1")


def test_eval_shows_progress_with_an_eta_per_episode(gym_run):
    done = run_cli("eval", "--checkpoint", str(gym_run / "checkpoints"), "--episodes", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("eval ")]
    assert lines and lines[-1].startswith("eval 2/2 episodes (100%)"), done.stderr
    assert all("ETA" in line for line in lines)


def test_a_gym_run_is_labelled_by_its_env_and_reports_returns(gym_run):
    """Issue 28 point 7: no 'pick_cube' label, no success figures where the env has none."""
    config = json.loads((gym_run / "config.json").read_text())
    assert config["task"] == "Pendulum-v1"
    evals = [json.loads(line) for line in (gym_run / "eval.jsonl").read_text().splitlines()]
    assert evals and all(e["success_signal"] is False for e in evals)
    metrics = (gym_run / "metrics.jsonl").read_text()
    assert "charts/episode_return" in metrics and "charts/success" not in metrics
    assert (gym_run / "curves.png").is_file()
    done = run_cli("eval", "--checkpoint", str(gym_run / "checkpoints"), "--episodes", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Pendulum-v1" in done.stdout and "return" in done.stdout
    assert "success" not in done.stdout and "failure" not in done.stdout
