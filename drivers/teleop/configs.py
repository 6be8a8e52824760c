"""The teleop drivers' configs: each a dataclass whose fields are its node's ROS 2 parameters
(``robot_rl.drivers.config``), each registered by device type with ``register_device``. No ROS 2
and no device library here."""

from __future__ import annotations

from dataclasses import dataclass

from robot_rl.drivers.config import length, non_negative, one_of, param, positive, register_device
from robot_rl.drivers.teleop.hid_spacemouse import FULL_SCALE
from robot_rl.drivers.teleop.keyboard_state import FREE_KEY


@dataclass(frozen=True)
class TeleopConfig:
    """Parameters every teleop node has; each device's config adds its own."""

    rate_hz: float = param(
        50.0,
        "publishing rate of /teleop/twist and /teleop/joy (Hz); keep "
        "it above 1 / the teleop source's staleness bound",
        positive,
    )
    deadband: float = param(
        0.05,
        "per-axis deadband, a fraction of full deflection in [0, 1)",
        (lambda v: 0.0 <= v < 1.0, "must lie in [0, 1)"),
    )
    translation_scale: float = param(
        1.0,
        "multiplies linear x, y, z (1: full deflection is the task's largest step)",
        non_negative,
    )
    rotation_scale: float = param(1.0, "multiplies angular x, y, z", non_negative)
    intervene_toggle: bool = param(
        False, "the intervene button toggles intervention instead of holding it"
    )
    frame_id: str = param("base", "frame of the twist: 'base' or 'tool'", one_of("base", "tool"))
    reconnect_interval: float = param(
        1.0, "seconds between attempts to reopen a lost device", positive
    )
    diagnostics_hz: float = param(1.0, "/diagnostics rate (Hz)", positive)


_button_index = (lambda v: v >= -1, "must be a button index >= 0, or -1 for none")


@register_device(
    "spacemouse",
    kind="teleop",
    executable="robot-rl-spacemouse",
    node="robot_rl.drivers.teleop.spacemouse:SpaceMouseNode",
    summary="3Dconnexion SpaceMouse over HID",
)
@dataclass(frozen=True)
class SpaceMouseConfig(TeleopConfig):
    device_path: str = param(
        "", "hidraw path of the SpaceMouse ('' = the first one found; robot-rl doctor lists them)"
    )
    full_scale: float = param(
        FULL_SCALE, "raw counts of full deflection (larger ones clip)", positive
    )
    twist_axes: tuple = param(
        ["ty", "tx", "-tz", "ry", "rx", "-rz"],
        "raw HID axis (tx, ty, tz, rx, ry, rz; '-' negates; 'none') for linear x, y, z, angular "
        "x, y, z",
        length(6),
    )
    intervene_button: int = param(
        -1,
        "button index held to intervene (-1: none; the actor's "
        "motion mode takes over on deflection)",
        _button_index,
    )
    close_button: int = param(0, "button index that closes the gripper (-1: none)", _button_index)
    open_button: int = param(1, "button index that opens the gripper (-1: none)", _button_index)
    success_button: int = param(
        -1,
        "button index the operator presses for success: /teleop/joy button 3, which the actor's "
        "--operator joy pays as reward 1 and as a classifier's confirmation (-1: none; a "
        "SpaceMouse Pro's key 1 is 12)",
        _button_index,
    )
    reject_button: int = param(
        -1,
        "button index that rejects a reward classifier's success: /teleop/joy button 4 (-1: "
        "none; a SpaceMouse Pro's key 2 is 13)",
        _button_index,
    )


_unit = (lambda v: 0.0 < v < 1.0, "must lie in (0, 1)")


@register_device(
    "gamepad",
    kind="teleop",
    executable="robot-rl-gamepad",
    node="robot_rl.drivers.teleop.gamepad:GamepadNode",
    summary="gamepad over evdev",
)
@dataclass(frozen=True)
class GamepadConfig(TeleopConfig):
    device_path: str = param(
        "",
        "evdev device file, best a /dev/input/by-id/... path ('' = "
        "the first gamepad found; robot-rl doctor lists them)",
    )
    device_name: str = param(
        "",
        "pick the first gamepad whose name contains this (case "
        "insensitive; '' = any); ignored when device_path is set",
    )
    deadband: float = param(
        0.1,
        "per-axis deadband, a fraction of full deflection in [0, 1)",
        (lambda v: 0.0 <= v < 1.0, "must lie in [0, 1)"),
    )
    twist_axes: tuple = param(
        ["-ABS_Y", "-ABS_X", "-ABS_RY", "none", "none", "-ABS_RX"],
        "evdev axis ('-' negates; 'none') for linear x, y, z, angular x, y, z",
        length(6),
    )
    trigger_axes: tuple = param(
        ["ABS_Z", "ABS_RZ"],
        "axes that rest at their minimum "
        "(triggers): 0 at rest, 1 pulled, instead of centred "
        "(['none'] for a pad without)",
    )
    intervene_button: str = param("BTN_TR", "evdev key (or axis) held to intervene ('' = none)")
    close_button: str = param("ABS_RZ", "evdev key (or axis) that closes the gripper ('' = none)")
    open_button: str = param("ABS_Z", "evdev key (or axis) that opens the gripper ('' = none)")
    success_button: str = param(
        "BTN_START",
        "evdev key (or axis) the operator presses for success: /teleop/joy button 3, which the "
        "actor's --operator joy pays as reward 1 and as a classifier's confirmation ('' = none)",
    )
    reject_button: str = param(
        "BTN_SELECT",
        "evdev key (or axis) that rejects a reward classifier's success: /teleop/joy button 4 "
        "('' = none)",
    )
    button_threshold: float = param(0.5, "an axis named as a button is pressed beyond this", _unit)


@register_device(
    "keyboard",
    kind="teleop",
    executable="robot-rl-keyboard-teleop",
    node="robot_rl.drivers.teleop.keyboard:KeyboardTeleopNode",
    summary="terminal keyboard",
    lifecycle=False,
)
@dataclass(frozen=True)
class KeyboardConfig:
    rate_hz: float = param(
        20.0, "publishing rate (Hz); keep it above 1 / the source's staleness bound", positive
    )
    speed: float = param(
        1.0,
        "deflection of a motion key, in (0, 1] of the task's largest step",
        (lambda v: 0.0 < v <= 1.0, "must lie in (0, 1]"),
    )
    key_hold_s: float = param(
        0.5, "a key counts as held this long after its last press (s)", positive
    )
    success_key: str = param(
        "y",
        "key that says success: /teleop/joy button 3, which the actor's --operator joy pays as "
        "reward 1 and as a classifier's confirmation",
        FREE_KEY,
    )
    reject_key: str = param(
        "n", "key that rejects a reward classifier's success: /teleop/joy button 4", FREE_KEY
    )
    frame_id: str = param("base", "frame of the twist: 'base' or 'tool'", one_of("base", "tool"))
