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
import pytest
from process_helpers import SMALL_AGENT, Processes
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


class Scenario:
    """The scenario's phases, each run once and in order: a test that needs a later phase runs
    the earlier ones first, so that one test's failure leaves the others their say."""

    def __init__(self, procs, directory):
        self.procs, self.directory = procs, directory
        self.endpoint = free_endpoint()
        self.run_dir = directory / "learner"
        self.done: set[str] = set()
        learner = self.learner = _learner(procs, self.endpoint, self.run_dir)
        learner.wait_for(lambda: "learner pick_cube on" in learner.output(), 180, "learner start")
        self.actors = {
            name: _actor(procs, self.endpoint, name, directory / name, seed)
            for seed, name in enumerate(("robot_a", "robot_b"))
        }
        learner.wait_for(
            lambda: learner.last_int(r"transitions (\d+)") >= 120, 180, "learner receiving"
        )

    def _once(self, phase: str) -> bool:
        first = phase not in self.done
        self.done.add(phase)
        return first

    def kill_learner(self) -> None:
        """(a) + (b): the learner dies; the actors go on, their outboxes grow."""
        if self._once("kill_learner"):
            self.learner.kill()
            robot_b = self.actors["robot_b"]
            self.steps_at_kill = robot_b.last_int(r"steps (\d+)")
            robot_b.wait_for(
                lambda: (
                    "NOT connected" in robot_b.output().split(f"steps {self.steps_at_kill} |")[-1]
                    and robot_b.last_int(r"unacknowledged (\d+)") >= 40
                ),
                120,
                "robot_b to keep stepping with a growing outbox",
            )

    def restart_robot_a(self) -> None:
        """(c): one actor dies mid-run and is restarted on the same outbox."""
        self.kill_learner()
        if self._once("restart_robot_a"):
            robot_a = self.actors["robot_a"]
            robot_a.kill()
            self.killed_at = robot_a.last_int(r"steps (\d+)")
            self.restarted = _actor(
                self.procs, self.endpoint, "robot_a", self.directory / "robot_a", 0
            )

    def resume_learner(self) -> None:
        """The learner comes back and picks up where its checkpoint and ingest log left off."""
        self.restart_robot_a()
        if self._once("resume_learner"):
            self.resumed = _learner(self.procs, self.endpoint, self.run_dir, "--resume")


@pytest.fixture(scope="class")
def scenario(tmp_path_factory):
    procs = Processes(tmp_path_factory.mktemp("distributed"))
    try:
        yield Scenario(procs, procs.directory)
    finally:
        procs.close()


class TestCrashesAndRestartsLoseNothingAndDuplicateNothing:
    def test_one_learner_hears_both_actors(self, scenario):
        assert scenario.learner.last_int(r"actors (\d+)") == 2

    def test_an_actor_keeps_stepping_while_the_learner_is_down(self, scenario):
        scenario.kill_learner()
        robot_b = scenario.actors["robot_b"]
        assert robot_b.last_int(r"steps (\d+)") > scenario.steps_at_kill

    def test_a_restarted_actor_resumes_its_numbering_from_its_outbox(self, scenario):
        scenario.restart_robot_a()
        restarted = scenario.restarted
        restarted.wait_for(
            lambda: restarted.last_int(r"outbox resumes at sequence (\d+)") >= scenario.killed_at,
            120,
            "the restarted actor to resume its numbering",
        )

    def test_the_resumed_learner_and_the_actors_finish_with_everything_acknowledged(self, scenario):
        scenario.resume_learner()
        assert scenario.resumed.wait_exit(400) == 0, scenario.resumed.tail()
        for proc in (scenario.restarted, scenario.actors["robot_b"]):
            assert proc.wait_exit(180) == 0, proc.tail()
            summary = json.loads(proc.output().strip().splitlines()[-1])
            assert summary["unacknowledged"] == 0

    def test_every_transition_is_stored_exactly_once(self, scenario):
        scenario.resume_learner()
        for proc in (scenario.resumed, scenario.restarted, scenario.actors["robot_b"]):
            proc.wait_exit(400)
        sequences = _stored_sequences(scenario.run_dir)
        assert set(sequences) == {"robot_a", "robot_b"}
        for actor, seqs in sequences.items():
            assert seqs == list(range(STEPS_PER_ACTOR)), f"{actor}: lost or duplicated transitions"
