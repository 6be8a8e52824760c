"""The learner's side of the transport: one ROUTER socket served by a thread of its own.

It answers ``hello`` with a ``welcome`` that carries the next sequence number it expects from
that actor and, at once, the latest weights; it checks every transition against the task's
spaces, appends accepted batches to the ingest log before acknowledging them, and hands them
to the training loop through a queue. Anything malformed is refused and counted; the thread
never dies of bad input. Weights are broadcast to every welcomed connection.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass

import gymnasium as gym
import zmq

from robot_rl.data.spaces_json import box_to_json, describe_differences, dict_space_to_json
from robot_rl.transport import messages as msg
from robot_rl.transport.ingest_log import IngestLog
from robot_rl.transport.security import ServerKeys, check_bind
from robot_rl.transport.wire import WireError, decode, encode

logger = logging.getLogger(__name__)


@dataclass
class ReceivedBatch:
    actor: str
    first_seq: int
    transitions: list[dict]


class TransportServer:
    def __init__(
        self,
        endpoint: str,
        *,
        task: str,
        observation_space: gym.spaces.Dict,
        action_space: gym.spaces.Box,
        welcome_info: dict,
        ingest_log: IngestLog,
        cursors: dict[str, int] | None = None,
        keys: ServerKeys | None = None,
    ):
        check_bind(endpoint, keys)
        self.endpoint = endpoint
        self.task = task
        self.observation_space = observation_space
        self.action_space = action_space
        self._identity = {
            "task": task,
            "observation_space": dict_space_to_json(observation_space),
            "action_space": box_to_json(action_space),
        }
        self.welcome_info = welcome_info
        self.ingest_log = ingest_log
        self.cursors: dict[str, int] = dict(cursors or {})
        self.received: queue.Queue[ReceivedBatch] = queue.Queue()
        self.episode_stats: queue.Queue[tuple[str, dict]] = queue.Queue(maxsize=10_000)
        self.refused: Counter[str] = Counter()
        self.transitions_accepted = 0
        self._keys = keys
        self._peers: dict[bytes, str] = {}  # welcomed connection -> actor id
        self._weights: bytes | None = None  # the latest encoded weights message
        self._weights_version = -1
        self._context = zmq.Context.instance()
        self.session = uuid.uuid4().hex
        """This learner process: weight versions restart with it (from its checkpoint)."""
        self._wake_endpoint = f"inproc://robot-rl-weights-{self.session}"
        self._wake_sender: zmq.Socket | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name="transport-server", daemon=True)
        self.bound_endpoint: str | None = None

    # ------------------------------------------------------------------------- main thread

    def start(self, timeout: float = 10.0) -> TransportServer:
        self._thread.start()
        if not self._ready.wait(timeout) or self._error is not None:
            raise RuntimeError(
                f"transport server failed to start on {self.endpoint}: {self._error}"
            )
        return self

    def publish_weights(self, version: int, params: bytes) -> None:
        """Send new acting parameters to every actor (and to each one that connects later)."""
        frame = encode(
            {"kind": "weights", "version": int(version), "session": self.session, "params": params}
        )
        self._to_server_thread(b"weights", frame)

    def publish_status(self, status: dict) -> None:
        """Tell every actor how far training is behind the data (``lag``, in transitions)."""
        self._to_server_thread(b"status", encode({"kind": "status", **status}))

    def _to_server_thread(self, what: bytes, frame: bytes) -> None:
        # Sockets belong to one thread each: this PAIR is the main thread's, and only ever
        # used from the thread that publishes.
        if self._wake_sender is None:
            self._wake_sender = self._context.socket(zmq.PAIR)
            self._wake_sender.connect(self._wake_endpoint)
        self._wake_sender.send_multipart([what, frame])

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        if self._wake_sender is not None:
            self._wake_sender.close(linger=0)
            self._wake_sender = None

    @property
    def connected_actors(self) -> list[str]:
        return sorted(set(self._peers.values()))

    # ---------------------------------------------------------------------- server thread

    def _serve(self) -> None:
        authenticator = None
        router = self._context.socket(zmq.ROUTER)
        wake = self._context.socket(zmq.PAIR)
        try:
            router.linger = 0
            router.router_handover = True
            router.sndhwm = 1000
            if self._keys is not None:
                authenticator = self._keys.apply(router, self._context)
            router.bind(self.endpoint)
            self.bound_endpoint = router.last_endpoint.decode()
            wake.bind(self._wake_endpoint)
        except BaseException as err:  # reported to start()
            self._error = err
            self._ready.set()
            router.close(linger=0)
            wake.close(linger=0)
            return
        self._ready.set()
        poller = zmq.Poller()
        poller.register(router, zmq.POLLIN)
        poller.register(wake, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                events = dict(poller.poll(100))
                if wake in events:
                    what, frame = wake.recv_multipart()
                    self._broadcast(router, frame, keep=what == b"weights")
                if router in events:
                    for _ in range(256):  # bounded, so weights are never starved
                        try:
                            parts = router.recv_multipart(zmq.NOBLOCK)
                        except zmq.Again:
                            break
                        self._handle(router, parts)
        finally:
            router.close(linger=0)
            wake.close(linger=0)
            if authenticator is not None:
                authenticator.stop()

    def _broadcast(self, router: zmq.Socket, frame: bytes, keep: bool) -> None:
        if keep:
            self._weights = frame  # what a later actor gets on connecting
        for peer in list(self._peers):
            self._send(router, peer, frame)

    @staticmethod
    def _send(router: zmq.Socket, peer: bytes, frame: bytes) -> None:
        # A peer that left or cannot keep up loses this frame; it re-syncs on its next hello.
        with contextlib.suppress(zmq.ZMQError):
            router.send_multipart([peer, frame], zmq.NOBLOCK)

    def _reply(self, router: zmq.Socket, peer: bytes, message: dict) -> None:
        self._send(router, peer, encode(message))

    def _refuse(self, router: zmq.Socket, peer: bytes, reason: str) -> None:
        key = reason.split(":")[0][:80]
        self.refused[key] += 1
        if self.refused[key] in (1, 10, 100, 1000) or self.refused[key] % 10_000 == 0:
            logger.warning(
                "refused a message (%d so far of this kind): %s", self.refused[key], reason
            )
        self._reply(router, peer, {"kind": "refused", "reason": reason[:500]})

    def _handle(self, router: zmq.Socket, parts: list[bytes]) -> None:
        if len(parts) != 2:
            self.refused["wrong number of frames"] += 1
            return
        peer, frame = parts
        try:
            message = decode(frame)
            kind = msg.message_kind(message, msg.ACTOR_KINDS)
            if kind == "hello":
                self._on_hello(router, peer, message)
            elif peer not in self._peers:
                self._reply(router, peer, {"kind": "hello_first"})
            elif kind == "transitions":
                self._on_transitions(router, peer, message)
            else:
                self._on_stats(peer, message)
        except WireError as err:
            self._refuse(router, peer, str(err))

    def _on_hello(self, router: zmq.Socket, peer: bytes, message: dict) -> None:
        protocol = msg.require(message, "protocol", int)
        if protocol != msg.PROTOCOL_VERSION:
            raise WireError(
                f"protocol mismatch: the actor speaks version {protocol}, "
                f"this learner speaks {msg.PROTOCOL_VERSION}; update one of them"
            )
        actor = msg.actor_id_of(message)
        theirs = {key: message.get(key) for key in self._identity}
        differences = describe_differences(self._identity, theirs)
        if differences:
            raise WireError(
                "configuration mismatch: the learner's (expected) and the actor's differ: "
                + "; ".join(d.replace("log has", "actor has") for d in differences)
            )
        for old_peer, old_actor in list(self._peers.items()):
            if old_actor == actor and old_peer != peer:
                del self._peers[old_peer]  # the actor reconnected: the newest connection wins
        self._peers[peer] = actor
        next_seq = self.cursors.get(actor, 0)
        welcome = {"kind": "welcome", "next_seq": next_seq, "session": self.session}
        self._reply(router, peer, {**welcome, **self.welcome_info})
        if self._weights is not None:
            self._send(router, peer, self._weights)
        logger.info("actor %s connected; expecting sequence number %d", actor, next_seq)

    def _on_transitions(self, router: zmq.Socket, peer: bytes, message: dict) -> None:
        actor = self._peers[peer]
        first_seq = msg.require(message, "first_seq", int)
        items = msg.require(message, "items", list)
        if first_seq < 0 or not 0 < len(items) <= msg.MAX_BATCH:
            raise WireError(f"transitions: first_seq {first_seq}, {len(items)} items")
        expected = self.cursors.get(actor, 0)
        if first_seq > expected:
            # A gap: something before this batch never arrived. Ask for it again.
            self._reply(router, peer, {"kind": "ack", "next_seq": expected, "resend": True})
            return
        new_items = items[expected - first_seq :]
        transitions = [
            msg.decode_transition(item, self.observation_space, self.action_space)
            for item in new_items
        ]
        if transitions:
            with self.ingest_log.lock:  # logged and queued together: see IngestLog.rotate
                self.ingest_log.append(actor, expected, new_items)
                self.received.put(ReceivedBatch(actor, expected, transitions))
            self.cursors[actor] = expected + len(transitions)
            self.transitions_accepted += len(transitions)
        self._reply(router, peer, {"kind": "ack", "next_seq": self.cursors.get(actor, 0)})

    def _on_stats(self, peer: bytes, message: dict) -> None:
        episode = msg.require(message, "episode", dict)
        clean = {
            str(k): float(v)
            for k, v in list(episode.items())[:32]
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        with contextlib.suppress(queue.Full):
            self.episode_stats.put_nowait((self._peers[peer], {**clean, "time": time.time()}))
