"""From a teleop device's normalised axes and pressed buttons to the teleop contract: a twist of
six entries in [-1, 1] and the five Joy buttons of ``robot_rl.ros.teleop_contract`` (each button
and its reader: docs/ARCHITECTURE.md). Pure: no ROS, no device library, so the SpaceMouse and
gamepad nodes share it and it is tested on its own.

Each twist entry names one device axis, optionally negated (``"-ty"``, ``"-ABS_Y"``) or
``"none"``. The deadband is applied per axis to the normalised deflection and rescaled, so the
output starts from 0 at the band's edge instead of jumping to the band's width; then the
entry is multiplied by the translation or rotation scale and clipped to [-1, 1].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass

from robot_rl.ros.teleop_contract import (
    CLOSE_BUTTON,
    INTERVENE_BUTTON,
    JOY_BUTTONS,
    OPEN_BUTTON,
    REJECT_BUTTON,
    SUCCESS_BUTTON,
)

TWIST_SIZE = 6
"""linear x, y, z, angular x, y, z: the order of ``/teleop/twist`` and of ``Joy.axes``."""
NONE_NAMES = ("", "none")


@dataclass(frozen=True)
class AxisSource:
    """One twist entry's device axis (None: always 0) and its sign."""

    key: Hashable | None
    sign: float = 1.0


@dataclass(frozen=True)
class TeleopFrame:
    """What the node publishes at one instant."""

    twist: tuple[float, ...]
    buttons: tuple[int, ...]
    """Joy buttons (``JOY_BUTTONS``): intervene, close the gripper, open it, success, reject."""


RELEASED = TeleopFrame((0.0,) * TWIST_SIZE, (0,) * JOY_BUTTONS)
"""No motion, no button: what a lost or stopped device publishes."""


def parse_axis(spec: str, resolve: Callable[[str], Hashable]) -> AxisSource:
    """``"-ty"`` -> the axis ``resolve("ty")``, negated; ``"none"`` -> a constant 0.
    ``resolve`` raises ``ValueError`` for a name the device does not have."""
    spec = spec.strip()
    if spec.lower() in NONE_NAMES:
        return AxisSource(None)
    sign = -1.0 if spec.startswith("-") else 1.0
    return AxisSource(resolve(spec.lstrip("+-").strip()), sign)


def apply_deadband(value: float, width: float) -> float:
    """0 inside ``|value| <= width``; outside, rescaled so that 1 still maps to 1."""
    magnitude = abs(value) - width
    if magnitude <= 0.0:
        return 0.0
    return math.copysign(magnitude / (1.0 - width), value)


def clip_unit(value: float) -> float:
    return max(-1.0, min(1.0, value))


class TeleopMapper:
    """Device axes and buttons in, ``TeleopFrame`` out. Holds the one piece of state a device
    needs between frames: the toggled intervene button (``intervene_toggle``). The success and
    reject buttons are published as held (never toggled): their reader counts a press as the
    edge from released to pressed."""

    def __init__(
        self,
        twist_axes: Sequence[AxisSource],
        deadband: float = 0.05,
        translation_scale: float = 1.0,
        rotation_scale: float = 1.0,
        intervene: Hashable | None = None,
        close: Hashable | None = None,
        open_: Hashable | None = None,
        intervene_toggle: bool = False,
        success: Hashable | None = None,
        reject: Hashable | None = None,
    ):
        if len(twist_axes) != TWIST_SIZE:
            raise ValueError(f"twist_axes needs {TWIST_SIZE} entries, got {len(twist_axes)}")
        if not 0.0 <= deadband < 1.0:
            raise ValueError(f"deadband must lie in [0, 1), got {deadband}")
        for name, scale in (
            ("translation_scale", translation_scale),
            ("rotation_scale", rotation_scale),
        ):
            if not (math.isfinite(scale) and scale >= 0.0):
                raise ValueError(f"{name} must be finite and >= 0, got {scale}")
        self.twist_axes = tuple(twist_axes)
        self.deadband = deadband
        self.scales = (translation_scale,) * 3 + (rotation_scale,) * 3
        buttons = {
            INTERVENE_BUTTON: intervene,
            CLOSE_BUTTON: close,
            OPEN_BUTTON: open_,
            SUCCESS_BUTTON: success,
            REJECT_BUTTON: reject,
        }
        self.buttons = tuple(buttons.get(index) for index in range(JOY_BUTTONS))
        """The device key behind each Joy button index (None: that button stays 0)."""
        self.intervene_toggle = intervene_toggle
        self._toggled = False
        self._intervene_was_down = False

    def reset(self) -> None:
        """Forget the toggled intervention (a lost device never keeps intervening)."""
        self._toggled = False
        self._intervene_was_down = False

    def frame(self, axes: Mapping[Hashable, float], pressed: Collection[Hashable]) -> TeleopFrame:
        """``axes``: normalised deflections in [-1, 1] by key; ``pressed``: keys held down."""
        twist = []
        for source, scale in zip(self.twist_axes, self.scales, strict=True):
            raw = axes.get(source.key, 0.0) if source.key is not None else 0.0
            if not math.isfinite(raw):
                raw = 0.0  # a broken reading never steers
            value = apply_deadband(clip_unit(raw), self.deadband) * source.sign * scale
            twist.append(clip_unit(value) + 0.0)  # + 0.0: no -0.0 on the wire
        down = [int(key is not None and key in pressed) for key in self.buttons]
        if self.intervene_toggle:
            intervene = bool(down[INTERVENE_BUTTON])
            if intervene and not self._intervene_was_down:
                self._toggled = not self._toggled
            self._intervene_was_down = intervene
            down[INTERVENE_BUTTON] = int(self._toggled)
        return TeleopFrame(tuple(twist), tuple(down))
