"""Issue 27, point 3: the learner's actor table has a lifetime. A connection silent for longer
than ``forget_after`` is forgotten and its id is free again; connections that only said hello
are bounded apart from streaming ones and give way to a newcomer, so connections that are gone
never lock a new robot out (the 260-hello case). Every connection is a real DEALER or a real
TransportClient on a real ROUTER socket."""

from __future__ import annotations

import zmq
from transport_fixtures import (
    drain,
    free_endpoint,
    hello,
    make_client,
    make_server,
    transition,
    wait_for,
)

from robot_rl.transport import wire
from robot_rl.transport.messages import PROTOCOL_VERSION


def _hello_and_close(endpoint: str, actor: str) -> str:
    """One connection: a valid hello with ``actor``, the answer's kind, then gone."""
    dealer = zmq.Context.instance().socket(zmq.DEALER)
    dealer.linger = 0
    dealer.connect(endpoint)
    try:
        message = {"kind": "hello", "protocol": PROTOCOL_VERSION, "actor": actor, "acked": 0}
        dealer.send(wire.encode({**message, **hello()}))
        assert dealer.poll(20_000), f"no answer to {actor}'s hello"
        return wire.decode(dealer.recv())["kind"]
    finally:
        dealer.close(linger=0)


def test_260_dead_hellos_never_lock_a_new_actor_out_and_are_forgotten(tmp_path):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest", forget_after=1.5)
    newcomer = None
    try:
        kinds = [_hello_and_close(endpoint, f"ghost-{i}") for i in range(260)]
        assert kinds == ["welcome"] * 260  # each one, gone or not, never fills the table
        assert len(server.connected_actors) <= 64
        # at once, long before the ghosts are forgotten: a real actor is admitted and served
        newcomer = make_client(endpoint, "robot", tmp_path / "outbox")
        assert newcomer.wait_welcome(20)
        for i in range(5):
            newcomer.outbox.append(transition(i))
        wait_for(lambda: newcomer.outbox.backlog == 0, what="the newcomer's transitions stored")
        assert [seq for _, seq, _ in drain(server)] == list(range(5))
        # the ghosts are forgotten after the bound; the live actor (heartbeats) stays
        wait_for(lambda: server.connected_actors == ["robot"], timeout=30, what="the ghosts gone")
        assert server.forgotten >= 260 - 1
        # ids that only said hello leave no cursor behind; the streaming actor's stays
        assert set(server.cursors) == {"robot"}
    finally:
        if newcomer is not None:
            newcomer.stop()
        server.stop()


def test_a_silent_actor_s_id_is_free_again_after_the_bound(tmp_path):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest", forget_after=1.0)
    first = make_client(endpoint, "robot", tmp_path / "outbox1")
    second = None
    try:
        assert first.wait_welcome(10)
        first.outbox.append(transition(0))
        wait_for(lambda: first.outbox.backlog == 0, what="the first actor served")
        first.stop()  # gone without a word: its connection is silent from now on
        wait_for(lambda: server.connected_actors == [], timeout=30, what="the actor forgotten")
        # the same id from another outbox is welcome now, and its stream goes on where the
        # learner's cursor stands (nothing is lost or stored twice)
        second = make_client(endpoint, "robot", tmp_path / "outbox2")
        assert second.wait_welcome(20) and second.refused_reason is None
        assert server.cursors["robot"] == 1
    finally:
        first.stop()
        if second is not None:
            second.stop()
        server.stop()


def test_streaming_actors_are_bounded_apart_from_idle_connections(tmp_path):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest", max_peers=2, max_idle=3)
    clients = []
    try:
        for name in ("a", "b"):
            client = make_client(endpoint, name, tmp_path / f"outbox-{name}")
            clients.append(client)
            assert client.wait_welcome(10)
            client.outbox.append(transition(0))
            wait_for(lambda c=client: c.outbox.backlog == 0, what=f"actor {name} streaming")
        # hellos beyond max_idle: the oldest idle gives way, the streaming ones stay
        for i in range(10):
            assert _hello_and_close(endpoint, f"idle-{i}") == "welcome"
        assert {"a", "b"} <= set(server.connected_actors)
        assert len(server.connected_actors) <= 2 + 3
        # a third streaming actor is refused in one line while two stream
        third = make_client(endpoint, "c", tmp_path / "outbox-c")
        clients.append(third)
        assert third.wait_welcome(10)
        third.outbox.append(transition(0))
        wait_for(lambda: server.refused, what="the third stream refused")
        assert "too many actors" in server.refused
    finally:
        for client in clients:
            client.stop()
        server.stop()


def _welcome_of(endpoint: str, actor: str) -> dict:
    dealer = zmq.Context.instance().socket(zmq.DEALER)
    dealer.linger = 0
    dealer.connect(endpoint)
    try:
        message = {"kind": "hello", "protocol": PROTOCOL_VERSION, "actor": actor, "acked": 0}
        dealer.send(wire.encode({**message, **hello(), "outbox": "another"}))
        assert dealer.poll(20_000), f"no answer to {actor}'s hello"
        return wire.decode(dealer.recv())
    finally:
        dealer.close(linger=0)


def test_a_streamed_actor_s_cursor_outlives_its_forgotten_connections(tmp_path):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest", forget_after=1.0)
    client = make_client(endpoint, "robot", tmp_path / "outbox")
    try:
        assert client.wait_welcome(10)
        for i in range(5):
            client.outbox.append(transition(i))
        wait_for(lambda: client.outbox.backlog == 0, what="five stored")
        client.stop()
        for _ in range(2):  # each time: forgotten, then an idle connection of the same id
            wait_for(lambda: server.connected_actors == [], timeout=30, what="forgotten")
            welcome = _welcome_of(endpoint, "robot")
            assert welcome["kind"] == "welcome" and welcome["next_seq"] == 5
    finally:
        client.stop()
        server.stop()
