"""SpaceMouse driver: raw HID reports through the parser the node uses, and the node itself
(rclpy, in-process) fed report bytes by a device the test plugs and unplugs, heard by the
actor's ``RosTeleopSource``.

The recorded reports: ``01 00 00 00 00 00 00``, ``02 00 00 e2 ff 00 00``, ``03 01 00``,
``03 02 00``, ``03 03 00`` are bytes a SpaceNavigator sent in a public usbmon capture; the
13-byte six-axis reports follow the layout of the newer models (pyspacemouse's device table).
"""

from __future__ import annotations

import collections
import struct
import subprocess
import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from robot_rl.drivers.teleop.hid_spacemouse import (
    SpaceMouseReports,
    spacemouse_model,
)

pytestmark = pytest.mark.timeout(180)

CAPTURED = {
    "rest": bytes.fromhex("01000000000000"),
    "rotate_ry": bytes.fromhex("020000e2ff0000"),  # ry = -30
    "left": bytes.fromhex("030100"),
    "right": bytes.fromhex("030200"),
    "both": bytes.fromhex("030300"),
    "none": bytes.fromhex("030000"),
}


def translation(tx, ty, tz) -> bytes:
    return b"\x01" + struct.pack("<3h", tx, ty, tz)


def rotation(rx, ry, rz) -> bytes:
    return b"\x02" + struct.pack("<3h", rx, ry, rz)


def six_axes(*values) -> bytes:
    return b"\x01" + struct.pack("<6h", *values)


def buttons(*indices, size=2) -> bytes:
    bits = sum(1 << i for i in indices)
    return b"\x03" + bits.to_bytes(size, "little")


# -- the parser -----------------------------------------------------------------------------
def test_captured_reports_parse():
    parser = SpaceMouseReports()
    for report in (CAPTURED["rest"], CAPTURED["rotate_ry"], CAPTURED["left"]):
        parser.feed(report)
    assert parser.state.axes == {"tx": 0, "ty": 0, "tz": 0, "rx": 0, "ry": -30, "rz": 0}
    assert parser.state.buttons == {0}
    parser.feed(CAPTURED["right"])
    assert parser.state.buttons == {1}
    parser.feed(CAPTURED["both"])
    assert parser.state.buttons == {0, 1}
    parser.feed(CAPTURED["none"])
    assert parser.state.buttons == frozenset()
    assert parser.malformed == 0


def test_split_and_six_axis_reports_and_odd_ones():
    parser = SpaceMouseReports()
    parser.feed(translation(350, -175, 20))
    parser.feed(rotation(-700, 0, 350))
    assert parser.state.axes == {"tx": 350, "ty": -175, "tz": 20, "rx": -700, "ry": 0, "rz": 350}
    normalised = parser.state.normalised(350.0)
    assert normalised["tx"] == 1.0 and normalised["ty"] == -0.5 and normalised["rx"] == -1.0
    # a newer device: all six axes in one report 1
    parser.feed(six_axes(1, 2, 3, 4, 5, 6))
    assert list(parser.state.axes.values()) == [1, 2, 3, 4, 5, 6]
    parser.feed(buttons(0, 12))  # a keyed model: bit 12 is its first programmable key
    assert parser.state.buttons == {0, 12}
    # a battery report (0x17), an LED echo, an empty read: ignored; a truncated axis report:
    # counted, state kept
    for report in (b"\x17\x64", b"\x04\x01", b"", b"\x01\x05"):
        parser.feed(report)
    assert list(parser.state.axes.values()) == [1, 2, 3, 4, 5, 6]
    assert parser.malformed == 1


