"""Every entry point runs for a few steps as a subprocess (an entry point nobody runs rots)."""

import json
import os
import subprocess
import sys

import pytest

ROBOT_RL = [sys.executable, "-m", "robot_rl.cli"]


def run(args, **kwargs):
    return subprocess.run(ROBOT_RL + args, capture_output=True, text=True, timeout=600, **kwargs)


@pytest.mark.parametrize("task", ["pick_cube", "peg_insert", "car_lap"])
def test_train_then_eval_on_the_twin(tmp_path, task):
    pytest.importorskip("mujoco")
    run_dir = tmp_path / "run"
    train = run(
        [
            "train",
            "--task",
            task,
            "--total-steps",
            "120",
            "--start-steps",
            "60",
            "--demos",
            "1",
            "--eval-every",
            "120",
            "--eval-episodes",
            "1",
            "--log-every",
            "60",
            "--batch-size",
            "32",
            "--run-dir",
            str(run_dir),
        ]
    )
    assert train.returncode == 0, train.stdout + train.stderr
    assert "demos: 1 successful expert episodes" in train.stdout
    assert (run_dir / "curves.png").is_file()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["final_eval"]["step"] == 120

    video = tmp_path / "episodes.mp4"
    args = ["eval", "--checkpoint", str(run_dir / "checkpoints"), "--episodes", "2", "--json-out"]
    if os.environ.get("MUJOCO_GL") == "egl":
        args += ["--video", str(video), "--video-size", "64"]
    evaluation = run(args)
    assert evaluation.returncode == 0, evaluation.stdout + evaluation.stderr
    result = json.loads(evaluation.stdout.strip().splitlines()[-1])
    assert result["task"] == task and result["episodes"] == 2
    assert 0.0 <= result["success_ci_low"] <= result["success_rate"] <= result["success_ci_high"]
    assert result["cycle_time_s"] > 0
    if os.environ.get("MUJOCO_GL") == "egl":
        assert video.stat().st_size > 1000


def test_train_refuses_bad_input_with_a_clear_message(tmp_path):
    bad = run(["train", "--task", "no_such_task", "--run-dir", str(tmp_path / "r")])
    assert bad.returncode == 2
    assert "unknown task 'no_such_task'" in bad.stderr
    assert "Traceback" not in bad.stdout + bad.stderr
    resume = run(["train", "--backend", "gym", "--resume"])
    assert resume.returncode == 2 and "--resume needs --run-dir" in resume.stderr


def test_eval_without_a_checkpoint_is_a_clear_error(tmp_path):
    result = run(["eval", "--checkpoint", str(tmp_path / "none")])
    assert result.returncode == 2 and "no checkpoint" in result.stderr  # a UserError: one line


def test_train_from_pixels_with_a_frozen_trunk_through_the_embedding_cache(tmp_path):
    pytest.importorskip("mujoco")
    if os.environ.get("MUJOCO_GL") != "egl":
        pytest.skip("camera observations need MUJOCO_GL=egl")
    run_dir = tmp_path / "run"
    result = run(
        [
            "train",
            "--task",
            "pick_cube",
            "--cameras",
            "front",
            "wrist",
            "--image-size",
            "32",
            "--agent.encoder",
            "resnet10",
            "--agent.encoder-frozen",
            "--agent.pooling",
            "avg",
            "--agent.num-critics",
            "2",
            "--total-steps",
            "40",
            "--start-steps",
            "20",
            "--demos",
            "1",
            "--eval-every",
            "40",
            "--eval-episodes",
            "1",
            "--log-every",
            "20",
            "--batch-size",
            "8",
            "--run-dir",
            str(run_dir),
        ]
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["final_eval"]["step"] == 40
