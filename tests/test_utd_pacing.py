"""The stack holds its update-to-data ratio (issue 18, point 3).

``up sim`` as real processes (twin node, actor node, learner): the actor waits for the learner
and the ratio while it plays is the recipe's within 5%. A real robot never waits: ``up robot``
starts no paced actor, the actor refuses pacing on a wall-clock ROS backend, and the learner's
lag is what is reported. The pacer itself against a scripted client: it pauses the twin, holds
until the learner has caught up, and resumes it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from fakes import ScriptedClient

from robot_rl.runtime.stack_progress import utd_report, utd_text
from robot_rl.runtime.utd_pacer import PacingRefused, UtdPacer
from robot_rl.runtime.utd_tracker import UtdTracker


class Backend:
    def __init__(self, simulated: bool, sim_time: bool):
        self.is_simulated, self.use_sim_time = simulated, sim_time
        self.pauses: list[bool] = []

    def pause_simulation(self, paused: bool) -> str:
        self.pauses.append(paused)
        return "ok"


class Env:
    def __init__(self, backend):
        self.backend = backend


def test_the_pacer_holds_the_twin_paused_until_the_learner_caught_up():
    backend = Backend(simulated=False, sim_time=True)  # the twin's ROS nodes
    pacer = UtdPacer.for_env(4, Env(backend))
    client = ScriptedClient(lag=4)
    assert pacer.wait(client) == 0.0 and backend.pauses == []  # within the tolerance: plays on
    client.lag = 5
    waiter = threading.Thread(target=pacer.wait, args=(client,))
    waiter.start()
    assert client.polled.wait(10)
    client.lag = 1  # less behind, not yet caught up: still waiting
    waiter.join(0.2)
    assert waiter.is_alive() and backend.pauses == [True]
    client.lag = 0
    waiter.join(10)
    assert not waiter.is_alive()
    assert backend.pauses == [True, False]  # the twin's time ran again once the actor went on
    assert pacer.summary()["learner_waits"] == 1 and pacer.summary()["paused_twin"]


class InterruptedClient(ScriptedClient):
    """Far behind; Ctrl-C lands while the actor waits (on the second poll)."""

    def estimated_lag(self) -> int:
        if self.polled.is_set():
            raise KeyboardInterrupt
        return super().estimated_lag()


class DyingTwin(Backend):
    """A twin node that is going down: its pause service never answers a resume."""

    def __init__(self):
        super().__init__(simulated=False, sim_time=True)
        self.never = threading.Event()

    def pause_simulation(self, paused: bool) -> str:
        self.pauses.append(paused)
        if not paused:
            self.never.wait()  # as a service call to a node that has exited
        return "ok"


def test_ctrl_c_while_waiting_does_not_wait_on_a_dying_twin():
    """Ctrl-C reaches the twin and the actor together: the actor tries to resume the twin but
    does not sit out the service timeout (which kept it past launch's SIGINT timeout)."""
    twin = DyingTwin()
    pacer = UtdPacer.for_env(2, Env(twin))
    with pytest.raises(KeyboardInterrupt):
        pacer.wait(InterruptedClient(lag=50))
    assert twin.pauses == [True, False]  # asked to resume, then let go


def test_a_refused_actor_stops_waiting():
    pacer = UtdPacer.for_env(2, Env(Backend(simulated=True, sim_time=False)))
    client = ScriptedClient(lag=50)
    client.data_refused = "a bad transition"
    assert pacer.wait(client) == 0.0


def test_a_real_robot_never_waits_for_the_learner():
    robot = Env(Backend(simulated=False, sim_time=False))  # ROS backend on the wall clock
    assert UtdPacer.for_env(None, robot) is None
    with pytest.raises(PacingRefused, match="a real robot never waits"):
        UtdPacer.for_env(16, robot)


def test_up_paces_the_twin_actor_only(tmp_path):
    from robot_rl.commands.up import UpConfig, planned_processes

    def actor_config(**kwargs):
        cfg = UpConfig(**kwargs)
        cfg.validate()
        processes = planned_processes(cfg, tmp_path, "tcp://127.0.0.1:5555")
        return next(p for p in processes if p.role == "actor").config  # its --config file's

    assert actor_config(mode="sim").max_learner_lag == 16
    assert actor_config(mode="sim", utd_pacing=False).max_learner_lag is None
    cell = Path(__file__).parents[1] / "hardware" / "car_sim.yaml"
    robot = actor_config(mode="robot", hardware=str(cell), task="car_lap")
    assert robot.max_learner_lag is None


def test_a_robot_run_reports_the_learner_s_lag_instead():
    tracker = UtdTracker(utd_ratio=2, start_steps=100)
    tracker.observe(received=99, updates=0, lag=0)
    assert tracker.effective_ratio() is None
    tracker.observe(received=600, updates=600, lag=200)  # the learner fell behind
    tracker.observe(received=600, updates=1002, lag=0)  # caught up after the data ended
    utd = utd_report({"utd": tracker.summary()}, actor=None, paced=False)
    assert utd["effective_while_acting"] == pytest.approx(600 / 501, abs=1e-3)
    assert utd["lag_at_data_end"] == 200 and utd["max_lag"] == 200
    assert "learner lag at the end of the data 200 transitions" in utd_text(utd)


@pytest.mark.timeout(300)
def test_up_sim_actor_waits_and_holds_the_ratio(procs, tmp_path):
    pytest.importorskip("rclpy")
    pytest.importorskip("mujoco")
    run_dir = tmp_path / "run"
    # a fast twin (8x) and a learner with 2 updates per transition: the actor must wait (at
    # least through the learner's first compilation, which takes seconds)
    up = procs.start(
        "up", "up", "sim", "--task", "pick_cube", "--speedup", "8", "--total-steps", "250",
        "--start-steps", "50", "--demos", "0", "--utd-ratio", "2", "--max-learner-lag", "4",
        "--agent.num-critics", "2", "--agent.hidden-dims", "32", "32", "--batch-size", "32",
        "--eval-episodes", "0", "--log-every", "1", "--run-dir", str(run_dir),
    )  # fmt: skip
    assert up.wait_exit(280) == 0, up.tail()
    report = json.loads((run_dir / "report.json").read_text())
    utd = report["utd"]
    assert utd["paced"] and utd["actor_waits"] >= 1, utd
    assert utd["effective_while_acting"] == pytest.approx(2.0, rel=0.05), utd
    assert "UTD" in up.output() and "actor waited" in up.output()
