"""The actor's side of the transport: a thread that empties the outbox into the learner.

The control loop never touches the network: it appends to the outbox and reads the latest
weights from a slot. This thread says hello (again after a learner restart), sends the outbox
from the learner's expected sequence number on with a bounded window, goes back to the last
acknowledged transition when acknowledgements stop coming (go-back-N), and keeps the newest
weights. A refusal of this actor (wrong task, spaces, protocol, a live actor with the same id)
or of its data is kept for the actor to report. When nothing answers, it says so within
seconds, and why that may be (ZeroMQ's handshake events tell a learner that needs keys, or
does not accept this actor's key, from one that is not there). One bad message never stops
this thread.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

import zmq
from zmq.utils.monitor import recv_monitor_message

from robot_rl.transport import messages as msg
from robot_rl.transport.outbox import Outbox
from robot_rl.transport.security import ClientKeys
from robot_rl.transport.wire import WireError, decode, encode

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY = 1.0
"""Seconds between heartbeats while welcomed (the learner tells live actors from dead ones)."""
SILENCE_WARNING_AFTER = 5.0
"""Seconds without any answer before the actor says that nothing answers."""


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
        silence_warning_after: float = SILENCE_WARNING_AFTER,
    ):
        self.endpoint = endpoint
        self.actor_id = actor_id
        self._hello_fields = {
            "kind": "hello",
            "protocol": msg.PROTOCOL_VERSION,
            "actor": actor_id,
            **hello,
        }
        self.outbox = outbox
        self._keys = keys
        self.batch_size = batch_size
        self.window = window
        self.resend_after = resend_after
        self.hello_every = hello_every
        self.silence_warning_after = silence_warning_after
        self.welcome: dict | None = None
        self.refused_reason: str | None = None
        self.data_refused: str | None = None
        """Why the learner refused this actor's transitions (the actor cannot go on)."""
        self.silence_reason: str | None = None
        """Why nothing may answer (set once no answer came for ``silence_warning_after`` s)."""
        self._weights: tuple[int, bytes] | None = None
        self._weights_session: str | None = None
        self.learner_lag = 0
        """Transitions the learner holds but has not trained on yet (from its last status)."""
        self._acked_at_status = 0
        self.learner_updates: int | None = None
        """Critic updates the learner had done at its last status (None: not told yet)."""
        self.weights_received = 0
        """Counts accepted weight messages: a change means new parameters to load."""
        self._weights_lock = threading.Lock()
        self._stats: list[dict] = []
        self._stats_lock = threading.Lock()
        self._stop = threading.Event()
        self._welcomed = threading.Event()
        self._listening = False
        """A TCP connection to the learner's address came up (something listens there)."""
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

    def _socket(self, context: zmq.Context) -> tuple[zmq.Socket, zmq.Socket]:
        socket = context.socket(zmq.DEALER)
        socket.linger = 0
        socket.immediate = True  # nothing queues for a connection that is not up
        socket.reconnect_ivl = 100
        socket.reconnect_ivl_max = 2000
        if self._keys is not None:
            self._keys.apply(socket)
        monitor_endpoint = f"inproc://robot-rl-client-monitor-{uuid.uuid4().hex}"
        socket.monitor(monitor_endpoint, _HANDSHAKE_EVENTS)
        monitor = context.socket(zmq.PAIR)
        monitor.linger = 0
        monitor.connect(monitor_endpoint)
        socket.connect(self.endpoint)
        return socket, monitor

    def _hello(self) -> bytes:
        return encode(
            {
                **self._hello_fields,
                "outbox": self.outbox.id,
                "run": self.outbox.learner_run,
                "acked": self.outbox.acked,
            }
        )

    def _run(self) -> None:
        context = zmq.Context.instance()
        socket, monitor = self._socket(context)
        self._started = self._last_answer = time.monotonic()
        try:
            while not self._stop.is_set():
                try:
                    self._step(socket, monitor)
                except Exception:  # a defect must not silence the actor's link for ever
                    logger.exception("transport client: unexpected error; saying hello again")
                    self._linked, self._last_hello = False, 0.0
                    self._welcomed.clear()
                    time.sleep(0.1)
        finally:
            socket.disable_monitor()
            monitor.close(linger=0)
            socket.close(linger=0)

    # The client thread's own state (only that thread reads or writes these).
    _linked = False  # welcomed by the learner on the current connection
    _send_cursor = 0
    _last_hello = _last_progress = _last_heartbeat = 0.0
    _handshake_problem: str | None = None

    def _step(self, socket: zmq.Socket, monitor: zmq.Socket) -> None:
        """One round: hello or send, then handle whatever the learner sent."""
        now = time.monotonic()
        self._watch_handshake(monitor, now)
        # A hello that no connection took yet goes again next round (every ~20 ms), not after
        # ``hello_every``: the actor is welcomed as soon as the learner is up.
        hello_due = not self._linked and now - self._last_hello >= self.hello_every
        if hello_due and self._try_send(socket, self._hello()):
            self._last_hello = now
        if self._linked:
            self._send_cursor = max(self._send_cursor, self.outbox.acked)
            if self.outbox.backlog == 0:
                self._last_progress = now  # nothing waits for an acknowledgement
            elif now - self._last_progress > self.resend_after:
                self._send_cursor = self.outbox.acked  # acknowledgements stopped: go back
                self._last_progress = now
                self._linked = False  # and say hello: the learner may have restarted
                self._last_hello = 0.0
                self._welcomed.clear()
                return
            self._send_cursor = self._send_window(socket, self._send_cursor)
            if now - self._last_heartbeat >= HEARTBEAT_EVERY:
                heartbeat = encode({"kind": "heartbeat", "actor": self.actor_id})
                if self._try_send(socket, heartbeat):
                    self._last_heartbeat = now
            with self._stats_lock:
                stats, self._stats = self._stats, []
            for episode in stats:
                self._try_send(
                    socket,
                    encode({"kind": "stats", "actor": self.actor_id, "episode": episode}),
                )
        if not socket.poll(20):
            return
        while True:
            try:
                frame = socket.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            self._last_answer = time.monotonic()
            try:
                self._on_message(decode(frame))
            except WireError as err:
                logger.warning("ignoring a malformed message from the learner: %s", err)

    def _on_message(self, message: dict) -> None:
        kind = msg.message_kind(message, msg.LEARNER_KINDS)
        if kind == "welcome":
            self._send_cursor = self._on_welcome(message)
            self._linked, self._last_progress = True, time.monotonic()
        elif kind == "ack":
            next_seq = msg.non_negative(message, "next_seq")
            if next_seq > self.outbox.acked:
                self._last_progress = time.monotonic()
            self.outbox.ack(next_seq)
            if message.get("resend"):
                self._send_cursor = next_seq
        elif kind == "weights":
            self._on_weights(message)
        elif kind == "status":
            self.learner_lag = msg.require(message, "lag", int)
            if "updates" in message:  # a learner of this version says; an older one does not
                self.learner_updates = msg.non_negative(message, "updates")
            self._acked_at_status = self.outbox.acked
        elif kind == "hello_first":
            self._linked, self._last_hello = False, 0.0
            self._welcomed.clear()
        elif kind == "refused":
            reason, of = str(message.get("reason"))[:500], str(message.get("of"))
            self._on_refused(reason, of, self._linked)

    def _watch_handshake(self, monitor: zmq.Socket, now: float) -> None:
        """Turn ZeroMQ's handshake failures and a long silence into one clear warning each."""
        while monitor.poll(0):
            event = recv_monitor_message(monitor)["event"]
            if event == zmq.EVENT_CONNECTED:
                self._listening = True
            problem = _HANDSHAKE_PROBLEMS[self._keys is not None].get(event)
            if problem and problem != self._handshake_problem:
                self._handshake_problem = problem
                logger.warning("the learner at %s does not answer: %s", self.endpoint, problem)
        if (
            self.silence_reason is None
            and not self._welcomed.is_set()
            and now - self._last_answer > self.silence_warning_after
        ):
            self.silence_reason = self._handshake_problem or self._silence_cause()
            logger.warning(
                "nothing answers at %s after %.0f s: %s",
                self.endpoint, now - self._started, self.silence_reason,
            )  # fmt: skip

    def _silence_cause(self) -> str:
        """Why nothing answered, as far as this side can tell: a learner that needs keys this
        actor lacks fails the handshake (``_HANDSHAKE_PROBLEMS``), so without such a failure
        keys are not the likely cause; a learner that has not bound its port yet (still
        starting) or runs elsewhere is."""
        if self._keys is not None:
            keys = " Does it accept this actor's key, and is --learner-public-key its key?"
        else:
            keys = ""
        if self._listening:  # a silent handshake failure cannot be ruled out
            keys = keys or (
                " Or, if it was started with --curve-secret-key, this actor needs keys too "
                "(--curve-secret-key, --learner-public-key)."
            )
            return "it listens but has not answered yet: still starting (loading, compiling)?" + (
                keys
            )
        return (
            "nothing listens there yet: the learner may still be starting (it binds its port "
            "once loaded), or it is not running at this address." + keys
        )

    def _on_welcome(self, message: dict) -> int:
        next_seq = msg.non_negative(message, "next_seq")
        run = msg.optional_name(message, "run")
        if run is not None and self.outbox.learner_run not in (None, run):
            logger.warning(
                "the learner is a new run (%s; this outbox fed %s before): this actor's stream "
                "in it starts at sequence %d",
                run, self.outbox.learner_run, max(next_seq, self.outbox.acked),
            )  # fmt: skip
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
        self.outbox.set_learner_run(run)
        self.welcome = message
        self.refused_reason = None
        self.silence_reason = None
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

    def _on_refused(self, reason: str, of: str, welcomed: bool) -> None:
        if of == "stats":  # figures only: worth a warning, not the end of the run
            logger.warning("the learner refused an episode's figures: %s", reason)
            return
        if of == "transitions" and welcomed:
            if reason != self.data_refused:
                logger.error("the learner refused this actor's transitions: %s", reason)
            self.data_refused = reason
            return
        if of == "heartbeat":
            return
        if reason != self.refused_reason:
            logger.error("the learner refused this actor: %s", reason)
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


_HANDSHAKE_EVENTS = (
    zmq.EVENT_CONNECTED
    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    | zmq.EVENT_HANDSHAKE_FAILED_AUTH
    | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
)
_HANDSHAKE_PROBLEMS = {
    False: {  # this actor has no keys
        zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "it requires CURVE keys and this actor has none "
        "(pass --curve-secret-key and --learner-public-key, from `robot-rl keys`)",
        zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL: "the connection handshake failed",
    },
    True: {
        zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "this actor has keys but the learner runs without "
        "them (or speaks another protocol)",
        zmq.EVENT_HANDSHAKE_FAILED_AUTH: "it does not accept this actor's key (is the actor's "
        "public .key in the learner's --authorized-keys directory?)",
        zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL: "the CURVE handshake failed (is "
        "--learner-public-key the learner's public key?)",
    },
}
