"""SIGTERM is a graceful stop wherever SIGINT is.

SLURM, ``docker stop``, systemd and ``kill`` send SIGTERM; a person at the terminal sends SIGINT.
``sigterm_as_sigint()`` (the ``robot-rl`` command line installs it) makes SIGTERM raise
``Terminated``, a ``KeyboardInterrupt``, so every command's Ctrl-C path (the final checkpoint,
its one line, its exit code) runs for both. The exit code says which it was: 130 for SIGINT,
143 for SIGTERM (128 + the signal's number, as a shell reports a process killed by it).
A command that handles SIGTERM itself (the learner, ``up``) replaces this handler while it runs.

A handler's exception lands wherever the main thread is, and where that is a gc callback or a
``__del__`` (JAX's ``_xla_gc_callback`` runs often), Python prints "Exception ignored" and goes
on: the stop was lost and training ran on until killed. So the signal stays pending until an
``on_stop`` block has seen it, and the loops call ``raise_if_pending()`` each step; the
"Exception ignored" traceback of such a swallowed ``Terminated`` is not printed
(``_quiet_unraisable``), since the stop is not lost.
"""

from __future__ import annotations

import signal
import sys
import threading

SIGINT_EXIT = 130
SIGTERM_EXIT = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where SIGINT raises ``KeyboardInterrupt``."""


_received: list[int] = []
_pending: list[int] = []


def _on_sigterm(signum, _frame) -> None:
    _received.append(signum)
    _pending.append(signum)
    raise Terminated()


def _quiet_unraisable(unraisable) -> None:
    """``sys.unraisablehook``: a ``Terminated`` swallowed by a callback stays pending (no
    traceback); anything else goes to the default hook."""
    if isinstance(unraisable.exc_value, Terminated):
        return
    sys.__unraisablehook__(unraisable)


def raise_if_pending() -> None:
    """Raise ``Terminated`` again for a SIGTERM whose first raise was swallowed."""
    if _pending:
        raise Terminated()


def acknowledge() -> None:
    """The stop reached a handler (``on_stop``): nothing is pending any more."""
    _pending.clear()


def sigterm_as_sigint() -> bool:
    """Install the SIGTERM handler (main thread only); returns whether it was installed."""
    if threading.current_thread() is not threading.main_thread():
        return False
    signal.signal(signal.SIGTERM, _on_sigterm)
    sys.unraisablehook = _quiet_unraisable
    return True


def terminated() -> bool:
    """Whether this process has received SIGTERM."""
    return bool(_received)


def stop_name() -> str:
    """How the run was stopped, for its one line: 'SIGTERM' or 'Ctrl-C'."""
    return "SIGTERM" if _received else "Ctrl-C"


def interrupted_exit_code(code: int = SIGINT_EXIT) -> int:
    """A command's exit code once stopped: SIGINT's 130 becomes 143 after SIGTERM."""
    return SIGTERM_EXIT if _received and code == SIGINT_EXIT else code
