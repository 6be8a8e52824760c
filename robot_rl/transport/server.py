"""The learner's side of the transport: one ROUTER socket served by a thread of its own.

``hello`` gets a ``welcome`` (the learner run's identity, the next sequence number expected from
that actor: for an actor new to this run, its ``acked``) and the latest weights. Transitions are
checked against the task's spaces and value bound; accepted batches go to the ingest log before
they are acknowledged (a batch it cannot take is not acknowledged, so the actor re-sends), then
to the training loop through a queue. A malformed frame, or any exception handling one, is
counted and logged with its peer: no frame stops the thread. A welcomed connection silent for
``forget_after`` is forgotten; those that never sent a transition are bounded by ``max_idle``
(the longest silent gives way), streaming ones by ``max_peers``. Weights go to every welcomed one.
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
from robot_rl.transport.outbox import is_disk_full
from robot_rl.transport.security import ServerKeys, check_bind
from robot_rl.transport.wire import MAX_MESSAGE_BYTES, WireError, decode, encode

logger = logging.getLogger(__name__)

LIVE_FOR = 5.0
"""Seconds after its last message that a connection still counts as a live actor (actors send
a heartbeat every second)."""
FORGET_AFTER = LIVE_FOR
"""Default of ``forget_after``: seconds of silence after which a welcomed connection is dropped
from the table (five heartbeats)."""
MAX_PEERS = 256
"""Streaming connections (that have sent a transition) at most (each costs a little memory)."""
MAX_IDLE = 64
"""Welcomed connections that have not sent a transition yet, at most; a newcomer beyond it
takes the place of the one heard from longest ago."""
SWEEP_EVERY = 0.5
"""Seconds between two sweeps of the table for silent connections."""


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
        value_bound: float = msg.DEFAULT_VALUE_BOUND,
        forget_after: float = FORGET_AFTER,
        max_peers: int = MAX_PEERS,
        max_idle: int = MAX_IDLE,
        stack: str | None = None,
    ):
        """``forget_after``: seconds of silence after which a connection is forgotten;
        ``max_peers``: streaming connections at most; ``max_idle``: connections that have not
        sent a transition yet, at most (see the module docstring). ``stack``: the stack this
        learner belongs to (``robot-rl up``, ``ros2 launch``); an actor whose hello names
        another stack, or none, is refused, so that an actor never joins another stack's
        learner by accident (None: any actor)."""
        if not forget_after > 0 or max_peers < 1 or max_idle < 1:
            raise ValueError(
                f"forget_after {forget_after} must be > 0, max_peers {max_peers} and "
                f"max_idle {max_idle} >= 1"
            )
        check_bind(endpoint, keys)
        self.forget_after = float(forget_after)
        self.max_peers = int(max_peers)
        self.max_idle = int(max_idle)
        self.endpoint = endpoint
        self.task = task
        self.observation_space = observation_space
        self.action_space = action_space
        self._identity = {
            "task": task,
            "observation_space": dict_space_to_json(observation_space),
            "action_space": box_to_json(action_space),
        }
        self.stack = stack
        self.welcome_info = welcome_info
        self.ingest_log = ingest_log
        self.run_id = ingest_log.run_id
        self.value_bound = value_bound
        self.cursors: dict[str, int] = dict(cursors or {})
        self._kept_cursors = set(self.cursors)  # resumed or streamed: never dropped
        self.received: queue.Queue[ReceivedBatch] = queue.Queue()
        self.episode_stats: queue.Queue[tuple[str, dict]] = queue.Queue(maxsize=10_000)
        self.refused: Counter[str] = Counter()
        self.transitions_accepted = 0
        self._keys = keys
        self._peers: dict[bytes, str] = {}  # welcomed connection -> actor id
        self._outbox_of: dict[bytes, str | None] = {}  # welcomed connection -> outbox id
        self._last_seen: dict[bytes, float] = {}  # welcomed connection -> monotonic time
        self._streaming: set[bytes] = set()  # welcomed connections that sent a transition
        self.forgotten = 0
        """Connections dropped from the table: silent too long, or given way to a newcomer."""
        self._next_sweep = 0.0
        self._ingest_failing = False
        self._weights: bytes | None = None  # the latest encoded weights message
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
        return sorted(set(self._peers.copy().values()))  # the server thread changes it

    # ---------------------------------------------------------------------- server thread

    def _serve(self) -> None:
        authenticator = None
        router = self._context.socket(zmq.ROUTER)
        wake = self._context.socket(zmq.PAIR)
        try:
            router.linger = 0
            router.router_handover = True
            router.sndhwm = 1000
            router.maxmsgsize = MAX_MESSAGE_BYTES + 64  # ZeroMQ drops a peer sending more
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
                now = time.monotonic()
                if now >= self._next_sweep:
                    self._next_sweep = now + SWEEP_EVERY
                    self._sweep(now)
                if router in events:
                    for _ in range(256):  # bounded, so weights are never starved
                        try:
                            parts = router.recv_multipart(zmq.NOBLOCK, copy=False)
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

    def _count(self, key: str) -> bool:
        """Count one refusal of kind ``key``; True when it is one to log (not every one)."""
        self.refused[key] += 1
        return self.refused[key] in (1, 10, 100, 1000) or self.refused[key] % 10_000 == 0

    def _who(self, peer: bytes, address: str) -> str:
        actor = self._peers.get(peer)
        return f"{'actor ' + actor if actor else 'connection'} {peer.hex()[:10]} from {address}"

    def _refuse(
        self, router: zmq.Socket, peer: bytes, reason: str, of: str, address: str = "?"
    ) -> None:
        key = reason.split(":")[0][:80]
        if self._count(key):
            logger.warning(
                "refused a message (%d so far of this kind) from %s: %s",
                self.refused[key], self._who(peer, address), reason,
            )  # fmt: skip
        self._reply(router, peer, {"kind": "refused", "reason": reason[:500], "of": of})

    def _handle(self, router: zmq.Socket, parts: list) -> None:
        address = _peer_address(parts[-1])
        parts = [part.bytes for part in parts]
        if len(parts) != 2:
            if self._count("wrong number of frames"):
                logger.warning("ignored a message of %d frames from %s", len(parts), address)
            return
        peer, frame = parts
        kind = "message"
        try:
            message = decode(frame)
            kind = msg.message_kind(message, msg.ACTOR_KINDS)
            if kind == "hello":
                self._on_hello(router, peer, message)
                return
            if peer not in self._peers:
                self._reply(router, peer, {"kind": "hello_first"})
                return
            self._last_seen[peer] = time.monotonic()
            if kind == "transitions":
                self._on_transitions(router, peer, message, address)
            elif kind == "stats":
                self._on_stats(peer, message)
        except WireError as err:
            self._refuse(router, peer, str(err), kind, address)
        except Exception as err:  # a defect met by some frame: count it, log it, serve on
            key = f"internal error ({type(err).__name__})"
            if self._count(key):
                logger.exception(
                    "a %r message from %s raised %s (%d so far); this thread serves on",
                    kind, self._who(peer, address), type(err).__name__, self.refused[key],
                )  # fmt: skip
            reason = f"{key}: the learner could not handle this {kind} message: {err}"
            self._reply(router, peer, {"kind": "refused", "reason": reason[:500], "of": kind})

    def _on_hello(self, router: zmq.Socket, peer: bytes, message: dict) -> None:
        protocol = msg.require(message, "protocol", int)
        if protocol != msg.PROTOCOL_VERSION:
            raise WireError(
                f"protocol mismatch: the actor speaks version {protocol}, "
                f"this learner speaks {msg.PROTOCOL_VERSION}; update one of them"
            )
        actor = msg.actor_id_of(message)
        if self.stack is not None and message.get("stack") != self.stack:
            theirs = message.get("stack")
            raise WireError(
                f"this learner belongs to stack {self.stack!r}, the actor to "
                f"{str(theirs)[:80]!r}: another stack's learner is at this address; give "
                "each stack its own learner port"
            )
        theirs = {key: msg.json_like(message.get(key), key) for key in self._identity}
        differences = describe_differences(self._identity, theirs)
        if differences:
            raise WireError(
                "configuration mismatch: the learner's (expected) and the actor's differ: "
                + "; ".join(d.replace("log has", "actor has") for d in differences)
            )
        outbox = msg.optional_name(message, "outbox")
        their_run = msg.optional_name(message, "run")
        acked = msg.non_negative(message, "acked") if "acked" in message else 0
        now = time.monotonic()
        for old_peer, old_actor in list(self._peers.items()):
            if old_actor != actor or old_peer == peer:
                continue
            silent = now - self._last_seen.get(old_peer, 0.0)
            if (outbox is None or self._outbox_of.get(old_peer) != outbox) and silent < LIVE_FOR:
                raise WireError(
                    f"actor id {actor!r} is in use by a live actor (another outbox, heard "
                    f"{silent:.1f} s ago): give each actor its own --actor-id"
                )
            self._forget(old_peer)  # the actor restarted or reconnected: the newest wins
        self._sweep(now)
        if peer not in self._peers:
            self._make_room_for_newcomer()
        next_seq = self._stream_start(actor, acked, their_run)
        self._peers[peer] = actor
        self._outbox_of[peer] = outbox
        self._last_seen[peer] = now
        welcome = {
            "kind": "welcome",
            "next_seq": next_seq,
            "session": self.session,
            "run": self.run_id,
        }
        self._reply(router, peer, {**welcome, **self.welcome_info})
        if self._weights is not None:
            self._send(router, peer, self._weights)
        logger.info("actor %s connected; expecting sequence number %d", actor, next_seq)

    def _stream_start(self, actor: str, acked: int, their_run: str | None) -> int:
        """Where this actor's stream goes on: this run's cursor, or the first transition the
        actor still holds when that is later (nothing below it can be sent any more)."""
        cursor = self.cursors.get(actor)
        if cursor is None:
            if acked and their_run != self.run_id:
                logger.info(
                    "actor %s is new to this learner run: its stream starts at sequence %d "
                    "(what it sent before was acknowledged by %s)",
                    actor, acked, f"learner run {their_run}" if their_run else "another run",
                )  # fmt: skip
            cursor = acked
        elif cursor < acked:
            if their_run == self.run_id:
                logger.warning(
                    "actor %s: transitions %d-%d were acknowledged by this run but are not in "
                    "it (was the run directory restored from an older copy, or did a repair of "
                    "the actor's outbox drop them?); going on from %d",
                    actor, cursor, acked - 1, acked,
                )  # fmt: skip
            else:
                logger.info(
                    "actor %s: transitions %d-%d went to another learner run; going on from %d",
                    actor, cursor, acked - 1, acked,
                )  # fmt: skip
            cursor = acked
        self.cursors[actor] = cursor
        return cursor

    def _forget(self, peer: bytes) -> None:
        actor = self._peers.pop(peer, None)
        self._outbox_of.pop(peer, None)
        self._last_seen.pop(peer, None)
        self._streaming.discard(peer)
        if (
            actor is not None
            and actor not in self._kept_cursors
            and actor not in self._peers.values()
        ):
            # nothing of it was stored: its next hello says again where its stream starts
            # (so ids that only ever said hello do not grow the table of cursors)
            self.cursors.pop(actor, None)

    def _sweep(self, now: float) -> None:
        """Forget every connection silent for longer than ``forget_after``."""
        for peer, seen in list(self._last_seen.items()):
            if now - seen > self.forget_after:
                logger.info(
                    "forgot %s: silent for %.1f s (bound %g s)",
                    self._who(peer, "?"), now - seen, self.forget_after,
                )  # fmt: skip
                self._forget(peer)
                self.forgotten += 1

    def _make_room_for_newcomer(self) -> None:
        """A newcomer joins the connections that have not streamed yet: when those are
        ``max_idle``, the one heard from longest ago gives way."""
        idle = [p for p in self._peers if p not in self._streaming]
        if len(idle) < self.max_idle:
            return
        oldest = min(idle, key=lambda p: self._last_seen.get(p, 0.0))
        logger.warning(
            "%d connections have said hello and sent nothing: %s gives way to a newcomer",
            len(idle), self._who(oldest, "?"),
        )  # fmt: skip
        self._forget(oldest)
        self.forgotten += 1

    def _on_transitions(self, router: zmq.Socket, peer: bytes, message: dict, address: str) -> None:
        actor = self._peers[peer]
        if peer not in self._streaming:
            if len(self._streaming) >= self.max_peers:
                raise WireError(
                    f"too many actors: this learner serves at most {self.max_peers} streaming "
                    "actors; try again once one has stopped"
                )
            self._streaming.add(peer)
            self._kept_cursors.add(actor)  # what it sent is stored: its cursor must stay
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
            msg.decode_transition(item, self.observation_space, self.action_space, self.value_bound)
            for item in new_items
        ]
        if transitions:
            with self.ingest_log.lock:  # logged and queued together: see IngestLog.rotate
                try:
                    self.ingest_log.append(actor, expected, new_items)
                except OSError as err:
                    self._ingest_failed(err, actor, address)
                    return  # not acknowledged: the actor keeps the batch and sends it again
                self.received.put(ReceivedBatch(actor, expected, transitions))
            if self._ingest_failing:
                self._ingest_failing = False
                logger.warning("ingest log: writing again; acknowledgements resume")
            self.cursors[actor] = expected + len(transitions)
            self.transitions_accepted += len(transitions)
        self._reply(router, peer, {"kind": "ack", "next_seq": self.cursors.get(actor, 0)})

    def _ingest_failed(self, err: OSError, actor: str, address: str) -> None:
        key = "ingest log write failed"
        if self._count(key) or not self._ingest_failing:
            what = "the disk is full" if is_disk_full(err) else "it cannot be written"
            logger.error(
                "ingest log %s: %s (%s): batches are not acknowledged, the actors keep them "
                "(%d refused so far; last from actor %s at %s)",
                self.ingest_log.directory, what, err.strerror or err, self.refused[key],
                actor, address,
            )  # fmt: skip
        self._ingest_failing = True

    def _on_stats(self, peer: bytes, message: dict) -> None:
        clean = msg.check_episode(msg.require(message, "episode", dict), self.value_bound)
        with contextlib.suppress(queue.Full):
            self.episode_stats.put_nowait((self._peers[peer], {**clean, "time": time.time()}))


def _peer_address(frame) -> str:
    """The remote address ZeroMQ reports for a received frame (for logs)."""
    try:
        return frame.get("Peer-Address") or "?"
    except (zmq.ZMQError, AttributeError, TypeError):
        return "?"
