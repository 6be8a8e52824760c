"""The transport in one process on real loopback sockets: wire format, outbox, acknowledgement,
weights, refusals, CURVE authentication, several actors."""

from __future__ import annotations

import numpy as np
import pytest
from transport_fixtures import (
    ACT_SPACE,
    OBS_SPACE,
    drain,
    free_endpoint,
    hello,
    make_client,
    make_server,
    transition,
    wait_for,
)

from robot_rl.transport import wire
from robot_rl.transport.messages import decode_transition
from robot_rl.transport.outbox import Outbox
from robot_rl.transport.security import (
    ClientKeys,
    SecurityError,
    ServerKeys,
    check_bind,
    generate_keys,
    is_loopback,
)

# ------------------------------------------------------------------------------------ wire


def test_wire_round_trip_keeps_arrays_exactly():
    message = {
        "kind": "x",
        "a": np.arange(12, dtype=np.float32).reshape(3, 4),
        "img": np.random.default_rng(0).integers(0, 255, (16, 16, 3), dtype=np.uint8),
        "nested": {"b": [1, 2.5, "s", b"raw"], "flag": True, "scalar": np.int64(7)},
    }
    out = wire.decode(wire.encode(message))
    np.testing.assert_array_equal(out["a"], message["a"])
    assert out["a"].dtype == np.float32 and out["img"].dtype == np.uint8
    np.testing.assert_array_equal(out["img"], message["img"])
    assert out["nested"] == {"b": [1, 2.5, "s", b"raw"], "flag": True, "scalar": 7}


def test_wire_refuses_objects_and_other_dtypes():
    with pytest.raises(TypeError):
        wire.encode({"x": object()})
    with pytest.raises(TypeError):
        wire.encode({"x": np.array(["a"], dtype=object)})
    with pytest.raises(TypeError):
        wire.encode({"x": np.zeros(3, np.complex64)})


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        b"RRL1",
        b"XXXX\x00\x00\x00\x00",
        wire.MAGIC + (2**31).to_bytes(4, "little") + b"\x00",  # a huge declared size
        wire.encode({"kind": "x"})[:-2],  # truncated
    ],
)
def test_wire_decode_raises_wire_error_on_garbage(frame):
    with pytest.raises(wire.WireError):
        wire.decode(frame)


def test_transition_checks_name_what_is_wrong():
    good = transition(3)
    t = decode_transition(good, OBS_SPACE, ACT_SPACE)
    assert t.reward == 3.0 and t.obs["state"][0] == 3
    nan = wire.decode(good)
    nan["obs"]["state"][0] = np.nan
    with pytest.raises(wire.WireError, match="NaN"):
        decode_transition(wire.encode(nan), OBS_SPACE, ACT_SPACE)
    shape = wire.decode(good)
    shape["next_obs"]["cam"] = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(wire.WireError, match="cam"):
        decode_transition(wire.encode(shape), OBS_SPACE, ACT_SPACE)
    big = wire.decode(good)
    big["action"] = np.full(3, 5.0, np.float32)
    with pytest.raises(wire.WireError, match="action"):
        decode_transition(wire.encode(big), OBS_SPACE, ACT_SPACE)


# ---------------------------------------------------------------------------------- outbox


def test_outbox_survives_reopen_and_forgets_only_acknowledged(tmp_path):
    box = Outbox(tmp_path, segment_size=4, ack_persist_interval=0.0)
    for i in range(10):
        assert box.append(transition(i)) == i
    box.ack(6)
    assert box.backlog == 4
    box.close()
    reopened = Outbox(tmp_path, segment_size=4)
    assert reopened.next_seq == 10 and reopened.acked == 6
    assert reopened.read(0, 100) == [transition(i) for i in range(6, 10)]
    # Whole segments below the acknowledgement are gone from disk.
    assert len(list(tmp_path.glob("seg-*.log"))) == 2
    assert reopened.append(transition(10)) == 10


def test_outbox_skip_to_continues_numbering_for_a_known_actor(tmp_path):
    box = Outbox(tmp_path)
    box.skip_to(42)
    assert box.append(transition(0)) == 42 and box.acked == 42 and box.backlog == 1


# ---------------------------------------------------------------------- server and client


def test_transitions_are_acknowledged_stored_once_and_in_order(tmp_path):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest")
    client = make_client(endpoint, "a0", tmp_path / "outbox", batch_size=7)
    try:
        assert client.wait_welcome(10)
        assert client.welcome["next_seq"] == 0 and client.welcome["note"] == "hi"
        for i in range(100):
            client.outbox.append(transition(i))
        wait_for(lambda: client.outbox.backlog == 0, what="acknowledgements")
        got = drain(server)
        assert [seq for _, seq, _ in got] == list(range(100))
        assert [int(t.obs["state"][0]) for _, _, t in got] == list(range(100))
        # The ingest log holds exactly what was acknowledged.
        logged = [
            (a, s + k) for a, s, items in server.ingest_log.batches() for k in range(len(items))
        ]
        assert logged == [("a0", i) for i in range(100)]
    finally:
        client.stop()
        server.stop()


def test_a_late_actor_gets_the_latest_weights_at_once(tmp_path):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest")
    try:
        server.publish_weights(3, b"old")
        server.publish_weights(4, b"newest")
        client = make_client(endpoint, "late", tmp_path / "outbox")
        wait_for(lambda: client.latest_weights() is not None, what="weights on connect")
        assert client.latest_weights() == (4, b"newest")
        server.publish_weights(5, b"next")
        wait_for(lambda: client.latest_weights()[0] == 5, what="a broadcast")
        client.stop()
    finally:
        server.stop()


