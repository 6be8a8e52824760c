"""Values are validated in the dtype they are stored in (issue 14, point 1): a reward of 1e300 is
finite as a Python float and infinite as the replay's float32. Such transitions are refused,
counted and logged, never acknowledged and never logged; an ingest log that already holds one
is skipped on resume, not fatal for ever."""

from __future__ import annotations

import numpy as np
import pytest
from process_helpers import SMALL_AGENT
from test_hardening_files import cli_in_process
from transport_fixtures import (
    drain,
    free_endpoint,
    make_client,
    make_server,
    transition,
    wait_for,
    welcomed_dealer,
)

from robot_rl.data.transition import Transition
from robot_rl.transport import wire
from robot_rl.transport.ingest_log import IngestLog
from robot_rl.transport.messages import check_values, encode_transition


def _poisoned(**changes) -> bytes:
    message = wire.decode(transition(0))
    for key, value in changes.items():
        if key in ("obs", "next_obs"):
            message[key] = {**message[key], **value}
        else:
            message[key] = value
    return wire.encode(message)


POISON = {
    "reward 1e300 (inf in float32)": {"reward": 1e300},
    "reward 9.2e18 (finite, beyond the bound)": {"reward": 9.2e18},
    "integer reward 2**63": {"reward": 2**63},
    "observation 1.8e38": {"obs": {"state": np.full(5, 1.8e38, np.float32)}},
    "next observation -3e38": {"next_obs": {"state": np.full(5, -3e38, np.float32)}},
}


@pytest.mark.parametrize("name", list(POISON))
def test_a_value_beyond_its_stored_dtype_or_the_bound_is_refused_not_acknowledged(
    tmp_path, caplog, name
):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest")
    dealer = welcomed_dealer(endpoint)
    try:
        items = [transition(0), _poisoned(**POISON[name])]  # one bad item spoils the batch
        dealer.send(
            wire.encode({"kind": "transitions", "actor": "a", "first_seq": 0, "items": items})
        )
        replies = []
        while dealer.poll(3000):
            replies.append(wire.decode(dealer.recv()))
            if replies[-1]["kind"] == "refused":
                break
        assert [r["kind"] for r in replies if r["kind"] != "weights"] == ["refused"], replies
        assert replies[-1]["of"] == "transitions"
        assert not dealer.poll(500), "nothing may be acknowledged after the refusal"
        assert sum(server.refused.values()) == 1
        assert any("refused a message" in r.getMessage() for r in caplog.records)
        assert drain(server) == [] and list(server.ingest_log.batches()) == []
    finally:
        dealer.close(linger=0)
        server.stop()


def test_a_configured_bound_is_what_the_learner_enforces(tmp_path):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest", value_bound=10.0)
    client = make_client(endpoint, "a", tmp_path / "outbox")
    try:
        for i in range(5):  # rewards 0..4 and states up to 5: inside the bound
            client.outbox.append(transition(i))
        wait_for(lambda: client.outbox.backlog == 0, what="small values acknowledged")
        client.outbox.append(transition(50))  # reward 50: beyond it
        wait_for(lambda: client.data_refused is not None, what="the refusal reaching the actor")
        assert "exceeds the bound 10" in client.data_refused or "beyond 10" in client.data_refused
        assert client.outbox.backlog == 1  # kept, never acknowledged
        assert [s for _, s, _ in drain(server)] == list(range(5))
    finally:
        client.stop()
        server.stop()


def test_the_actor_checks_its_own_values_before_they_reach_the_outbox():
    obs = {"state": np.zeros(3, np.float32)}
    check_values(obs, 1.0, obs)
    for reward in (1e300, float("nan"), 2e6):
        with pytest.raises(wire.WireError):
            check_values(obs, reward, obs)
    with pytest.raises(wire.WireError, match="magnitude"):
        check_values({"state": np.full(3, 1e7, np.float32)}, 0.0, obs)
    with pytest.raises(wire.WireError, match="magnitude"):  # abs(int64 min) overflows to itself
        check_values({"n": np.array([np.iinfo(np.int64).min])}, 0.0, obs)


def _pick_cube_transition(i: int, reward: float) -> bytes:
    from robot_rl.envs.task import make_task
    from robot_rl.runtime.learner import LearnerConfig

    cfg = LearnerConfig(task="pick_cube")
    task = make_task(cfg.task, **cfg.task_options(cfg.task))
    space = task.observation_space()
    obs = {k: np.full(s.shape, 0.01 * i, s.dtype) for k, s in space.spaces.items()}
    action = np.zeros(task.action_space().shape, np.float32)
    return encode_transition(Transition(obs, action, reward, False, False, obs))


def test_an_ingest_log_holding_a_bad_record_is_skipped_on_resume(tmp_path):
    run_dir = tmp_path / "learner"
    log = IngestLog(run_dir / "ingest", fsync="never")
    log.append("robot", 0, [_pick_cube_transition(i, 0.5) for i in range(3)])
    log.append("robot", 3, [_pick_cube_transition(3, 1e300)])  # what older versions stored
    log.append("robot", 4, [_pick_cube_transition(i, 0.5) for i in (4, 5)])
    log.close()
    args = ["learner", "--task", "pick_cube", "--run-dir", str(run_dir), "--resume",
            "--bind", free_endpoint(), "--demos", "0", "--total-steps", "1",
            "--start-steps", "1000", *SMALL_AGENT]  # fmt: skip
    result = cli_in_process(*args)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "skipping transition 3 of actor robot" in out and "Traceback" not in out
    again = cli_in_process(*args)  # the checkpoint holds the stream past it: resuming again works
    assert again.returncode == 0 and "Traceback" not in again.stdout + again.stderr
    from robot_rl.agents.checkpoint import latest_checkpoint, read_metadata
    from robot_rl.data.replay import ReplayBuffer

    checkpoint = latest_checkpoint(run_dir / "checkpoints")
    assert read_metadata(checkpoint)["cursors"] == {"robot": 6}
    replay = ReplayBuffer.load(checkpoint / "replay.npz")
    assert sorted(replay.gather(np.arange(len(replay)))["seq"].tolist()) == [0, 1, 2, 4, 5]