def test_which_hid_devices_are_spacemice():
    compact = {"vendor_id": 0x256F, "product_id": 0xC635, "usage_page": 1, "usage": 8}
    navigator = {"vendor_id": 0x046D, "product_id": 0xC626}
    logitech_mouse = {"vendor_id": 0x046D, "product_id": 0xC077, "usage_page": 1, "usage": 2}
    future = {
        "vendor_id": 0x256F,
        "product_id": 0xC6FF,
        "usage_page": 1,
        "usage": 8,
        "product_string": "SpaceMouse Next",
    }
    receiver_keyboard_part = {
        "vendor_id": 0x256F,
        "product_id": 0xC6FF,
        "usage_page": 1,
        "usage": 6,
    }
    assert spacemouse_model(compact) == "SpaceMouse Compact"
    assert spacemouse_model(navigator) == "SpaceNavigator"
    assert spacemouse_model(logitech_mouse) is None
    assert spacemouse_model(future) == "3Dconnexion SpaceMouse Next"
    assert spacemouse_model(receiver_keyboard_part) is None


def test_discover_lists_what_hid_sees():
    from robot_rl.drivers.teleop.spacemouse import discover

    found = discover()  # this machine has none; on a cell each entry names path and model
    assert isinstance(found, list)
    assert all({"path", "model", "vendor_id", "product_id"} <= set(d) for d in found)


def test_default_mapping_is_serls():
    """SERL's convention, for an operator facing the robot across the table: pulling the cap
    towards oneself (raw +ty: HID y grows towards the user) moves the tool towards the operator
    (+x), pushing it right (+tx) moves it to the operator's right (+y), lifting it (raw -tz:
    HID z grows downwards) lifts the tool (+z)."""
    from robot_rl.drivers.teleop.spacemouse import SpaceMouseConfig, _axis
    from robot_rl.drivers.teleop.teleop_mapping import TeleopMapper, parse_axis

    config = SpaceMouseConfig()
    mapper = TeleopMapper([parse_axis(s, _axis) for s in config.twist_axes], deadband=0.0)
    parser = SpaceMouseReports()
    parser.feed(translation(175, 350, -350))
    parser.feed(rotation(350, -350, 350))
    frame = mapper.frame(parser.state.normalised(), parser.state.buttons)
    assert frame.twist == (1.0, 0.5, 1.0, -1.0, 1.0, -1.0)


def test_a_spacemouse_pros_keys_say_success_and_reject_once_mapped():
    """A two-button model has no spare button: nothing says success by default. A SpaceMouse
    Pro's keys 1 and 2 (bits 12 and 13 of its button report) do once mapped."""
    from robot_rl.drivers.teleop.spacemouse import SpaceMouseConfig, spacemouse_mapper

    default = spacemouse_mapper(SpaceMouseConfig())
    pro = spacemouse_mapper(SpaceMouseConfig(success_button=12, reject_button=13))
    parser = SpaceMouseReports()

    def joy_buttons(mapper):
        return mapper.frame(parser.state.normalised(), parser.state.buttons).buttons

    parser.feed(buttons(12, size=4))  # the Pro's bitmap runs to Lock (bit 26): four bytes
    assert joy_buttons(default) == (0, 0, 0, 0, 0)
    assert joy_buttons(pro) == (0, 0, 0, 1, 0)
    parser.feed(buttons(13, size=4))
    assert joy_buttons(pro) == (0, 0, 0, 0, 1)
    parser.feed(buttons(0, 22, size=4))  # Menu (the left button's bit: close) and Esc
    assert joy_buttons(pro) == (0, 1, 0, 0, 0)
    for left_right in (CAPTURED["left"], CAPTURED["right"], CAPTURED["both"]):
        parser.feed(left_right)  # a Compact's two buttons are the gripper's, never an answer
        assert joy_buttons(pro)[3:] == (0, 0)
    with pytest.raises(ValueError, match="'success_button' = 1 is also 'open_button'"):
        spacemouse_mapper(SpaceMouseConfig(success_button=1))