def test_a_mismatched_actor_is_refused_with_what_differs(tmp_path):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest")
    other_space = type(ACT_SPACE)(-1.0, 1.0, (4,), np.float32)
    client = make_client(
        endpoint, "odd", tmp_path / "outbox", hello=hello(task="toy", action_space=other_space)
    )
    try:
        wait_for(lambda: client.refused_reason is not None, what="a refusal")
        assert "configuration mismatch" in client.refused_reason
        assert "action_space.shape" in client.refused_reason
        assert not client.connected
    finally:
        client.stop()
        server.stop()


def test_two_actors_feed_one_learner(tmp_path):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest")
    clients = [make_client(endpoint, f"robot{i}", tmp_path / f"outbox{i}") for i in range(2)]
    try:
        for client in clients:
            for i in range(30):
                client.outbox.append(transition(i))
        wait_for(lambda: all(c.outbox.backlog == 0 for c in clients), what="both acknowledged")
        got = drain(server)
        for name in ("robot0", "robot1"):
            assert [s for a, s, _ in got if a == name] == list(range(30))
        assert sorted(server.connected_actors) == ["robot0", "robot1"]
    finally:
        for client in clients:
            client.stop()
        server.stop()


def test_a_restarted_learner_gets_the_unacknowledged_rest_without_duplicates(tmp_path):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest")
    client = make_client(endpoint, "a0", tmp_path / "outbox", resend_after=0.3)
    try:
        for i in range(20):
            client.outbox.append(transition(i))
        wait_for(lambda: client.outbox.backlog == 0, what="first acknowledgements")
        stored = drain(server)
        server.stop()
        for i in range(20, 50):  # the learner is down: the outbox keeps these
            client.outbox.append(transition(i))
        assert client.outbox.backlog == 30
        # The learner comes back knowing (from its checkpoint + log) it holds 0..19.
        server = make_server(endpoint, tmp_path / "ingest2", cursors={"a0": 20})
        wait_for(lambda: client.outbox.backlog == 0, timeout=15, what="the flush")
        stored += drain(server)
        assert [s for _, s, _ in stored] == list(range(50))
    finally:
        client.stop()
        server.stop()


# -------------------------------------------------------------------------------- security


def test_loopback_detection_and_bind_refusal():
    assert is_loopback("tcp://127.0.0.1:5555") and is_loopback("tcp://localhost:1")
    assert is_loopback("tcp://[::1]:5555") and is_loopback("ipc:///tmp/x")
    assert not is_loopback("tcp://0.0.0.0:5555") and not is_loopback("tcp://*:5555")
    assert not is_loopback("tcp://192.168.1.4:5555")
    with pytest.raises(SecurityError, match="robot-rl keys"):
        check_bind("tcp://0.0.0.0:5555", None)
    with pytest.raises(SecurityError):
        check_bind("udp://x", None)


def test_curve_admits_keyed_actors_and_refuses_others(tmp_path):
    keys = generate_keys(tmp_path / "keys")
    server_keys = ServerKeys(str(keys["learner_secret"]), str(keys["authorized_actors"]))
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest", keys=server_keys)
    good = make_client(
        endpoint,
        "keyed",
        tmp_path / "o1",
        keys=ClientKeys(str(keys["actor_secret"]), str(keys["learner"])),
    )
    plain = make_client(endpoint, "plain", tmp_path / "o2")
    stranger_keys = generate_keys(tmp_path / "other")  # a pair the learner never authorised
    stranger = make_client(
        endpoint,
        "stranger",
        tmp_path / "o3",
        keys=ClientKeys(str(stranger_keys["actor_secret"]), str(keys["learner"])),
    )
    try:
        assert good.wait_welcome(10)
        good.outbox.append(transition(0))
        wait_for(lambda: good.outbox.backlog == 0, what="keyed data acknowledged")
        assert not plain.wait_welcome(1.5) and not stranger.wait_welcome(0.1)
        assert server.connected_actors == ["keyed"]
    finally:
        for client in (good, plain, stranger):
            client.stop()
        server.stop()
    with pytest.raises(SecurityError, match="already exists"):
        generate_keys(tmp_path / "keys")


def test_a_restarted_learner_s_weights_replace_newer_numbered_ones(tmp_path):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest")
    client = make_client(endpoint, "a0", tmp_path / "outbox", resend_after=0.3)
    try:
        server.publish_weights(50, b"before the crash")
        wait_for(lambda: client.latest_weights() == (50, b"before the crash"), what="weights")
        server.stop()
        # The learner resumes from a checkpoint taken at version 40.
        server = make_server(endpoint, tmp_path / "ingest2")
        server.publish_weights(40, b"after the restart")
        client.outbox.append(transition(0))  # data makes the actor notice and say hello again
        wait_for(lambda: client.latest_weights() == (40, b"after the restart"), timeout=15,
                 what="the restarted learner's weights")  # fmt: skip
    finally:
        client.stop()
        server.stop()


def test_raw_frames_decode_like_compressed_ones():
    message = {"kind": "x", "a": np.arange(5, dtype=np.int64), "b": [b"x" * 100]}
    raw = wire.encode(message, compress=False)
    assert raw[:4] == wire.RAW_MAGIC
    out = wire.decode(raw)
    np.testing.assert_array_equal(out["a"], message["a"])
    assert out["b"] == message["b"]
    with pytest.raises(wire.WireError):
        wire.decode(raw[:-3])


def test_the_learner_s_status_reaches_the_actor(tmp_path):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest")
    client = make_client(endpoint, "a0", tmp_path / "outbox")
    try:
        assert client.wait_welcome(10)
        server.publish_status({"lag": 7, "version": 3})
        wait_for(lambda: client.learner_lag == 7, what="the status")
    finally:
        client.stop()
        server.stop()
