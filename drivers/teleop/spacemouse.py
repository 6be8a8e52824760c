"""3Dconnexion SpaceMouse teleop node over raw HID (hidapi; no 3Dconnexion driver, no
pyspacemouse): publishes ``/teleop/twist`` and ``/teleop/joy`` for the actor's intervention.

    robot-rl-spacemouse [--ros-args -p device_path:=/dev/hidraw3 -p deadband:=0.1 ...]

The report layout is in ``hid_spacemouse``; deadband, scaling and buttons in ``teleop_mapping``;
lifecycle, unplugging and diagnostics in ``teleop_node``. The default ``twist_axes`` are SERL's
convention; success and reject need a keyed model (hardware/README.md). Linux: the user needs
read access to the device's ``/dev/hidraw*`` (a udev rule).
"""

from __future__ import annotations

import sys

from robot_rl.drivers.teleop.configs import SpaceMouseConfig
from robot_rl.drivers.teleop.hid_spacemouse import (
    AXES,
    SpaceMouseReports,
    spacemouse_model,
)
from robot_rl.drivers.teleop.teleop_mapping import TeleopFrame, TeleopMapper, parse_axis
from robot_rl.drivers.teleop.teleop_node import (
    DeviceMissing,
    TeleopNode,
    checked,
    config_mapper,
)
from robot_rl.ros.node_base import main_for

REPORT_SIZE = 64
"""Bytes asked of hidapi per read: more than any SpaceMouse report (13 at most)."""


def _axis(name: str) -> str:
    if name not in AXES:
        raise ValueError(f"unknown SpaceMouse axis {name!r}; choose from {', '.join(AXES)}")
    return name


def _button(index: int) -> int | None:
    return None if index < 0 else index


def hid_backend():
    """cython-hidapi's module: on Linux its ``hidraw`` backend (``/dev/hidraw*``: the kernel's
    driver stays attached, USB and Bluetooth alike), elsewhere, or where that is missing, ``hid``
    (whose Linux wheel goes through libusb and detaches the kernel driver). Raises
    ``ModuleNotFoundError`` without hidapi."""
    if sys.platform.startswith("linux"):
        try:
            import hidraw

            return hidraw
        except ImportError:
            pass
    import hid

    return hid


def discover() -> list[dict]:
    """The SpaceMice this machine's HID layer lists (``enumerate()`` of ``hid_backend()``), one
    dict each; opening one may still need a udev rule. ``ModuleNotFoundError`` without hidapi."""
    found, seen = [], set()
    for entry in hid_backend().enumerate():
        model = spacemouse_model(entry)
        path = entry.get("path", b"")
        path = path.decode(errors="replace") if isinstance(path, bytes) else str(path)
        if model is None or path in seen:
            continue
        seen.add(path)
        found.append(
            {
                "kind": "spacemouse",
                "model": model,
                "path": path,
                "vendor_id": f"0x{entry.get('vendor_id', 0):04x}",
                "product_id": f"0x{entry.get('product_id', 0):04x}",
                "product": entry.get("product_string") or "",
                "manufacturer": entry.get("manufacturer_string") or "",
                "serial": entry.get("serial_number") or "",
                "interface": entry.get("interface_number", -1),
            }
        )
    return found


class HidSpaceMouse:
    """hidapi's device (``hid_backend``), non-blocking: ``read`` gives one report or ``b""``;
    hidapi raises ``OSError`` once the device is unplugged."""

    def __init__(self, path: str, model: str):
        self._device = hid_backend().device()
        self._device.open_path(path.encode())
        self._device.set_nonblocking(1)
        self.description = f"{model} at {path}"

    def read(self) -> bytes:
        return bytes(self._device.read(REPORT_SIZE))

    def close(self) -> None:
        self._device.close()


def open_spacemouse(config: SpaceMouseConfig) -> HidSpaceMouse:
    devices = discover()
    if config.device_path:
        match = [d for d in devices if d["path"] == config.device_path]
        model = match[0]["model"] if match else "HID device"
        path = config.device_path
    elif devices:
        model, path = devices[0]["model"], devices[0]["path"]
    else:
        raise DeviceMissing(
            "no SpaceMouse found: no 3Dconnexion (0x256f) or known Logitech-era (0x046d) "
            "SpaceMouse among this machine's HID devices; plug it in (robot-rl doctor lists "
            "what is visible)"
        )
    try:
        return HidSpaceMouse(path, model)
    except OSError as error:
        raise DeviceMissing(
            f"cannot open the SpaceMouse ({model}) at {path}: {error}; is it plugged in, and "
            "may this user read it (udev rule for /dev/hidraw*)?"
        ) from None


def spacemouse_mapper(config: SpaceMouseConfig) -> TeleopMapper:
    """The mapping ``config`` names; ``ValueError`` naming the parameter for an unknown axis or
    a success/reject button used twice."""
    axes = checked(
        "twist_axes",
        config.twist_axes,
        lambda specs: [parse_axis(spec, _axis) for spec in specs],
    )
    return config_mapper(config, axes, _button)


class SpaceMouseNode(TeleopNode):
    node_name = "spacemouse"
    config_class = SpaceMouseConfig
    device_label = "SpaceMouse"

    build_mapper = staticmethod(spacemouse_mapper)
    open_default = staticmethod(open_spacemouse)

    def new_parser(self, device) -> None:
        self.parser = SpaceMouseReports()

    def feed(self, data: bytes) -> None:
        self.parser.feed(data)

    def current(self) -> TeleopFrame:
        state = self.parser.state
        return self.mapper.frame(state.normalised(self.config.full_scale), state.buttons)

    def parser_counters(self) -> dict[str, str]:
        parser = self.parser
        return {
            "reports": str(parser.reports),
            "malformed": str(parser.malformed),
            "pressed": ",".join(str(i) for i in sorted(parser.state.buttons)),
        }


main = main_for(SpaceMouseNode)

if __name__ == "__main__":
    main()
