"""A SIGTERM whose raise lands in a gc callback or ``__del__`` (Python swallows it there) is not
lost: the loops' ``raise_if_pending()`` raises it again, until an ``on_stop`` block has seen it."""

import gc
import signal
import sys

import pytest

from robot_rl.runtime import stopping
from robot_rl.runtime.progress import on_stop


@pytest.fixture(autouse=True)
def _clean_state():
    previous = signal.getsignal(signal.SIGTERM)
    stopping._received.clear()
    stopping._pending.clear()
    yield
    signal.signal(signal.SIGTERM, previous)
    stopping._received.clear()
    stopping._pending.clear()


class _SignalledWhileCollected:
    """Stands in for JAX's gc callback: the handler runs inside a finaliser."""

    def __del__(self):
        stopping._on_sigterm(signal.SIGTERM, None)


def test_a_sigterm_swallowed_by_a_finaliser_is_raised_again_by_the_loop(monkeypatch):
    swallowed = []
    monkeypatch.setattr(sys, "unraisablehook", swallowed.append)  # "Exception ignored in ..."
    _SignalledWhileCollected()
    gc.collect()
    assert [type(s.exc_value) for s in swallowed] == [stopping.Terminated]
    assert stopping.terminated()
    with pytest.raises(stopping.Terminated):
        stopping.raise_if_pending()


def test_on_stop_sees_the_stop_once_and_nothing_stays_pending():
    finals = []
    with pytest.raises(stopping.Terminated), on_stop(lambda: finals.append(stopping.stop_name())):
        _SignalledWhileCollected()
        gc.collect()
        for _ in range(3):  # a loop's steps
            stopping.raise_if_pending()
    assert finals == ["SIGTERM"]
    stopping.raise_if_pending()  # the final checkpoint's code may run the loop's helpers
    assert stopping.interrupted_exit_code() == stopping.SIGTERM_EXIT


def test_without_a_signal_nothing_is_raised_and_ctrl_c_keeps_130():
    stopping.raise_if_pending()
    assert stopping.stop_name() == "Ctrl-C"
    assert stopping.interrupted_exit_code() == stopping.SIGINT_EXIT


def test_a_swallowed_sigterm_prints_no_traceback_and_other_unraisables_still_do(capsys):
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # restored below
    try:
        assert stopping.sigterm_as_sigint()
        _SignalledWhileCollected()
        gc.collect()
        assert "Traceback" not in capsys.readouterr().err
        assert stopping.terminated()  # still pending: the stop is not lost

        class _Broken:
            def __del__(self):
                raise ValueError("a finaliser's own error")

        _Broken()
        gc.collect()
        assert "a finaliser's own error" in capsys.readouterr().err
    finally:
        monkeypatch.undo()
