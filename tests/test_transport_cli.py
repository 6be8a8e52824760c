"""`robot-rl keys`, and the learner and actor refusing what would be unsafe or inconsistent."""

from __future__ import annotations

from process_helpers import Processes
from process_helpers import run_cli as robot_rl
from transport_fixtures import free_endpoint


def test_keys_writes_both_pairs_and_never_overwrites(tmp_path):
    proc = robot_rl("keys", str(tmp_path / "k"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("learner.key", "learner.key_secret", "actor.key", "actor.key_secret"):
        assert (tmp_path / "k" / name).is_file()
    assert (tmp_path / "k" / "authorized_actors" / "actor.key").is_file()
    assert oct((tmp_path / "k" / "learner.key_secret").stat().st_mode & 0o777) == "0o600"
    again = robot_rl("keys", str(tmp_path / "k"))
    assert again.returncode == 2 and "already exists" in again.stderr


def test_learner_refuses_to_listen_beyond_loopback_without_keys(tmp_path):
    proc = robot_rl("learner", "--bind", "tcp://0.0.0.0:5999", "--run-dir", str(tmp_path / "r"))
    assert proc.returncode == 2
    assert "without authentication" in proc.stderr and "robot-rl keys" in proc.stderr
    assert not (tmp_path / "r").exists()


def test_an_actor_of_another_task_is_refused_and_says_why(tmp_path):
    endpoint = free_endpoint()
    procs = Processes(tmp_path)
    try:
        learner = procs.start(
            "learner", "learner", "--task", "pick_cube", "--bind", endpoint,
            "--run-dir", str(tmp_path / "learner"), "--demos", "0", "--total-steps", "0",
            "--agent.num-critics", "2", "--agent.hidden-dims", "32",
        )  # fmt: skip
        learner.wait_for(lambda: "learner pick_cube on" in learner.output(), 180, "learner")
        actor = procs.start(
            "actor", "actor", "--task", "peg_insert", "--learner", endpoint,
            "--outbox-dir", str(tmp_path / "outbox"), "--total-steps", "100000",
        )  # fmt: skip
        assert actor.wait_exit(120) == 2
        out = actor.output()
        assert "refused this actor" in out and "task" in out and "peg_insert" in out
    finally:
        procs.close()
