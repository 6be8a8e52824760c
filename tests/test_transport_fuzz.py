"""Over 10,000 random and malformed frames at the learner's socket: it keeps serving, stores
nothing invalid, and counts (and logs) what it refused."""

from __future__ import annotations

import numpy as np
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

FRAMES = 10_500


def _mutations(rng: np.random.Generator, hello_frame: bytes):
    """An endless mix of garbage, damaged valid frames and well-formed but wrong messages."""
    good = wire.decode(transition(0))
    bad_transitions = [
        {**good, "action": np.full(3, np.nan, np.float32)},
        {**good, "action": np.zeros(7, np.float32)},
        {**good, "reward": float("inf")},
        {**good, "terminated": "yes"},
        {**good, "obs": {"state": good["obs"]["state"]}},
        {**good, "obs": {**good["obs"], "cam": np.zeros((8, 8, 3), np.float64)}},
        {**good, "next_obs": {**good["next_obs"], "state": np.full(5, np.inf, np.float32)}},
        {k: v for k, v in good.items() if k != "reward"},
        {**good, "extra": 1},
    ]
    while True:
        choice = rng.integers(9)
        if choice == 0:  # random bytes
            yield rng.bytes(int(rng.integers(0, 300)))
        elif choice == 1:  # a valid header with a huge declared length
            yield wire.MAGIC + int(rng.integers(2**28, 2**32)).to_bytes(4, "little") + rng.bytes(20)
        elif choice == 2:  # truncated or bit-flipped valid frames
            frame = bytearray(transition(int(rng.integers(100))))
            if rng.random() < 0.5:
                yield bytes(frame[: int(rng.integers(1, len(frame)))])
            else:
                frame[int(rng.integers(len(frame)))] ^= 0xFF
                yield bytes(frame)
        elif choice == 3:  # wrong message kinds and field types
            wrong = [
                {"kind": "nope"},
                {"kind": 5},
                {"no": "kind"},
                {"kind": "hello", "protocol": PROTOCOL_VERSION + 1, "actor": "x"},
                {"kind": "hello", "protocol": "1"},
                {"kind": "transitions", "actor": "f", "first_seq": "0", "items": []},
            ]
            yield wire.encode(wrong[int(rng.integers(len(wrong)))])
        elif choice == 4:  # a batch of bad transitions after a proper hello
            bad = bad_transitions[int(rng.integers(len(bad_transitions)))]
            yield hello_frame
            yield wire.encode(
                {
                    "kind": "transitions",
                    "actor": "fuzzer",
                    "first_seq": 0,
                    "items": [wire.encode(bad)],
                }
            )
        elif choice == 5:  # items that are not frames, negative or absurd sequence numbers
            yield wire.encode(
                {
                    "kind": "transitions",
                    "actor": "fuzzer",
                    "first_seq": int(rng.choice([-5, 0, 2**40])),
                    "items": [[1, 2], ["x"], [b"garbage"], [], [b"\x00" * 10] * 5000][
                        int(rng.integers(5))
                    ],
                }
            )
        elif choice == 6:  # arrays with lying shapes inside a valid envelope
            body = wire.decode(wire.encode({"kind": "stats", "actor": "f"}))
            frame = wire.encode({**body, "episode": {"a": np.zeros(3)}})
            yield frame[:-1] + bytes([frame[-1] ^ 1])
        elif choice == 7:  # deep nesting
            nested: object = 1
            for _ in range(int(rng.integers(50, 3000))):
                nested = [nested]
            try:
                yield wire.encode({"kind": "stats", "actor": "f", "episode": nested})
            except (ValueError, RecursionError):
                yield b"deep"
        else:  # stats with junk values
            yield wire.encode({"kind": "stats", "actor": "f", "episode": {"x": "y", "n": None}})


def test_fuzzed_frames_are_refused_and_the_learner_keeps_serving(tmp_path, caplog):
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest")
    context = zmq.Context.instance()
    attacker = context.socket(zmq.DEALER)
    attacker.linger = 0
    attacker.connect(endpoint)
    hello_frame = wire.encode(
        {
            "kind": "hello",
            "protocol": PROTOCOL_VERSION,
            "actor": "fuzzer",
            **hello(),
        }
    )
    rng = np.random.default_rng(1234)
    sent = 0
    try:
        frames = _mutations(rng, hello_frame)
        while sent < FRAMES:
            attacker.send(next(frames))
            sent += 1
            if sent % 500 == 0:  # also multi-part junk, which a DEALER can send too
                attacker.send_multipart([b"a", b"b", b"c"])
            while attacker.poll(0):
                attacker.recv()
        # An honest actor still gets through, and its data is all that was stored.
        client = make_client(endpoint, "honest", tmp_path / "outbox")
        assert client.wait_welcome(20)
        for i in range(25):
            client.outbox.append(transition(i))
        wait_for(lambda: client.outbox.backlog == 0, timeout=20, what="honest data acknowledged")
        client.stop()
        # the server queues peers fairly, so the honest actor may be served before the
        # attacker's backlog is worked through: wait for the refusals rather than race them
        wait_for(
            lambda: sum(server.refused.values()) >= FRAMES // 3,
            timeout=60,
            what="the fuzzed frames refused",
        )
        stored = drain(server)
        assert [(a, s) for a, s, _ in stored] == [("honest", i) for i in range(25)]
        assert [a for a, _, _ in server.ingest_log.batches()] == ["honest"]
        assert any("refused a message" in r.message for r in caplog.records)
    finally:
        attacker.close(linger=0)
        server.stop()
