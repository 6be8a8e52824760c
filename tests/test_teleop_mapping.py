"""The teleop mapping the SpaceMouse and gamepad nodes share: deadband, scaling, signs, clipping,
button mapping (hold and toggle). Pure: no ROS."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from robot_rl.drivers.teleop.teleop_mapping import (
    RELEASED,
    AxisSource,
    TeleopMapper,
    apply_deadband,
    parse_axis,
)

AXES = ("a", "b", "c", "d", "e", "f")


def resolve(name: str) -> str:
    if name not in AXES:
        raise ValueError(f"unknown axis {name!r}")
    return name


def mapper(**kwargs) -> TeleopMapper:
    specs = kwargs.pop("specs", AXES)
    return TeleopMapper([parse_axis(s, resolve) for s in specs], **kwargs)


def test_parse_axis_signs_and_none():
    assert parse_axis("-b", resolve) == AxisSource("b", -1.0)
    assert parse_axis(" +c ", resolve) == AxisSource("c", 1.0)
    assert parse_axis("none", resolve) == AxisSource(None)
    assert parse_axis("", resolve) == AxisSource(None)
    with pytest.raises(ValueError, match="unknown axis 'z'"):
        parse_axis("-z", resolve)


def test_deadband_zeroes_small_deflections_and_rescales_the_rest():
    assert apply_deadband(0.05, 0.1) == 0.0
    assert apply_deadband(-0.1, 0.1) == 0.0
    assert apply_deadband(1.0, 0.1) == 1.0
    assert apply_deadband(-1.0, 0.1) == -1.0
    assert math.isclose(apply_deadband(0.55, 0.1), 0.5)
    assert apply_deadband(0.3, 0.0) == 0.3


@given(st.floats(-1.0, 1.0), st.floats(0.0, 0.95))
def test_deadband_is_continuous_monotone_and_bounded(value, width):
    out = apply_deadband(value, width)
    assert -1.0 <= out <= 1.0
    assert out == 0.0 or math.copysign(1.0, out) == math.copysign(1.0, value)
    assert abs(out) <= abs(value) + 1e-12  # never amplifies
    if abs(value) <= width:
        assert out == 0.0


def test_scaling_signs_and_clipping():
    m = mapper(
        specs=("a", "-b", "none", "d", "-e", "f"),
        deadband=0.0,
        translation_scale=0.5,
        rotation_scale=2.0,
    )
    frame = m.frame({"a": 1.0, "b": 0.4, "c": 1.0, "d": 0.25, "e": 0.8, "f": -3.0}, ())
    assert frame.twist == (0.5, -0.2, 0.0, 0.5, -1.0, -1.0)  # rotation 1.6 clipped to 1
    assert all(type(v) is float for v in frame.twist)


def test_missing_and_broken_axes_never_steer():
    m = mapper(deadband=0.0)
    frame = m.frame({"a": float("nan"), "b": float("inf"), "c": -float("inf")}, ())
    assert frame.twist == (0.0,) * 6
    assert m.frame({}, ()) == RELEASED


def test_buttons_hold():
    m = mapper(intervene=7, close=0, open_=1)
    assert m.frame({}, {7, 0}).buttons == (1, 1, 0, 0, 0)
    assert m.frame({}, {1}).buttons == (0, 0, 1, 0, 0)
    assert m.frame({}, {0, 1}).buttons == (0, 1, 1, 0, 0)  # the source reads both as "keep"
    assert mapper().frame({}, {0, 1, 7}).buttons == (0,) * 5  # none mapped


def test_success_and_reject_land_on_the_contracts_indices_and_are_held_not_toggled():
    from robot_rl.ros.teleop_contract import JOY_BUTTONS, REJECT_BUTTON, SUCCESS_BUTTON

    m = mapper(intervene="RB", intervene_toggle=True, success="START", reject="BACK")
    assert len(m.frame({}, set()).buttons) == JOY_BUTTONS == len(RELEASED.buttons)
    frame = m.frame({}, {"START"})
    assert frame.buttons[SUCCESS_BUTTON] == 1 and frame.buttons[REJECT_BUTTON] == 0
    assert m.frame({}, {"START"}).buttons[SUCCESS_BUTTON] == 1  # held: still down
    assert m.frame({}, set()).buttons[SUCCESS_BUTTON] == 0  # released: up again
    assert m.frame({}, {"BACK"}).buttons == (0, 0, 0, 0, 1)
    m.reset()
    assert m.frame({}, set()) == RELEASED


def test_buttons_toggle_on_each_press_and_reset_releases():
    m = mapper(intervene="RB", intervene_toggle=True)
    assert m.frame({}, {"RB"}).buttons[0] == 1
    assert m.frame({}, {"RB"}).buttons[0] == 1  # held: no new edge
    assert m.frame({}, set()).buttons[0] == 1
    assert m.frame({}, {"RB"}).buttons[0] == 0
    assert m.frame({}, set()).buttons[0] == 0
    assert m.frame({}, {"RB"}).buttons[0] == 1
    m.reset()  # the device was lost
    assert m.frame({}, set()).buttons[0] == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"specs": AXES[:5]}, "6 entries"),
        ({"deadband": 1.0}, "deadband"),
        ({"deadband": -0.1}, "deadband"),
        ({"translation_scale": -1.0}, "translation_scale"),
        ({"rotation_scale": float("nan")}, "rotation_scale"),
    ],
)
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mapper(**kwargs)
