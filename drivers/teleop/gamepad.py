"""Gamepad teleop node over Linux evdev: publishes ``/teleop/twist`` and ``/teleop/joy`` for the
actor's intervention, from any pad the kernel drives (Xbox pads through xpad, DualShock and
DualSense through hid-playstation/hid-sony, 8BitDo, Logitech F310 in X mode, ...).

    robot-rl-gamepad [--ros-args -p device_name:=Xbox -p deadband:=0.15 ...]

The record format is in ``evdev_gamepad``; deadband, scaling and buttons in ``teleop_mapping``;
lifecycle, unplugging and diagnostics in ``teleop_node``. Axes and buttons are named by their
evdev codes (``evtest`` shows them), so any pad is one parameter file away:

- default twist: left stick forward/back -> linear x, left/right -> linear y (+ to the left),
  right stick forward/back -> linear z, right stick left/right -> angular z (the car's yaw rate);
  evdev's stick Y grows towards the operator, hence the minus signs;
- hold RB (``BTN_TR``) to intervene; right trigger (``ABS_RZ``) closes the gripper, left
  trigger (``ABS_Z``) opens it (an axis named as a button is pressed beyond
  ``button_threshold``);
- the operator's answers (``/teleop/joy`` buttons 3 and 4, read by the actor's
  ``--operator joy``): Start (``BTN_START``; Options on a DualShock/DualSense) says success,
  which pays reward 1, ends the episode and confirms a reward classifier's success; Back
  (``BTN_SELECT``; View on newer Xbox pads, Share/Create on PlayStation pads) rejects a
  classifier's success. Both sit away from the sticks, so steering never presses them; A/B
  (``BTN_SOUTH``/``BTN_EAST``) are the usual alternative.

Linux: the user needs read access to ``/dev/input/event*`` (the ``input`` group). Name the
device by ``device_name`` or by a stable ``/dev/input/by-id/...-event-joystick`` path: the
``eventN`` numbers change between boots and replugs.
"""

from __future__ import annotations

import glob
import os
import re
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from robot_rl.drivers.config import length, param
from robot_rl.drivers.teleop.evdev_gamepad import (
    EV_ABS,
    EV_KEY,
    EVENT,
    AxisRange,
    GamepadEvents,
    axis_key,
    button_key,
)
from robot_rl.drivers.teleop.teleop_mapping import (
    NONE_NAMES,
    TeleopFrame,
    TeleopMapper,
    parse_axis,
)
from robot_rl.drivers.teleop.teleop_node import (
    DeviceMissing,
    TeleopConfig,
    TeleopNode,
    checked,
    config_mapper,
)
from robot_rl.ros.node_base import main_for

READ_SIZE = EVENT.size * 64
GAMEPAD_BUTTONS = range(0x120, 0x140)
"""BTN_JOYSTICK .. BTN_GAMEPAD's block (linux/input-event-codes.h): a device with one of these
keys and absolute axes is a joystick or gamepad (the rule joydev uses)."""
_unit = (lambda v: 0.0 < v < 1.0, "must lie in (0, 1)")


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


class EvdevFile:
    """An evdev device file read as raw ``input_event`` bytes (non-blocking). The kernel fails
    the read with ENODEV once the device is unplugged; so does end of file (a pipe in tests)."""

    def __init__(
        self,
        fd: int,
        ranges: Mapping[int, AxisRange],
        description: str,
        snapshot: Callable[[], tuple[Mapping[int, int], Iterable[int]]],
        close: Callable[[], None] | None = None,
    ):
        self.fd, self.ranges, self.description = fd, dict(ranges), description
        self.snapshot = snapshot
        self._close = close or (lambda: os.close(fd))

    def read(self) -> bytes:
        try:
            data = os.read(self.fd, READ_SIZE)
        except BlockingIOError:
            return b""
        if not data:
            raise OSError("end of file: the device is gone")
        return data

    def close(self) -> None:
        self._close()


def open_evdev(path: str) -> EvdevFile:
    """The gamepad at ``path``, through python-evdev (absinfo, current state) and its fd."""
    from evdev import InputDevice

    device = InputDevice(path)
    try:
        caps = device.capabilities(absinfo=True)
        ranges = {code: AxisRange(info.min, info.max) for code, info in caps.get(EV_ABS, [])}

        def snapshot():
            return ({code: device.absinfo(code).value for code in ranges}, device.active_keys())

        return EvdevFile(device.fd, ranges, f"{device.name} at {path}", snapshot, device.close)
    except Exception:
        device.close()
        raise


def is_gamepad(key_codes: Iterable[int], has_abs: bool) -> bool:
    return has_abs and any(code in GAMEPAD_BUTTONS for code in key_codes)


def sysfs_key_codes(bitmap: str) -> set[int]:
    """Key codes from a sysfs ``capabilities/key`` bitmap: hex C longs, most significant
    first (readable without access to the device file)."""
    bits = struct.calcsize("l") * 8
    codes = set()
    for index, word in enumerate(reversed(bitmap.split())):
        value = int(word, 16)
        codes.update(index * bits + b for b in range(bits) if value >> b & 1)
    return codes


