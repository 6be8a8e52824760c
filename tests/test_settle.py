"""When a reset's move_to is over (robot_rl.ros.settle, plain numpy): settled within the
tolerance, or stalled short of an unreachable target once the TCP has stood still for the stall
time by its readings' stamps, never sooner and never for want of readings."""

import numpy as np
import pytest

from robot_rl.ros.settle import SETTLED, STALLED, SettleWatch


def test_a_reached_target_is_settled_at_once():
    watch = SettleWatch([0.2, 0.0, 0.07], tolerance=0.005, stall_seconds=1.5)
    assert watch.update([0.1, 0.0, 0.07], 0.0) is None
    assert watch.update([0.198, 0.0, 0.07], 0.1) == SETTLED
    assert watch.error == pytest.approx(0.002)


def test_a_tcp_standing_short_of_its_target_stalls_after_the_stall_time():
    watch = SettleWatch([0.35, 0.1, 0.07], tolerance=0.005, stall_seconds=1.5)
    stamps = np.arange(0.0, 3.0, 0.1)
    verdicts = [watch.update([0.28, 0.08, 0.07 + 0.001 * (i % 2)], t) for i, t in enumerate(stamps)]
    first = verdicts.index(STALLED)
    assert stamps[first] == pytest.approx(1.5)  # jitter below the tolerance is standing still
    assert all(v is None for v in verdicts[:first])
    assert watch.error == pytest.approx(np.hypot(0.07, 0.02), abs=0.002)


def test_a_slow_but_moving_tcp_never_stalls():
    watch = SettleWatch([0.3, 0.0, 0.07], tolerance=0.005, stall_seconds=1.5)
    # 1 cm/s: more than the tolerance per stall time, so it is still on its way
    verdicts = [watch.update([0.2 + 0.01 * t, 0.0, 0.07], t) for t in np.arange(0.0, 10.0, 0.1)]
    assert STALLED not in verdicts and verdicts[-1] == SETTLED


def test_the_stall_clock_is_the_readings_stamps():
    watch = SettleWatch([0.3, 0.0, 0.07], tolerance=0.005, stall_seconds=1.5)
    assert watch.update([0.2, 0.0, 0.07], 10.0) is None
    assert watch.update([0.2, 0.0, 0.07], 11.0) is None  # a second of readings: not yet
    assert watch.update([0.25, 0.0, 0.07], 12.0) is None  # moved: the clock starts again
    assert watch.update([0.25, 0.0, 0.07], 13.4) is None
    assert watch.update([0.25, 0.0, 0.07], 13.5) == STALLED


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="must be > 0"):
        SettleWatch([0, 0, 0], tolerance=0.0, stall_seconds=1.0)
    with pytest.raises(ValueError, match="must be > 0"):
        SettleWatch([0, 0, 0], tolerance=0.005, stall_seconds=0.0)