# -- the node on a replayed device -------------------------------------------------------------
class ReplayedSpaceMouse:
    """Stands where hidapi's device stands: ``read`` gives the next recorded report or ``b""``,
    and raises OSError('read error') once unplugged, as hidapi does."""

    def __init__(self, bench: SpaceMouseBench, model: str):
        self.bench, self.description = bench, f"replayed {model}"
        self.closed = False

    def read(self) -> bytes:
        with self.bench.lock:
            if not self.bench.plugged or self.closed:
                raise OSError("read error")
            return self.bench.reports.popleft() if self.bench.reports else b""

    def close(self) -> None:
        self.closed = True


class SpaceMouseBench:
    def __init__(self, model: str = "SpaceNavigator"):
        self.lock = threading.Lock()
        self.plugged, self.model = True, model
        self.reports: collections.deque[bytes] = collections.deque()
        self.opened = 0

    def open(self, config) -> ReplayedSpaceMouse:
        with self.lock:
            if not self.plugged:
                raise OSError("open failed")
            self.opened += 1
            return ReplayedSpaceMouse(self, self.model)

    def send(self, *reports: bytes) -> None:
        with self.lock:
            self.reports.extend(reports)

    def unplug(self) -> None:
        with self.lock:
            self.plugged = False
            self.reports.clear()

    def plug(self, model: str) -> None:
        with self.lock:
            self.plugged, self.model = True, model


NODE_PARAMS = {
    "twist_axes": "[tx,ty,tz,rx,ry,rz]",
    "deadband": "0.1",
    "translation_scale": "0.5",
    "intervene_button": "12",
    "close_button": "0",
    "open_button": "1",
    "reconnect_interval": "0.2",
    "diagnostics_hz": "5.0",
}


def test_node_from_report_bytes_to_the_actor_with_unplug_and_reconnect():
    from diagnostic_msgs.msg import DiagnosticStatus
    from teleop_helpers import TeleopHarness

    from robot_rl.drivers.teleop.spacemouse import SpaceMouseNode

    bench = SpaceMouseBench("SpaceNavigator")
    with TeleopHarness(SpaceMouseNode, bench.open, NODE_PARAMS) as harness:
        assert harness.started
        harness.wait_released()
        harness.diagnostics.wait_for(lambda s: s.level == DiagnosticStatus.OK, "OK")

        # deflection: full tx at half translation scale; ty half-way (deadband rescaled);
        # tz inside the deadband; rx beyond full scale (clipped); rz full
        bench.send(CAPTURED["rest"], translation(350, -175, 20), rotation(-700, 0, 350))
        command = harness.wait_for(lambda c: c.action[0] > 0 and c.action[5] > 0, "a deflection")
        expected = [0.5, 0.5 * -(0.5 - 0.1) / 0.9, 0.0, -1.0, 0.0, 1.0, 0.0]
        np.testing.assert_allclose(command.action, expected, atol=1e-5)
        assert not command.button

        # the keyed model's intervene key (bit 12) and the left button (close)
        bench.send(buttons(0, 12))
        command = harness.wait_for(lambda c: c.button, "the intervene button")
        assert command.action[6] == 1.0  # gripper: close
        status = harness.diagnostics.wait_for(
            lambda s: dict((v.key, v.value) for v in s.values).get("intervene") == "True",
            "intervene=True",
        )
        assert dict((v.key, v.value) for v in status.values)["pressed"] == "0,12"

        # unplug: motion and intervention are released at once, diagnostics say so
        bench.unplug()
        harness.wait_released()
        status = harness.diagnostics.wait_for(
            lambda s: s.level == DiagnosticStatus.ERROR and "lost" in s.message, "device lost"
        )
        assert "retrying" in status.message
        # still released while the device is away (the node keeps publishing)
        time.sleep(0.5)
        harness.wait_released()

        # it comes back (a newer model this time: six axes in one report) and is reopened
        bench.plug("SpaceMouse Wireless")
        status = harness.diagnostics.wait_for(
            lambda s: s.level == DiagnosticStatus.OK and "Wireless" in s.hardware_id,
            "the device back",
        )
        assert dict((v.key, v.value) for v in status.values)["reconnects"] == "1"
        bench.send(six_axes(0, 0, 0, 0, 350, 0), buttons(1))
        command = harness.wait_for(lambda c: c.action[4] > 0, "motion after the reconnect")
        np.testing.assert_allclose(command.action, [0, 0, 0, 0, 1.0, 0, -1.0], atol=1e-5)
        assert not command.button  # the intervention held before the unplug is gone

        # deactivate is a safe stop: one released frame
        bench.send(six_axes(350, 0, 0, 0, 0, 0), buttons(12))
        harness.wait_for(lambda c: c.button, "intervening again")
        harness.node.trigger_deactivate()
        harness.wait_released()


