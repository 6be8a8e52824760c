"""Actor and learner as real processes on the twin: crashes lose nothing and store nothing twice.

One scenario covers the issue's four cases: two actors feed one learner (d); the learner is
killed with SIGKILL mid-run (a) and stays away for a while, during which the actors keep
stepping and their outboxes grow (b); one actor is killed and restarted (c); the learner comes
back with --resume. At the end every transition of each actor is in the replay exactly once.

Updates (and the first one's compilation) begin only after the crash, at START_STEPS: on a
loaded machine the first compilation takes tens of seconds, during which the learner prints
nothing while its transport thread keeps acknowledging; an actor could then finish all its
steps before the learner is killed, and phase (b) would wait for steps that never come.
"""

from __future__ import annotations

import json

import numpy as np
from process_helpers import SMALL_AGENT
from transport_fixtures import free_endpoint

from robot_rl.agents.checkpoint import latest_checkpoint, read_metadata
from robot_rl.data.replay import ReplayBuffer

STEPS_PER_ACTOR = 300
START_STEPS = 400
"""More than the learner holds when it is killed (~120), less than the run (600)."""


def _learner(procs, endpoint, run_dir, *extra):
    return procs.start(
        "learner",
        "learner", "--task", "pick_cube", "--bind", endpoint, "--run-dir", str(run_dir),
        "--demos", "0", "--start-steps", str(START_STEPS),
        "--total-steps", str(2 * STEPS_PER_ACTOR),
        "--checkpoint-interval", "1", "--log-every", "0.3", *SMALL_AGENT, *extra,
    )  # fmt: skip


def _actor(procs, endpoint, name, outbox, seed):
    return procs.start(
        name,
        "actor", "--task", "pick_cube", "--learner", endpoint, "--actor-id", name,
        "--outbox-dir", str(outbox), "--seed", str(seed), "--speedup", "2",
        "--total-steps", str(STEPS_PER_ACTOR), "--log-every", "0.3", "--flush-timeout", "240",
    )  # fmt: skip


def _stored_sequences(run_dir) -> dict[str, list[int]]:
    checkpoint = latest_checkpoint(run_dir / "checkpoints")
    streams = read_metadata(checkpoint)["streams"]
    replay = ReplayBuffer.load(checkpoint / "replay.npz")
    batch = replay.gather(np.arange(len(replay)))
    return {
        actor: sorted(batch["seq"][batch["actor"] == index].tolist())
        for actor, index in streams.items()
    }


def test_crashes_and_restarts_lose_nothing_and_duplicate_nothing(procs, tmp_path):
    endpoint = free_endpoint()
    run_dir = tmp_path / "learner"
    learner = _learner(procs, endpoint, run_dir)
    learner.wait_for(lambda: "learner pick_cube on" in learner.output(), 180, "learner start")
    actors = {
        name: _actor(procs, endpoint, name, tmp_path / name, seed)
        for seed, name in enumerate(("robot_a", "robot_b"))
    }
    learner.wait_for(
        lambda: learner.last_int(r"transitions (\d+)") >= 120, 180, "learner receiving"
    )
    assert learner.last_int(r"actors (\d+)") == 2

    # (a) + (b): the learner dies; the actors go on, their outboxes grow.
    learner.kill()
    robot_b = actors["robot_b"]
    steps_at_kill = robot_b.last_int(r"steps (\d+)")
    robot_b.wait_for(
        lambda: (
            "NOT connected" in robot_b.output().split(f"steps {steps_at_kill} |")[-1]
            and robot_b.last_int(r"unacknowledged (\d+)") >= 40
        ),
        120,
        "robot_b to keep stepping with a growing outbox",
    )
    assert robot_b.last_int(r"steps (\d+)") > steps_at_kill

    # (c): one actor dies mid-run and is restarted on the same outbox.
    robot_a = actors["robot_a"]
    robot_a.kill()
    killed_at = robot_a.last_int(r"steps (\d+)")
    restarted = _actor(procs, endpoint, "robot_a", tmp_path / "robot_a", 0)
    restarted.wait_for(
        lambda: restarted.last_int(r"outbox resumes at sequence (\d+)") >= killed_at,
        120,
        "the restarted actor to resume its numbering",
    )

    # The learner comes back and picks up where its checkpoint and ingest log left off.
    resumed = _learner(procs, endpoint, run_dir, "--resume")
    assert resumed.wait_exit(400) == 0, resumed.tail()
    for proc in (restarted, robot_b):
        assert proc.wait_exit(180) == 0, proc.tail()
        summary = json.loads(proc.output().strip().splitlines()[-1])
        assert summary["unacknowledged"] == 0

    sequences = _stored_sequences(run_dir)
    assert set(sequences) == {"robot_a", "robot_b"}
    for actor, seqs in sequences.items():
        assert seqs == list(range(STEPS_PER_ACTOR)), f"{actor}: lost or duplicated transitions"
