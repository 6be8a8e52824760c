"""Damaged files get one line that names them, not a traceback (issue 14, point 7), for every
command that reads them: train --resume, learner --resume, eval. And --resume on a run
directory that holds nothing to resume says so instead of starting a fresh run.

The commands run in this process (``robot_rl.cli.main``, what the console script calls): the
exit code and the one line are the same, without an interpreter and JAX to start per call."""

from __future__ import annotations

import contextlib
import io
import logging
import shutil
import signal
import subprocess

import pytest
from process_helpers import SMALL_AGENT
from transport_fixtures import free_endpoint

from robot_rl.agents.checkpoint import latest_checkpoint
from robot_rl.transport.ingest_log import IngestLog

TRAIN = ["--task", "pick_cube", "--start-steps", "40", "--demos", "0", "--eval-every", "80",
         "--eval-episodes", "1", "--log-every", "40", "--batch-size", "32",
         "--agent.num-critics", "2", "--agent.hidden-dims", "32", "32"]  # fmt: skip


def cli_in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``robot-rl ARGS`` in this process: its exit code, and what it printed (stdout; stderr
    with whatever it logged, tracebacks included, as a process's stderr would hold them:
    pytest's handlers on the root logger make the command's ``logging.basicConfig`` a no-op)."""
    from robot_rl.cli import main

    out, err = io.StringIO(), io.StringIO()
    logged = logging.StreamHandler(err)
    logged.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(logged)
    sigterm = signal.getsignal(signal.SIGTERM)  # main() installs its own
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        signal.signal(signal.SIGTERM, sigterm)
        root.removeHandler(logged)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def _truncate(path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _one_line_naming(result, name: str, code: int = 2) -> None:
    out = result.stdout + result.stderr
    assert result.returncode == code, out
    assert "Traceback" not in out, out
    lines = [line for line in out.splitlines() if name in line]
    assert lines and lines[0].startswith("error:"), out


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    pytest.importorskip("mujoco")
    run_dir = tmp_path_factory.mktemp("trained") / "run"
    result = cli_in_process("train", *TRAIN, "--total-steps", "80", "--run-dir", str(run_dir))
    assert result.returncode == 0, result.stdout + result.stderr
    return run_dir


@pytest.fixture
def copy(trained, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(trained, run_dir)
    return run_dir


@pytest.mark.parametrize("name", ["replay.npz", "demos.npz", "agent.msgpack", "meta.json"])
def test_train_resume_names_a_damaged_checkpoint_file(copy, name):
    _truncate(latest_checkpoint(copy / "checkpoints") / name)
    resume = ["--total-steps", "160", "--run-dir", str(copy), "--resume"]
    result = cli_in_process("train", *TRAIN, *resume)
    _one_line_naming(result, name)


@pytest.mark.parametrize("name", ["meta.json", "config.json", "agent.msgpack"])
def test_eval_names_a_damaged_checkpoint_file(copy, name):
    _truncate(latest_checkpoint(copy / "checkpoints") / name, keep=0.3)
    result = cli_in_process("eval", "--checkpoint", str(copy / "checkpoints"), "--episodes", "1")
    _one_line_naming(result, name)


def _learner(run_dir, *extra):
    return cli_in_process(
        "learner", "--task", "pick_cube", "--run-dir", str(run_dir), "--bind", free_endpoint(),
        "--demos", "0", "--total-steps", "1", "--start-steps", "1000", *SMALL_AGENT, *extra,
    )  # fmt: skip


def test_learner_resume_without_anything_to_resume_says_so(tmp_path):
    result = _learner(tmp_path / "empty", "--resume")
    out = result.stdout + result.stderr
    assert result.returncode == 2 and "nothing to resume" in out and "Traceback" not in out
    assert not (tmp_path / "empty" / "checkpoints").exists()  # no fresh run was started


def test_learner_resume_names_a_damaged_checkpoint_file(tmp_path):
    from test_hardening_values import _pick_cube_transition

    run_dir = tmp_path / "learner"
    log = IngestLog(run_dir / "ingest", fsync="never")
    log.append("robot", 0, [_pick_cube_transition(i, 0.5) for i in range(3)])
    log.close()
    made = _learner(run_dir, "--resume")  # from the ingest log alone: writes a checkpoint
    assert made.returncode == 0, made.stdout + made.stderr
    checkpoint = latest_checkpoint(run_dir / "checkpoints")
    for name in ("replay.npz", "meta.json"):
        backup = (checkpoint / name).read_bytes()
        _truncate(checkpoint / name)
        _one_line_naming(_learner(run_dir, "--resume"), name, code=2 if "npz" in name else 1)
        (checkpoint / name).write_bytes(backup)
    again = _learner(run_dir, "--resume")
    assert again.returncode == 0, again.stdout + again.stderr
