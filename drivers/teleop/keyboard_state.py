"""The keyboard teleop's keys, without ROS 2 or a terminal: key presses in, the device's
deflection and Joy buttons out (the teleop contract of ``robot_rl.ros.teleop_contract``)."""

from __future__ import annotations

from dataclasses import dataclass

from robot_rl.ros.teleop_contract import (
    CLOSE_BUTTON,
    INTERVENE_BUTTON,
    JOY_BUTTONS,
    OPEN_BUTTON,
    REJECT_BUTTON,
    SUCCESS_BUTTON,
)

MOTION_KEYS = {
    "w": (0, +1.0),
    "s": (0, -1.0),
    "a": (1, +1.0),
    "d": (1, -1.0),
    "r": (2, +1.0),
    "f": (2, -1.0),
}
GRIPPER_KEYS = {"c": CLOSE_BUTTON, "o": OPEN_BUTTON}  # Joy button index pressed by the key
INTERVENE_KEY = " "
QUIT_KEYS = ("q", "\x03", "\x04")  # q, Ctrl-C (raw mode delivers it as a byte), Ctrl-D
TAKEN_KEYS = (*MOTION_KEYS, *GRIPPER_KEYS, INTERVENE_KEY, *QUIT_KEYS)


def help_line(success_key: str = "y", reject_key: str = "n") -> str:
    return (
        "keyboard teleop: w/s +x/-x  a/d +y/-y  r/f +z/-z  c close  o open  "
        f"space toggle intervene  {success_key} success  {reject_key} reject  q quit"
    )


def is_free_key(key: str) -> bool:
    return (
        len(key) == 1 and key.isprintable() and not key.isspace() and key.lower() not in TAKEN_KEYS
    )


FREE_KEY = (is_free_key, "must be one printable key that no other command uses")


@dataclass(frozen=True)
class TeleopOutput:
    linear: tuple[float, float, float]
    buttons: tuple[int, ...]
    """Joy buttons (``JOY_BUTTONS``): intervene, close the gripper, open it, success, reject."""


class KeyboardState:
    """Key presses in, the device's deflection and buttons out (no ROS, no terminal)."""

    def __init__(
        self,
        speed: float = 1.0,
        key_hold_s: float = 0.5,
        success_key: str = "y",
        reject_key: str = "n",
    ):
        if not 0.0 < speed <= 1.0:
            raise ValueError(f"speed must lie in (0, 1], got {speed}")
        if key_hold_s <= 0:
            raise ValueError(f"key_hold_s must be > 0, got {key_hold_s}")
        for name, key in (("success_key", success_key), ("reject_key", reject_key)):
            if not is_free_key(key):
                raise ValueError(f"{name} {key!r} {FREE_KEY[1]}")
        if success_key.lower() == reject_key.lower():
            raise ValueError("success_key and reject_key must differ")
        self.speed = speed
        self.key_hold_s = key_hold_s
        self.button_keys = {
            **GRIPPER_KEYS,
            success_key.lower(): SUCCESS_BUTTON,
            reject_key.lower(): REJECT_BUTTON,
        }
        self.intervening = False
        self.quit = False
        self._pressed: dict[str, float] = {}  # key -> time of its last press

    def press(self, key: str, now: float) -> None:
        key = key.lower() if key.isalpha() else key
        if key in QUIT_KEYS:
            self.quit = True
        elif key == INTERVENE_KEY:
            self.intervening = not self.intervening
        elif key in MOTION_KEYS or key in self.button_keys:
            self._pressed[key] = now

    def output(self, now: float) -> TeleopOutput:
        held = {k for k, t in self._pressed.items() if now - t <= self.key_hold_s}
        linear = [0.0, 0.0, 0.0]
        for key in held & set(MOTION_KEYS):
            axis, sign = MOTION_KEYS[key]
            linear[axis] += sign * self.speed  # opposite keys cancel
        buttons = [0] * JOY_BUTTONS
        buttons[INTERVENE_BUTTON] = int(self.intervening)
        for key in held & set(self.button_keys):
            buttons[self.button_keys[key]] = 1
        return TeleopOutput(tuple(linear), tuple(buttons))

    def released(self) -> TeleopOutput:
        return TeleopOutput((0.0, 0.0, 0.0), (0,) * JOY_BUTTONS)
