"""What an actor says when its learner does not answer: the likely cause, not a guess. A
learner still loading before it binds its port (``up`` starts the actor and the learner
together) is told from one that listens but has not answered yet; CURVE keys are named only
where they may be the cause (a handshake failure, or a listener that stays silent), never while
nothing listens at all (it once said "If it was started with --curve-secret-key, this actor
needs keys too" while the learner was still loading)."""

from __future__ import annotations

import zmq
from process_helpers import wait_for
from transport_fixtures import free_endpoint, make_client


def test_nothing_listening_yet_is_a_learner_still_starting_not_missing_keys(tmp_path):
    client = make_client(free_endpoint(), "early", tmp_path / "outbox")
    try:
        wait_for(lambda: client.silence_reason is not None, 30, "the diagnosis")
        reason = client.silence_reason
        assert "nothing listens there yet" in reason and "still be starting" in reason
        assert "key" not in reason
    finally:
        client.stop()


def test_a_listener_that_stays_silent_is_a_learner_still_loading_or_one_that_needs_keys(tmp_path):
    endpoint = free_endpoint()
    silent = zmq.Context.instance().socket(zmq.ROUTER)  # bound, never answers
    silent.linger = 0
    silent.bind(endpoint)
    client = make_client(endpoint, "waiting", tmp_path / "outbox")
    try:
        wait_for(lambda: client.silence_reason is not None, 30, "the diagnosis")
        reason = client.silence_reason
        assert reason.startswith("it listens but has not answered yet: still starting")
        assert "--curve-secret-key" in reason
    finally:
        client.stop()
        silent.close()