def _sysfs(path: str, name: str) -> str:
    event = os.path.basename(path)
    try:
        with open(f"/sys/class/input/{event}/device/{name}") as f:
            return f.read().strip()
    except OSError:
        return ""


def _event_number(path: str) -> int:
    match = re.search(r"(\d+)$", path)
    return int(match.group(1)) if match else -1


def discover() -> list[dict]:
    """The gamepads among this machine's input devices, one dict each; a pad this user may not
    read is listed with an ``error`` (its name and buttons come from sysfs). Raises
    ``ModuleNotFoundError`` without python-evdev."""
    from evdev import InputDevice, list_devices

    readable = set(list_devices(writable=False))
    found = []
    for path in sorted(glob.glob("/dev/input/event*"), key=_event_number):
        if path not in readable:
            keys = sysfs_key_codes(_sysfs(path, "capabilities/key") or "0")
            has_abs = int(_sysfs(path, "capabilities/abs") or "0", 16) != 0
            if is_gamepad(keys, has_abs):
                found.append(
                    {
                        "kind": "gamepad",
                        "path": path,
                        "name": _sysfs(path, "name"),
                        "error": "permission denied: add this user to the 'input' group",
                    }
                )
            continue
        try:
            device = InputDevice(path)
        except OSError:
            continue  # unplugged between the listing and now
        try:
            caps = device.capabilities(absinfo=False)
            if is_gamepad(caps.get(EV_KEY, []), EV_ABS in caps):
                found.append(
                    {
                        "kind": "gamepad",
                        "path": path,
                        "name": device.name,
                        "vendor_id": f"0x{device.info.vendor:04x}",
                        "product_id": f"0x{device.info.product:04x}",
                        "phys": device.phys or "",
                        "uniq": device.uniq or "",
                    }
                )
        finally:
            device.close()
    return found


def open_gamepad(config: GamepadConfig) -> EvdevFile:
    path = config.device_path
    if not path:
        wanted = config.device_name.lower()
        pads = [d for d in discover() if wanted in d["name"].lower()]
        usable = [d for d in pads if "error" not in d]
        if not usable:
            which = f"named like {config.device_name!r} " if wanted else ""
            if pads:
                raise DeviceMissing(
                    f"gamepad {pads[0]['name']!r} at {pads[0]['path']}: {pads[0]['error']}"
                )
            raise DeviceMissing(
                f"no gamepad {which}found among /dev/input/event*; plug it in "
                "(robot-rl doctor lists what is visible)"
            )
        path = usable[0]["path"]
    try:
        return open_evdev(path)
    except OSError as error:
        raise DeviceMissing(
            f"cannot open the gamepad at {path}: {error.strerror or error}"
        ) from None


def _button(name: str):
    return button_key(name) if name.strip() else None


def gamepad_mapper(config: GamepadConfig) -> tuple[TeleopMapper, list[int]]:
    """The mapping ``config`` names, and its trigger axes' codes; ``ValueError`` naming the
    parameter for a name evdev does not know or a success/reject button used twice."""
    triggers = checked(
        "trigger_axes",
        config.trigger_axes,
        lambda names: [axis_key(n)[1] for n in names if n.strip().lower() not in NONE_NAMES],
    )
    axes = checked(
        "twist_axes",
        config.twist_axes,
        lambda specs: [parse_axis(spec, axis_key) for spec in specs],
    )
    return config_mapper(config, axes, _button), triggers


class GamepadNode(TeleopNode):
    node_name = "gamepad"
    config_class = GamepadConfig
    device_label = "gamepad"

    def build_mapper(self, config: GamepadConfig) -> TeleopMapper:
        mapper, self._triggers = gamepad_mapper(config)
        return mapper

    open_default = staticmethod(open_gamepad)

    def new_parser(self, device: EvdevFile) -> None:
        axes, keys = device.snapshot()
        self.parser = GamepadEvents(device.ranges, axes, keys)
        self._snapshot = device.snapshot

    def feed(self, data: bytes) -> None:
        self.parser.feed(data)
        if self.parser.needs_resync:  # the kernel dropped events: read the whole state anew
            self.parser.resync(*self._snapshot())

    def current(self) -> TeleopFrame:
        parser = self.parser
        return self.mapper.frame(
            parser.normalised(self._triggers),
            parser.pressed(self.config.button_threshold, self._triggers),
        )

    def parser_counters(self) -> dict[str, str]:
        parser = self.parser
        return {
            "events": str(parser.events),
            "dropped_frames": str(parser.dropped_frames),
            "refused_samples": str(parser.refused_values),
            "last_sample_refusal": parser.last_refusal,
        }


CONFIG = GamepadConfig
NODE = GamepadNode
main = main_for(GamepadNode)

if __name__ == "__main__":
    main()
