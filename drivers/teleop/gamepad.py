"""Gamepad teleop node over Linux evdev: publishes ``/teleop/twist`` and ``/teleop/joy`` for the
actor's intervention, from any pad the kernel drives (Xbox, DualShock/DualSense, 8BitDo, ...).

    robot-rl-gamepad [--ros-args -p device_name:=Xbox -p deadband:=0.15 ...]

The record format is in ``evdev_gamepad``; deadband, scaling and buttons in ``teleop_mapping``;
lifecycle, unplugging and diagnostics in ``teleop_node``. Axes and buttons are named by their
evdev codes (``evtest`` shows them; defaults in the parameters). Linux: the user needs read
access to ``/dev/input/event*``; name the pad by ``device_name`` or a ``/dev/input/by-id`` path.
"""

from __future__ import annotations

import glob
import os
import re
import struct
from collections.abc import Callable, Iterable, Mapping

from robot_rl.drivers.teleop.configs import GamepadConfig
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
    TeleopNode,
    checked,
    config_mapper,
)
from robot_rl.ros.node_base import main_for

READ_SIZE = EVENT.size * 64
GAMEPAD_BUTTONS = range(0x120, 0x140)
"""BTN_JOYSTICK .. BTN_GAMEPAD's block (linux/input-event-codes.h): a device with one of these
keys and absolute axes is a joystick or gamepad (the rule joydev uses)."""


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


main = main_for(GamepadNode)

if __name__ == "__main__":
    main()
