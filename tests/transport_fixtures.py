"""In-process transport pieces on real loopback sockets, for the transport tests."""

from __future__ import annotations

import socket

import gymnasium as gym
import numpy as np
import zmq
from process_helpers import wait_for

from robot_rl.data.spaces_json import box_to_json, dict_space_to_json
from robot_rl.data.transition import Transition
from robot_rl.transport import wire
from robot_rl.transport.client import TransportClient
from robot_rl.transport.ingest_log import IngestLog
from robot_rl.transport.messages import PROTOCOL_VERSION, encode_transition
from robot_rl.transport.outbox import Outbox
from robot_rl.transport.server import TransportServer

__all__ = [
    "drain",
    "free_endpoint",
    "hello",
    "make_client",
    "make_server",
    "transition",
    "wait_for",
]

OBS_SPACE = gym.spaces.Dict(
    {
        "state": gym.spaces.Box(-np.inf, np.inf, (5,), np.float32),
        "cam": gym.spaces.Box(0, 255, (8, 8, 3), np.uint8),
    }
)
ACT_SPACE = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)


def free_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def hello(task: str = "toy", observation_space=OBS_SPACE, action_space=ACT_SPACE) -> dict:
    return {
        "task": task,
        "observation_space": dict_space_to_json(observation_space),
        "action_space": box_to_json(action_space),
    }


def welcomed_dealer(endpoint: str, actor: str = "a"):
    """A raw ZeroMQ DEALER that said hello as ``actor`` and was welcomed: a test's hand-made
    messages go through it, as an actor's would."""
    dealer = zmq.Context.instance().socket(zmq.DEALER)
    dealer.linger = 0
    dealer.connect(endpoint)
    message = {"kind": "hello", "protocol": PROTOCOL_VERSION, "actor": actor, "acked": 0}
    dealer.send(wire.encode({**message, **hello()}))
    assert wire.decode(dealer.recv())["kind"] == "welcome"
    return dealer


def make_server(endpoint: str, log_dir, **kwargs) -> TransportServer:
    return TransportServer(
        endpoint,
        task="toy",
        observation_space=OBS_SPACE,
        action_space=ACT_SPACE,
        welcome_info={"note": "hi"},
        ingest_log=IngestLog(log_dir, fsync="never"),
        **kwargs,
    ).start()


def make_client(endpoint: str, actor: str, outbox_dir, **kwargs) -> TransportClient:
    hello_fields = kwargs.pop("hello", hello())
    return TransportClient(endpoint, actor, hello_fields, Outbox(outbox_dir), **kwargs).start()


def transition(i: int) -> bytes:
    """A valid transition whose state carries ``i`` (so its order can be checked)."""
    obs = {"state": np.full(5, i, np.float32), "cam": np.full((8, 8, 3), i % 256, np.uint8)}
    nxt = {
        "state": np.full(5, i + 1, np.float32),
        "cam": np.full((8, 8, 3), (i + 1) % 256, np.uint8),
    }
    return encode_transition(
        Transition(obs, np.zeros(3, np.float32), float(i), False, i % 10 == 9, nxt)
    )


def drain(server: TransportServer) -> list[tuple[str, int, dict]]:
    """Every transition the server has queued: (actor, seq, transition)."""
    out = []
    while not server.received.empty():
        batch = server.received.get_nowait()
        out.extend((batch.actor, batch.first_seq + k, t) for k, t in enumerate(batch.transitions))
    return out