def test_missing_device_fails_configure_with_the_reason_in_diagnostics():
    from diagnostic_msgs.msg import DiagnosticStatus
    from teleop_helpers import TeleopHarness

    from robot_rl.drivers.teleop.spacemouse import SpaceMouseNode

    bench = SpaceMouseBench()
    bench.unplug()
    with TeleopHarness(SpaceMouseNode, bench.open, NODE_PARAMS) as harness:
        assert not harness.started
        harness.diagnostics.wait_for(
            lambda s: (
                s.level == DiagnosticStatus.ERROR
                and "cannot open the SpaceMouse: open failed" in s.message
            ),
            "why configure failed",
        )
        # a lifecycle manager tries again once the device is there
        bench.plug("SpaceMouse Compact")
        assert harness.node.start()
        bench.send(translation(0, 0, -350))
        command = harness.wait_for(lambda c: c.action[2] < 0, "motion")
        np.testing.assert_allclose(command.action, [0, 0, -0.5, 0, 0, 0, 0], atol=1e-5)


def test_intervene_toggle():
    from teleop_helpers import TeleopHarness

    from robot_rl.drivers.teleop.spacemouse import SpaceMouseNode

    bench = SpaceMouseBench()
    params = {
        **NODE_PARAMS,
        "intervene_toggle": "true",
        "intervene_button": "1",
        "open_button": "-1",
    }
    with TeleopHarness(SpaceMouseNode, bench.open, params) as harness:
        assert harness.started
        bench.send(CAPTURED["right"], CAPTURED["none"])
        harness.wait_for(lambda c: c.button, "intervention toggled on")
        bench.send(CAPTURED["right"])
        harness.wait_for(lambda c: not c.button, "intervention toggled off")
        bench.send(CAPTURED["none"], CAPTURED["right"])
        harness.wait_for(lambda c: c.button, "intervention toggled on again")
        bench.unplug()
        harness.wait_released()  # a lost device never keeps a toggled intervention


def test_bad_mapping_parameter_is_one_line():
    from teleop_helpers import ros_context

    from robot_rl.drivers.teleop.spacemouse import SpaceMouseNode
    from robot_rl.ros.node_base import ParameterError

    context = ros_context({"twist_axes": "[tx,ty,tz,rx,ry,yaw]"})
    try:
        with pytest.raises(ParameterError, match=r"'twist_axes'.*unknown SpaceMouse axis 'yaw'"):
            SpaceMouseNode(opener=SpaceMouseBench().open, context=context)
    finally:
        context.try_shutdown()


SCRIPT = ("robot-rl-spacemouse", "robot_rl.drivers.teleop.spacemouse")


def test_console_script_without_a_spacemouse_says_so_in_one_line():
    from teleop_helpers import console_script, run_until

    output = run_until(console_script(*SCRIPT), "no SpaceMouse found")
    assert "no SpaceMouse found" in output, output
    assert "Traceback" not in output, output


def test_console_script_bad_parameter_exits_2():
    from teleop_helpers import console_script

    result = subprocess.run(
        [*console_script(*SCRIPT), "--ros-args", "-p", "deadband:=1.5"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert "deadband" in result.stderr and "Traceback" not in result.stderr
