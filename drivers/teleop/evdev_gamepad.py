"""Linux evdev ``input_event`` records -> a gamepad's axes and held buttons. Pure apart from the
code table (``evdev.ecodes``): bytes in, state out; the node reads the device file, tests replay.

Format (linux/input.h): ``struct input_event`` = ``struct timeval`` (two C longs), ``__u16 type``,
``__u16 code``, ``__s32 value``, native byte order (24 bytes on 64-bit Linux). EV_ABS carries an
axis value in the device's ``input_absinfo`` range; EV_KEY 1 press, 0 release, 2 repeat (held).
Events apply as one frame at EV_SYN/SYN_REPORT; after SYN_DROPPED everything up to the next
SYN_REPORT is discarded and the state must be re-read (``needs_resync``).

A value slightly outside its range is clipped; one outside by more than the range's width is
refused (``refused_values``, ``last_refusal``) and the axis keeps its last good value.
"""

from __future__ import annotations

import struct
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

from evdev import ecodes

EVENT = struct.Struct("@llHHi")
EV_SYN, EV_KEY, EV_ABS = ecodes.EV_SYN, ecodes.EV_KEY, ecodes.EV_ABS
SYN_REPORT, SYN_DROPPED = ecodes.SYN_REPORT, ecodes.SYN_DROPPED


@dataclass(frozen=True)
class AxisRange:
    minimum: int
    maximum: int


def pack_event(type_: int, code: int, value: int, time_s: float = 0.0) -> bytes:
    """One ``input_event`` record (what the kernel writes; tests build recordings with it)."""
    sec = int(time_s)
    return EVENT.pack(sec, int((time_s - sec) * 1e6), type_, code, value)


def axis_key(name: str) -> tuple[str, int]:
    """``"ABS_Y"`` -> the mapper's key for that axis."""
    if not name.startswith("ABS_") or name not in ecodes.ecodes:
        raise ValueError(
            f"unknown gamepad axis {name!r} (evdev names such as ABS_X, ABS_Y, "
            "ABS_RX, ABS_RY, ABS_Z, ABS_RZ, ABS_HAT0X)"
        )
    return ("abs", ecodes.ecodes[name])


def button_key(name: str) -> tuple[str, int]:
    """``"BTN_SOUTH"`` -> a key; an axis name (``"ABS_RZ"``, a trigger) counts as a button
    pressed beyond the node's threshold."""
    if name.startswith("ABS_"):
        return axis_key(name)
    if name.startswith(("BTN_", "KEY_")) and name in ecodes.ecodes:
        return ("key", ecodes.ecodes[name])
    raise ValueError(
        f"unknown gamepad button {name!r} (evdev names such as BTN_SOUTH, "
        "BTN_EAST, BTN_TL, BTN_TR, BTN_START, or a trigger axis ABS_Z, ABS_RZ)"
    )


class GamepadEvents:
    """Feeds ``input_event`` bytes into the newest axis values and held keys."""

    def __init__(
        self,
        ranges: Mapping[int, AxisRange],
        axes: Mapping[int, int] | None = None,
        keys: Iterable[int] = (),
    ):
        self.ranges = dict(ranges)
        self.axes: dict[int, int] = {}
        self.keys: set[int] = set()
        self.resync(axes or {}, keys)
        self.events = 0
        self.dropped_frames = 0
        self.refused_values = 0
        self.last_refusal = ""
        self._buffer = b""
        self._pending_axes: dict[int, int] = {}
        self._pending_keys: dict[int, bool] = {}
        self._dropping = False
        self.needs_resync = False

    def resync(self, axes: Mapping[int, int], keys: Iterable[int]) -> None:
        """The device's whole state, read afresh (on open and after SYN_DROPPED)."""
        self.axes = {code: int(value) for code, value in axes.items() if code in self.ranges}
        self.keys = set(keys)
        self.needs_resync = False

    def feed(self, data: bytes) -> None:
        self._buffer += bytes(data)
        whole = len(self._buffer) - len(self._buffer) % EVENT.size
        for offset in range(0, whole, EVENT.size):
            _, _, type_, code, value = EVENT.unpack_from(self._buffer, offset)
            self._event(type_, code, value)
        self._buffer = self._buffer[whole:]

    def _event(self, type_: int, code: int, value: int) -> None:
        self.events += 1
        if type_ == EV_SYN and code == SYN_DROPPED:
            self._dropping = True
            self.dropped_frames += 1
        elif type_ == EV_SYN and code == SYN_REPORT:
            if self._dropping:
                self._dropping = False
                self.needs_resync = True
            else:
                self.axes.update(self._pending_axes)
                for key, down in self._pending_keys.items():
                    (self.keys.add if down else self.keys.discard)(key)
            self._pending_axes.clear()
            self._pending_keys.clear()
        elif self._dropping:
            return
        elif type_ == EV_ABS and code in self.ranges:
            rng = self.ranges[code]
            span = max(rng.maximum - rng.minimum, 1)
            if not rng.minimum - span <= value <= rng.maximum + span:
                self.refused_values += 1
                self.last_refusal = (
                    f"axis {code}: {value} far outside its range [{rng.minimum}, {rng.maximum}]"
                )
                return
            self._pending_axes[code] = value
        elif type_ == EV_KEY:
            self._pending_keys[code] = value != 0  # 2 is auto-repeat: still held

    def normalised(self, triggers: Iterable[int] = ()) -> dict[Hashable, float]:
        """Each axis in [-1, 1] about the centre of its range; ``triggers`` (axes resting at
        their minimum) in [0, 1]. Keys as ``axis_key`` makes them."""
        triggers = set(triggers)
        out: dict[Hashable, float] = {}
        for code, value in self.axes.items():
            rng = self.ranges[code]
            span = rng.maximum - rng.minimum
            if span <= 0:
                continue  # a range the device got wrong never steers
            if code in triggers:
                norm = (value - rng.minimum) / span
            else:
                norm = (2.0 * value - rng.minimum - rng.maximum) / span
            out[("abs", code)] = max(-1.0, min(1.0, norm))
        return out

    def pressed(self, threshold: float = 0.5, triggers: Iterable[int] = ()) -> set[Hashable]:
        """Held keys, and axes beyond ``threshold`` (a trigger used as a button)."""
        held: set[Hashable] = {("key", code) for code in self.keys}
        held.update(k for k, v in self.normalised(triggers).items() if v > threshold)
        return held
