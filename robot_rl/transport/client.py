"""The actor's side of the transport: a thread that empties the outbox into the learner.

The control loop never touches the network: it appends to the outbox and reads the latest
weights from a slot. This thread says hello (again after a learner restart), sends the outbox
from the learner's expected sequence number on with a bounded window, goes back to the last
acknowledged transition when acknowledgements stop coming (go-back-N), and keeps the newest
weights. A refusal (wrong task, spaces, protocol, or keys) is kept for the actor to report.
"""

from __future__ import annotations

import logging
import threading
import time

import zmq

from robot_rl.transport import messages as msg
from robot_rl.transport.outbox import Outbox
from robot_rl.transport.security import ClientKeys
from robot_rl.transport.wire import WireError, decode, encode

logger = logging.getLogger(__name__)


class TransportClient:
    def __init__(
        self,
        endpoint: str,
        actor_id: str,
        hello: dict,
        outbox: Outbox,
        *,
        keys: ClientKeys | None = None,
        batch_size: int = 64,
        window: int = 512,
        resend_after: float = 2.0,
        hello_every: float = 1.0,
    ):
        self.endpoint = endpoint
        self.actor_id = actor_id
        self._hello = encode(
            {"kind": "hello", "protocol": msg.PROTOCOL_VERSION, "actor": actor_id, **hello}
        )
        self.outbox = outbox
        self._keys = keys
        self.batch_size = batch_size
        self.window = window
        self.resend_after = resend_after
        self.hello_every = hello_every
        self.welcome: dict | None = None
        self.refused_reason: str | None = None
        self._weights: tuple[int, bytes] | None = None
        self._weights_session: str | None = None
        self.learner_lag = 0
        """Transitions the learner holds but has not trained on yet (from its last status)."""
        self._acked_at_status = 0
        self.weights_received = 0
        """Counts accepted weight messages: a change means new parameters to load."""
        self._weights_lock = threading.Lock()
        self._stats: list[dict] = []
        self._stats_lock = threading.Lock()
        self._stop = threading.Event()
        self._welcomed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="transport-client", daemon=True)

    # ------------------------------------------------------------------------- main thread

    def start(self) -> TransportClient:
        self._thread.start()
        return self

    def wait_welcome(self, timeout: float) -> bool:
        return self._welcomed.wait(timeout)

    @property
    def connected(self) -> bool:
        return self._welcomed.is_set()

    def latest_weights(self) -> tuple[int, bytes] | None:
        """The newest (version, acting parameters) received, never blocking."""
        with self._weights_lock:
            return self._weights

    def estimated_lag(self) -> int:
        """How far training is behind this actor's data: the learner's last reported lag plus
        everything this actor produced that the learner had not yet accepted then. It grows
        while the learner is silent (compiling, checkpointing), as the real lag does."""
        return self.learner_lag + max(0, self.outbox.next_seq - self._acked_at_status)

    def send_stats(self, episode: dict) -> None:
        with self._stats_lock:
            if len(self._stats) < 1000:
                self._stats.append(episode)

    def stop(self, flush_timeout: float = 0.0) -> None:
        """Stop; with ``flush_timeout`` first wait that long for the outbox to be acknowledged."""
        deadline = time.monotonic() + flush_timeout
        while self.outbox.backlog and time.monotonic() < deadline and self.refused_reason is None:
            time.sleep(0.05)
        self._stop.set()
        self._thread.join(timeout=5)

    # ---------------------------------------------------------------------- client thread

    def _socket(self, context: zmq.Context) -> zmq.Socket:
        socket = context.socket(zmq.DEALER)
        socket.linger = 0
        socket.immediate = True  # nothing queues for a connection that is not up
        socket.reconnect_ivl = 100
        socket.reconnect_ivl_max = 2000
        if self._keys is not None:
            self._keys.apply(socket)
        socket.connect(self.endpoint)
        return socket

    def _run(self) -> None:
        context = zmq.Context.instance()
        socket = self._socket(context)
        welcomed = False
        send_cursor = 0
        last_hello = last_progress = 0.0
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if not welcomed and now - last_hello >= self.hello_every:
                    self._try_send(socket, self._hello)
                    last_hello = now
                if welcomed:
                    send_cursor = max(send_cursor, self.outbox.acked)
                    if self.outbox.backlog == 0:
                        last_progress = now  # nothing waits for an acknowledgement
                    elif now - last_progress > self.resend_after:
                        send_cursor = self.outbox.acked  # acknowledgements stopped: go back
                        last_progress = now
                        welcomed = False  # and say hello: the learner may have restarted
                        last_hello = 0.0
                        self._welcomed.clear()
                        continue
                    send_cursor = self._send_window(socket, send_cursor)
                    with self._stats_lock:
                        stats, self._stats = self._stats, []
                    for episode in stats:
                        self._try_send(
                            socket,
                            encode({"kind": "stats", "actor": self.actor_id, "episode": episode}),
                        )
                if not socket.poll(20):
                    continue
                while True:
                    try:
                        frame = socket.recv(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    try:
                        message = decode(frame)
                        kind = msg.message_kind(message, msg.LEARNER_KINDS)
                    except WireError as err:
                        logger.warning("ignoring a malformed message from the learner: %s", err)
                        continue
                    if kind == "welcome":
                        send_cursor = self._on_welcome(message)
                        welcomed, last_progress = True, time.monotonic()
                    elif kind == "ack":
                        next_seq = msg.require(message, "next_seq", int)
                        if next_seq > self.outbox.acked:
                            last_progress = time.monotonic()
                        self.outbox.ack(next_seq)
                        if message.get("resend"):
                            send_cursor = next_seq
                    elif kind == "weights":
                        self._on_weights(message)
                    elif kind == "status":
                        self.learner_lag = msg.require(message, "lag", int)
                        self._acked_at_status = self.outbox.acked
                    elif kind == "hello_first":
                        welcomed, last_hello = False, 0.0
                        self._welcomed.clear()
                    elif kind == "refused":
                        self._on_refused(str(message.get("reason")), welcomed)
        finally:
            socket.close(linger=0)

    def _on_welcome(self, message: dict) -> int:
        next_seq = msg.require(message, "next_seq", int)
        if next_seq > self.outbox.next_seq:
            self.outbox.skip_to(next_seq)  # a fresh outbox for an actor the learner knows
        elif next_seq < self.outbox.acked:
            logger.warning(
                "the learner expects sequence number %d but transitions from %d on were "
                "already acknowledged and deleted here: was the learner's run directory reset?",
                next_seq,
                self.outbox.acked,
            )
        self.outbox.ack(next_seq)
        self.welcome = message
        self.refused_reason = None
        self._welcomed.set()
        return max(next_seq, self.outbox.acked)

    def _on_weights(self, message: dict) -> None:
        version = msg.require(message, "version", int)
        session = msg.require(message, "session", str)
        params = msg.require(message, "params", bytes)
        with self._weights_lock:
            # A restarted learner numbers from its checkpoint: its versions may be lower than
            # what this actor last saw, and are still the newest parameters.
            newer = self._weights is None or version >= self._weights[0]
            if newer or session != self._weights_session:
                self._weights, self._weights_session = (version, params), session
                self.weights_received += 1

    def _on_refused(self, reason: str, welcomed: bool) -> None:
        if reason != self.refused_reason:
            logger.error("the learner refused %s: %s", "data" if welcomed else "this actor", reason)
        self.refused_reason = reason

    def _send_window(self, socket: zmq.Socket, send_cursor: int) -> int:
        while send_cursor < self.outbox.next_seq and send_cursor - self.outbox.acked < self.window:
            items = self.outbox.read(send_cursor, self.batch_size)
            if not items:
                break
            batch = {"kind": "transitions", "actor": self.actor_id, "first_seq": send_cursor}
            frame = encode({**batch, "items": items}, compress=False)  # items are compressed
            if not self._try_send(socket, frame):
                break
            send_cursor += len(items)
        return send_cursor

    @staticmethod
    def _try_send(socket: zmq.Socket, frame: bytes) -> bool:
        try:
            socket.send(frame, zmq.NOBLOCK)
            return True
        except zmq.Again:
            return False  # not connected or the queue is full: the outbox keeps it
