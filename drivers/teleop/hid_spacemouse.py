"""3Dconnexion SpaceMouse raw HID reports -> six axes and pressed buttons. Pure: bytes in, state
out; the node reads reports with hidapi, tests replay them. No 3Dconnexion SDK or pyspacemouse.

Reports (byte 0 is the report id, as hidapi returns it):
  - 1: translation x, y, z as little-endian int16; 2: rotation rx, ry, rz likewise. Newer devices
    send all six axes in one 13-byte report 1 (rotation at bytes 7-12) and no report 2;
  - 3: button bitmap, button i is bit i % 8 of byte 1 + i // 8;
  - others (4 LED, 0x17 battery, ...) are ignored.
Devices: HID usage page 0x01, usage 0x08; vendor 0x256f (older ones Logitech's 0x046d). Full
deflection is about +-350; larger values are clipped. Axes stay in the device's HID frame (x right,
y towards the user, z down), not pyspacemouse's z-up frame.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

AXES = ("tx", "ty", "tz", "rx", "ry", "rz")
"""Raw HID axis names, in report order (not x, y: YAML 1.1 reads a bare y as true)."""
TRANSLATION_REPORT, ROTATION_REPORT, BUTTON_REPORT = 1, 2, 3
_THREE = struct.Struct("<3h")
_SIX = struct.Struct("<6h")
FULL_SCALE = 350.0

VENDOR_3DCONNEXION = 0x256F
VENDOR_LOGITECH = 0x046D
USAGE_PAGE_GENERIC_DESKTOP = 0x01
USAGE_MULTI_AXIS_CONTROLLER = 0x08

KNOWN_DEVICES: dict[tuple[int, int], str] = {
    (VENDOR_LOGITECH, 0xC625): "SpacePilot",
    (VENDOR_LOGITECH, 0xC626): "SpaceNavigator",
    (VENDOR_LOGITECH, 0xC627): "SpaceExplorer",
    (VENDOR_LOGITECH, 0xC629): "SpacePilot Pro",
    (VENDOR_LOGITECH, 0xC62B): "SpaceMouse Pro",
    (VENDOR_3DCONNEXION, 0xC62E): "SpaceMouse Wireless (cable)",
    (VENDOR_3DCONNEXION, 0xC62F): "SpaceMouse Wireless (receiver)",
    (VENDOR_3DCONNEXION, 0xC631): "SpaceMouse Pro Wireless (cable)",
    (VENDOR_3DCONNEXION, 0xC632): "SpaceMouse Pro Wireless (receiver)",
    (VENDOR_3DCONNEXION, 0xC633): "SpaceMouse Enterprise",
    (VENDOR_3DCONNEXION, 0xC635): "SpaceMouse Compact",
    (VENDOR_3DCONNEXION, 0xC638): "SpaceMouse Pro Wireless (Bluetooth)",
    (VENDOR_3DCONNEXION, 0xC63A): "SpaceMouse Wireless",
    (VENDOR_3DCONNEXION, 0xC641): "SpaceMouse",
    (VENDOR_3DCONNEXION, 0xC652): "3Dconnexion Universal Receiver",
}


def spacemouse_model(entry: Mapping) -> str | None:
    """The model name of a ``hid.enumerate()`` entry that is a SpaceMouse, else None: a known
    vendor/product pair, or any 3Dconnexion device that declares itself a multi-axis
    controller (models newer than this table)."""
    vid, pid = entry.get("vendor_id", 0), entry.get("product_id", 0)
    if (vid, pid) in KNOWN_DEVICES:
        return KNOWN_DEVICES[(vid, pid)]
    if (
        vid == VENDOR_3DCONNEXION
        and entry.get("usage_page") == USAGE_PAGE_GENERIC_DESKTOP
        and entry.get("usage") == USAGE_MULTI_AXIS_CONTROLLER
    ):
        return f"3Dconnexion {entry.get('product_string') or hex(pid)}"
    return None


@dataclass
class SpaceMouseState:
    axes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(AXES, 0))
    """Raw counts per axis (``AXES``)."""
    buttons: frozenset[int] = frozenset()
    """Indices of the buttons held down."""

    def normalised(self, full_scale: float = FULL_SCALE) -> dict[str, float]:
        return {name: max(-1.0, min(1.0, raw / full_scale)) for name, raw in self.axes.items()}


class SpaceMouseReports:
    """Feeds raw reports into a ``SpaceMouseState``; counts what it could not use."""

    def __init__(self):
        self.state = SpaceMouseState()
        self.reports = 0
        self.malformed = 0

    def feed(self, report: bytes) -> None:
        """One report as hidapi's ``read`` returns it (report id first)."""
        report = bytes(report)
        if not report:
            return
        self.reports += 1
        report_id, body = report[0], report[1:]
        axes = self.state.axes
        if report_id == TRANSLATION_REPORT and len(body) >= _SIX.size:
            axes.update(zip(AXES, _SIX.unpack_from(body), strict=True))
        elif report_id == TRANSLATION_REPORT and len(body) >= _THREE.size:
            axes.update(zip(AXES[:3], _THREE.unpack_from(body), strict=True))
        elif report_id == ROTATION_REPORT and len(body) >= _THREE.size:
            axes.update(zip(AXES[3:], _THREE.unpack_from(body), strict=True))
        elif report_id == BUTTON_REPORT and body:
            bits = int.from_bytes(body, "little")
            self.state.buttons = frozenset(i for i in range(8 * len(body)) if bits >> i & 1)
        elif report_id in (TRANSLATION_REPORT, ROTATION_REPORT, BUTTON_REPORT):
            self.malformed += 1  # too short to hold what its id promises
