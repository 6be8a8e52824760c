"""A serial device's far end on a pseudo-terminal, behind a link the node opens as it would open
/dev/vesc or /dev/serial/by-id/... (udev's names for a USB adapter). ``unplug`` removes the link
and closes the pty, so the node's reads and writes fail as on a pulled cable; ``plug`` makes a
new pty and points the link at it, as a replugged adapter comes back under the same name."""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
import tty
from pathlib import Path


class PtyLink:
    def __init__(self, link: str | Path):
        self.link = Path(link)
        self._lock = threading.Lock()
        self._master: int | None = None
        self._slave: int | None = None

    @property
    def plugged(self) -> bool:
        return self._master is not None

    def plug(self) -> str:
        """A new pty, and the link pointing at it; returns the pty's device path."""
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line discipline: bytes as a USB serial adapter's
        path = os.ttyname(slave)
        self.link.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.link.with_name(self.link.name + ".new")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(path)
        tmp.replace(self.link)  # atomic: the node never sees a half-made link
        with self._lock:
            self._master, self._slave = master, slave
        return path

    def unplug(self) -> None:
        """The port goes away: the link is removed and the pty closed."""
        self.link.unlink(missing_ok=True)
        with self._lock:
            fds, self._master, self._slave = (self._master, self._slave), None, None
        for fd in fds:
            if fd is not None:
                os.close(fd)

    def read(self, timeout: float) -> bytes | None:
        """What the node wrote, waiting up to ``timeout``; None while unplugged."""
        with self._lock:
            master = self._master
        if master is None:
            return None
        try:
            ready, _, _ = select.select([master], [], [], timeout)
            return os.read(master, 4096) if ready else b""
        except OSError:  # unplugged under us
            return None

    def write(self, data: bytes) -> None:
        with self._lock:
            master = self._master
        if master is not None:
            with contextlib.suppress(OSError):
                os.write(master, data)


class PtyPeer:
    """A device's far end served from a thread: subclasses answer what arrives (``_received``)
    through ``_port.write`` and reset their parser when a new pty is plugged (``_plugged``)."""

    thread_name = "pty-peer"

    def __init__(self, link: str | Path):
        self.link = Path(link)
        self._lock = threading.Lock()
        self._port = PtyLink(link)
        self._thread: threading.Thread | None = None
        self._running = False
        self.last_heard = -float("inf")
        """When the node last wrote to the port (monotonic)."""

    def start(self):
        self.plug()
        self._running = True
        self._thread = threading.Thread(target=self._serve, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    @property
    def serving(self) -> bool:
        """The serving thread runs (plugged or not)."""
        return self._thread is not None and self._thread.is_alive()

    def plug(self) -> str:
        """A new pty, and the link pointing at it; returns the pty's device path."""
        path = self._port.plug()
        with self._lock:
            self._plugged()
        return path

    def unplug(self) -> None:
        """The port goes away: the link is removed and the pty closed (the node's reads fail)."""
        self._port.unplug()

    def close(self) -> None:
        self._running = False
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self.unplug()

    def _serve(self) -> None:
        while self._running:
            data = self._port.read(0.02)
            if data is None:  # unplugged
                time.sleep(0.01)
                continue
            if data:
                self.last_heard = time.monotonic()
            self._received(data)

    def _plugged(self) -> None:
        """A new pty: drop what was half-received on the old one (under ``_lock``)."""

    def _received(self, data: bytes) -> None:
        raise NotImplementedError
