"""`robot-rl report RUN_DIR`: a run's curves and tables as report.html and curves.png."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from process_helpers import run_cli as robot_rl

from robot_rl.cli import main
from robot_rl.runtime.run_report import build_html, load_run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def make_run(directory: Path, task: str = "pick_cube", interventions: bool = False) -> Path:
    """A run directory as `robot-rl train` leaves it, written directly (no training)."""
    directory.mkdir(parents=True)
    config = {"task": task, "backend": "twin", "seed": 3, "total_steps": 400, "demos": 2,
              "utd_ratio": 2, "agent": {"num_critics": 2, "hidden_dims": [32, 32]}}  # fmt: skip
    (directory / "config.json").write_text(json.dumps(config))
    episodes = []
    for i in range(1, 5):
        episode = {"step": 100 * i, "charts/episode_return": -90.0 + 10 * i,
                   "charts/episode_length": 100.0, "charts/success": float(i >= 3)}  # fmt: skip
        if interventions:
            episode["robot/intervention_rate"] = 0.5 if i <= 2 else 0.0
        episodes.append(episode)
    update = {"step": 200, "losses/critic": 0.25, "losses/actor": -1.5, "charts/temperature": 0.01}
    _jsonl(directory / "metrics.jsonl", [*episodes[:2], update, *episodes[2:]])
    evals = [
        {"step": 200, "episodes": 10, "success_rate": 0.1, "success_ci_low": 0.018,
         "success_ci_high": 0.404, "return_mean": -80.25, "return_std": 4.5, "length_mean": 97.0,
         "failure_rate": 0.0, "final_info": {}},
        {"step": 400, "episodes": 10, "success_rate": 0.7, "success_ci_low": 0.397,
         "success_ci_high": 0.892, "return_mean": -31.5, "return_std": 12.0, "length_mean": 42.5,
         "failure_rate": 0.0, "final_info": {}},
    ]  # fmt: skip
    _jsonl(directory / "eval.jsonl", evals)
    relabel = {"labeler_queries": 7, "false_positives": 5, "classifier_updates": 1}
    summary = {"run_dir": str(directory), "episodes": 4, "final_eval": evals[-1],
               "reward_relabel": relabel}  # fmt: skip
    (directory / "summary.json").write_text(json.dumps(summary))
    for step in (200, 400):
        checkpoint = directory / "checkpoints" / f"step_{step:010d}"
        checkpoint.mkdir(parents=True)
        (checkpoint / "meta.json").write_text(json.dumps({"step": step, "episodes": step // 100}))
    return directory


def test_report_writes_html_with_the_evaluations_and_an_embedded_png(tmp_path):
    run_dir = make_run(tmp_path / "run")
    out = tmp_path / "out"
    proc = robot_rl("report", str(run_dir), "--out", str(out), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (out / "report.html").read_text()
    assert (out / "curves.png").read_bytes().startswith(PNG_MAGIC)
    assert "data:image/png;base64,iVBORw0KGgo" in page  # the PNG itself, base64
    for row in ("<td>200</td>", "10% [2%, 40%]", "-80.2 ± 4.5", "<td>400</td>", "70% [40%, 89%]",
                "-31.5 ± 12.0", "42.5"):  # fmt: skip
        assert row in page
    # the config's key fields, every key in <details>, the summary and the checkpoints
    assert "<td>utd_ratio</td><td>2</td>" in page
    assert "<details>" in page and "agent.num_critics" in page
    assert "false positives" in page and "<td>5</td>" in page
    assert "training success (last 4 episodes)</td><td>50%" in page
    assert "losses/critic 0.25" in page
    assert "episodes 2" in page and "episodes 4" in page  # checkpoints step 200, 400
    # stdout: a table of the evaluations and the paths written; nothing in the run directory
    assert "70% [40%, 89%]" in proc.stdout
    assert str(out / "report.html") in proc.stdout and str(out / "curves.png") in proc.stdout
    assert not (run_dir / "report.html").exists()


def test_report_defaults_to_the_run_directory(tmp_path, capsys):
    run_dir = make_run(tmp_path / "run", interventions=True)
    assert main(["report", str(run_dir)]) == 0
    page = (run_dir / "report.html").read_text()
    assert (run_dir / "curves.png").is_file()
    assert "intervention rate (all 4 episodes)</td><td>25%" in page
    assert str(run_dir / "report.html") in capsys.readouterr().out


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path, capsys):
    run_dir = make_run(tmp_path / "run")
    with open(run_dir / "metrics.jsonl", "a") as f:
        f.write('{"step": 500, "charts/episode_ret')  # killed mid-write
    with open(run_dir / "eval.jsonl", "a") as f:
        f.write("not json\n")
    assert main(["report", str(run_dir), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert f"{run_dir / 'metrics.jsonl'}: line 6: malformed JSON skipped" in out
    assert "torn last line" in out
    assert f"{run_dir / 'eval.jsonl'}: line 3" in out
    page = (tmp_path / "out" / "report.html").read_text()
    assert "70% [40%, 89%]" in page and "metrics.jsonl: line 6" in page
    assert (tmp_path / "out" / "curves.png").is_file()


@pytest.mark.parametrize("what", ["missing", "file", "empty"])
def test_a_path_that_is_not_a_run_directory_exits_2(tmp_path, what):
    path = tmp_path / "not_a_run"
    if what == "file":
        path.write_text("hello")
    elif what == "empty":
        (path / "logs").mkdir(parents=True)
    proc = robot_rl("report", str(path), timeout=120)
    assert proc.returncode == 2
    assert f"not a run directory: {path}" in proc.stderr
    if what == "empty":
        assert "expected config.json, metrics.jsonl, eval.jsonl" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not (path / "report.html").exists()


def test_a_stack_run_reports_its_learner_and_what_is_missing(tmp_path, capsys):
    root = tmp_path / "up"
    make_run(root / "learner")
    (root / "learner" / "summary.json").unlink()
    (root / "logs").mkdir()
    (root / "logs" / "learner.log").write_text("")
    (root / "stack.json").write_text(json.dumps([{"name": "learner", "role": "learner"}]))
    assert main(["report", str(root)]) == 0
    page = (root / "report.html").read_text()
    assert "Stack (robot-rl up)" in page and "logs/learner.log" in page
    assert "summary.json: missing" in page and "report.json: missing" in page
    assert "70% [40%, 89%]" in page
    assert "summary.json: missing" in capsys.readouterr().out


def test_only_metrics_still_report_and_a_run_with_no_data_has_no_curves(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps({"task": "car_lap"}))
    assert main(["report", str(run_dir)]) == 0
    page = (run_dir / "report.html").read_text()
    assert "No curves" in page and not (run_dir / "curves.png").exists()
    assert "eval.jsonl: missing or empty" in page


def test_strings_in_the_html_are_escaped(tmp_path):
    run = load_run(make_run(tmp_path / "run", task="<script>alert(1)</script>"))
    page = build_html(run, None)
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_report_module_needs_no_jax_ros_mujoco_or_torch():
    code = (
        "import json, sys; import robot_rl.runtime.run_report, robot_rl.commands.report\n"
        "print(json.dumps([m for m in ('jax', 'rclpy', 'mujoco', 'torch') if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
