"""The distributed path learns from interventions: a real learner and a real actor with
`--interventions sim` (the twin's simulated human). The learner's final checkpoint holds every
intervened transition in both its replay and its demo buffer, the others only in the replay; the
actor's per-episode intervention rates reach the learner's metrics and match the stored flags."""

from __future__ import annotations

import json

import numpy as np
import pytest
from process_helpers import SMALL_AGENT
from transport_fixtures import free_endpoint

from robot_rl.agents.checkpoint import latest_checkpoint, read_metadata
from robot_rl.data.replay import ReplayBuffer

STEPS = 240


def _by_seq(buffer: ReplayBuffer) -> dict:
    batch = buffer.gather(np.arange(len(buffer)))
    order = np.argsort(batch["seq"])
    return {k: batch[k][order] for k in ("seq", "intervened", "terminated", "truncated")}


def test_interventions_on_the_actor_reach_both_buffers(procs, tmp_path):
    pytest.importorskip("mujoco")
    endpoint = free_endpoint()
    run_dir = tmp_path / "learner"
    learner = procs.start(
        "learner",
        "learner", "--task", "pick_cube", "--bind", endpoint, "--run-dir", str(run_dir),
        "--demos", "0", "--start-steps", "50", "--total-steps", str(STEPS), "--utd-ratio", "1",
        "--log-every", "0.5", *SMALL_AGENT,
    )  # fmt: skip
    actor = procs.start(
        "actor",
        "actor", "--task", "pick_cube", "--learner", endpoint, "--actor-id", "robot",
        "--outbox-dir", str(tmp_path / "outbox"), "--interventions", "sim", "--speedup", "0",
        "--total-steps", str(STEPS), "--log-every", "0.5", "--flush-timeout", "120",
    )  # fmt: skip
    assert learner.wait_exit(150) == 0, learner.tail()
    assert actor.wait_exit(60) == 0, actor.tail()
    assert "interventions (last 20)" in actor.output()
    assert json.loads(actor.output().strip().splitlines()[-1])["unacknowledged"] == 0

    checkpoint = latest_checkpoint(run_dir / "checkpoints")
    assert read_metadata(checkpoint)["streams"] == {"robot": 0}
    replay = _by_seq(ReplayBuffer.load(checkpoint / "replay.npz"))
    demos = _by_seq(ReplayBuffer.load(checkpoint / "demos.npz"))

    assert replay["seq"].tolist() == list(range(STEPS))  # every step, once
    flagged = replay["seq"][replay["intervened"]]
    assert 0 < len(flagged) < STEPS  # the simulated human stepped in, and let go
    # the demo buffer (no scripted demos here) holds exactly the intervened transitions
    assert demos["seq"].tolist() == flagged.tolist()
    assert demos["intervened"].all()

    # each finished episode's intervention rate, as the actor reported it, fits the flags
    ends = np.flatnonzero((replay["terminated"] > 0) | (replay["truncated"] > 0))
    starts = np.concatenate([[0], ends[:-1] + 1])
    episodes = zip(starts, ends, strict=True)
    stored_rates = [replay["intervened"][a : b + 1].mean() for a, b in episodes]
    reported = [
        json.loads(line)["robot/intervention_rate"]
        for line in (run_dir / "metrics.jsonl").read_text().splitlines()
        if "robot/intervention_rate" in line
    ]
    assert reported, "no episode stats reached the learner"
    assert reported == pytest.approx(stored_rates[: len(reported)])
    assert max(reported) > 0
