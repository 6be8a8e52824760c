"""Gamepad driver: evdev ``input_event`` bytes through the parser the node uses, and the node
itself (rclpy, in-process) reading them from a file descriptor with the production reader
(``EvdevFile``: non-blocking ``os.read``), heard by the actor's ``RosTeleopSource``. A pipe
stands for the device file: closing its writing end is the unplug (the reader sees the end of
the file as the kernel's ENODEV).

The recording is an Xbox 360 pad as the kernel's xpad driver presents it (``evtest``): sticks
-32768..32767, triggers 0..255, the d-pad as hat axes -1..1.
"""

from __future__ import annotations

import os
import struct
import subprocess
import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("evdev")

from evdev import ecodes as e

from robot_rl.drivers.teleop.evdev_gamepad import (
    EV_ABS,
    EV_KEY,
    EV_SYN,
    SYN_DROPPED,
    SYN_REPORT,
    AxisRange,
    GamepadEvents,
    button_key,
    pack_event,
)

pytestmark = pytest.mark.timeout(180)

XBOX360 = {
    e.ABS_X: AxisRange(-32768, 32767),
    e.ABS_Y: AxisRange(-32768, 32767),
    e.ABS_RX: AxisRange(-32768, 32767),
    e.ABS_RY: AxisRange(-32768, 32767),
    e.ABS_Z: AxisRange(0, 255),
    e.ABS_RZ: AxisRange(0, 255),
    e.ABS_HAT0X: AxisRange(-1, 1),
    e.ABS_HAT0Y: AxisRange(-1, 1),
}
AT_REST = {code: 0 for code in XBOX360}


def frame(*events, t: float = 1.0) -> bytes:
    """Events and the SYN_REPORT that closes them, as the kernel writes them."""
    return b"".join(pack_event(*ev, time_s=t) for ev in events) + pack_event(
        EV_SYN, SYN_REPORT, 0, t
    )


def axis(code, value):
    return (EV_ABS, code, value)


def key(code, value):
    return (EV_KEY, code, value)


# -- the parser -----------------------------------------------------------------------------
def test_events_apply_on_syn_report_only():
    parser = GamepadEvents(XBOX360, AT_REST)
    record = frame(axis(e.ABS_Y, -32768), key(e.BTN_TR, 1))
    parser.feed(record[:-10])  # torn read: a record and a half
    assert parser.axes[e.ABS_Y] == 0 and not parser.keys
    parser.feed(record[-10:])
    assert parser.axes[e.ABS_Y] == -32768 and parser.keys == {e.BTN_TR}
    parser.feed(frame(key(e.BTN_TR, 2)))  # auto-repeat: still held
    assert parser.keys == {e.BTN_TR}
    parser.feed(frame(key(e.BTN_TR, 0), axis(0x3F, 5)))  # an axis it never declared: ignored
    assert not parser.keys and 0x3F not in parser.axes


def test_normalisation_of_sticks_triggers_and_hats():
    parser = GamepadEvents(XBOX360, AT_REST)
    parser.feed(
        frame(
            axis(e.ABS_X, 32767),
            axis(e.ABS_Y, -32768),
            axis(e.ABS_RZ, 255),
            axis(e.ABS_Z, 64),
            axis(e.ABS_HAT0X, -1),
        )
    )
    norm = parser.normalised(triggers=[e.ABS_Z, e.ABS_RZ])
    assert norm[("abs", e.ABS_X)] == 1.0 and norm[("abs", e.ABS_Y)] == -1.0
    assert norm[("abs", e.ABS_RZ)] == 1.0 and abs(norm[("abs", e.ABS_Z)] - 64 / 255) < 1e-9
    assert norm[("abs", e.ABS_HAT0X)] == -1.0
    assert abs(norm[("abs", e.ABS_RX)]) < 1e-4  # a centred stick (the range is not symmetric)
    # any axis beyond the threshold counts as pressed (the mapping picks the ones it names)
    assert parser.pressed(0.5, [e.ABS_Z, e.ABS_RZ]) == {("abs", e.ABS_X), ("abs", e.ABS_RZ)}
    # a trigger read as a centred axis would rest at -1: that is what trigger_axes prevents
    assert parser.normalised()[("abs", e.ABS_Z)] < -0.4


def test_syn_dropped_discards_until_the_next_report_then_asks_for_a_resync():
    parser = GamepadEvents(XBOX360, AT_REST)
    parser.feed(pack_event(EV_SYN, SYN_DROPPED, 0) + frame(axis(e.ABS_X, 999)))
    assert parser.axes[e.ABS_X] == 0 and parser.needs_resync and parser.dropped_frames == 1
    parser.resync({**AT_REST, e.ABS_X: 1234}, [e.BTN_SOUTH])
    assert parser.axes[e.ABS_X] == 1234 and parser.keys == {e.BTN_SOUTH}
    assert not parser.needs_resync


def test_button_and_axis_names():
    assert button_key("BTN_TR") == ("key", e.BTN_TR)
    assert button_key("ABS_RZ") == ("abs", e.ABS_RZ)
    with pytest.raises(ValueError, match="unknown gamepad button 'BTN_NOPE'"):
        button_key("BTN_NOPE")


def test_start_says_success_and_back_rejects_by_default_on_recorded_events():
    from robot_rl.drivers.teleop.gamepad import GamepadConfig, gamepad_mapper
    from robot_rl.ros.teleop_contract import REJECT_BUTTON, SUCCESS_BUTTON

    config = GamepadConfig()
    mapper, triggers = gamepad_mapper(config)
    parser = GamepadEvents(XBOX360, AT_REST)

    def joy_buttons():
        pressed = parser.pressed(config.button_threshold, triggers)
        return mapper.frame(parser.normalised(triggers), pressed).buttons

    parser.feed(frame(key(e.BTN_START, 1)))
    assert joy_buttons()[SUCCESS_BUTTON] == 1 and joy_buttons() == (0, 0, 0, 1, 0)
    parser.feed(frame(key(e.BTN_START, 0), key(e.BTN_SELECT, 1)))
    assert joy_buttons()[REJECT_BUTTON] == 1 and joy_buttons() == (0, 0, 0, 0, 1)
    # steering (sticks, RB held, a trigger pulled, A pressed) never says success or reject
    parser.feed(
        frame(
            key(e.BTN_SELECT, 0),
            key(e.BTN_TR, 1),
            key(e.BTN_SOUTH, 1),
            axis(e.ABS_RZ, 255),
            axis(e.ABS_Y, -32768),
            axis(e.ABS_RX, 32767),
        )
    )
    assert joy_buttons() == (1, 1, 0, 0, 0)
    # any pad: other keys by name; a success that is also another button is refused
    mapper, _ = gamepad_mapper(GamepadConfig(success_button="BTN_SOUTH", reject_button="BTN_EAST"))
    assert mapper.frame({}, {("key", e.BTN_SOUTH)}).buttons == (0, 0, 0, 1, 0)
    with pytest.raises(ValueError, match="'success_button' = 'ABS_RZ' is also 'close_button'"):
        gamepad_mapper(GamepadConfig(success_button="ABS_RZ"))
    with pytest.raises(ValueError, match="'success_button' = 'BTN_SOUTH' is also 'reject_button'"):
        gamepad_mapper(GamepadConfig(success_button="BTN_SOUTH", reject_button="BTN_A"))


def test_gamepad_classification_and_sysfs_bitmaps():
    from robot_rl.drivers.teleop.gamepad import discover, is_gamepad, sysfs_key_codes

    # an Xbox 360 pad's /sys/class/input/eventN/device/capabilities/key on 64-bit Linux:
    # BTN_SOUTH, EAST, NORTH, WEST, TL, TR, SELECT, START, MODE, THUMBL, THUMBR
    if struct.calcsize("l") == 8:
        codes = sysfs_key_codes("7cdb000000000000 0 0 0 0")
        assert codes == {
            e.BTN_SOUTH,
            e.BTN_EAST,
            e.BTN_NORTH,
            e.BTN_WEST,
            e.BTN_TL,
            e.BTN_TR,
            e.BTN_SELECT,
            e.BTN_START,
            e.BTN_MODE,
            e.BTN_THUMBL,
            e.BTN_THUMBR,
        }
    assert is_gamepad([e.KEY_A, e.BTN_SOUTH], has_abs=True)
    assert not is_gamepad([e.KEY_A, e.BTN_LEFT], has_abs=True)  # a keyboard, a mouse
    assert not is_gamepad([e.BTN_SOUTH], has_abs=False)
    found = discover()  # this machine has no input devices; on a cell: path, name, ids
    assert isinstance(found, list)
    assert all({"path", "name"} <= set(d) for d in found)


# -- the node on a replayed device file ----------------------------------------------------------
class GamepadBench:
    """Plugs a pipe-backed evdev file per connection; ``send`` writes event bytes to it."""

    def __init__(self, state=None, keys=()):
        self.lock = threading.Lock()
        self.plugged = True
        self.state, self.keys = dict(state or AT_REST), list(keys)
        self.writer: int | None = None
        self.readers: list[int] = []

    def open(self, config):
        from robot_rl.drivers.teleop.gamepad import EvdevFile

        with self.lock:
            if not self.plugged:
                raise FileNotFoundError(2, "No such file or directory")
            read_fd, write_fd = os.pipe()
            os.set_blocking(read_fd, False)
            self.writer = write_fd
            self.readers.append(read_fd)
        return EvdevFile(
            read_fd,
            XBOX360,
            "replayed Xbox 360 pad",
            snapshot=lambda: (dict(self.state), list(self.keys)),
        )

    def send(self, *frames: bytes) -> None:
        with self.lock:
            os.write(self.writer, b"".join(frames))

    def unplug(self) -> None:
        with self.lock:
            self.plugged = False
            os.close(self.writer)  # the reader sees the end of the file: device gone

    def plug(self, state=None, keys=()) -> None:
        with self.lock:
            self.plugged = True
            self.state, self.keys = dict(state or AT_REST), list(keys)

    def close(self) -> None:
        with self.lock:
            if self.plugged and self.writer is not None:
                os.close(self.writer)
                self.plugged = False


NODE_PARAMS = {"reconnect_interval": "0.2", "diagnostics_hz": "5.0", "rate_hz": "50.0"}
"""Everything else at its defaults: left stick x/y, right stick z and yaw, RB intervenes, RT
closes, LT opens, deadband 0.1."""


def test_node_from_event_bytes_to_the_actor_with_unplug_and_reconnect():
    from diagnostic_msgs.msg import DiagnosticStatus
    from teleop_helpers import TeleopHarness

    from robot_rl.drivers.teleop.gamepad import GamepadNode

    bench = GamepadBench()
    try:
        with TeleopHarness(GamepadNode, bench.open, NODE_PARAMS) as harness:
            assert harness.started
            harness.wait_released()
            harness.diagnostics.wait_for(lambda s: s.level == DiagnosticStatus.OK, "OK")

            # left stick fully forward and half right; right stick slightly (inside the
            # deadband); RB held; right trigger pulled
            bench.send(
                frame(
                    axis(e.ABS_Y, -32768),
                    axis(e.ABS_X, 16384),
                    axis(e.ABS_RY, 2000),
                    key(e.BTN_TR, 1),
                    axis(e.ABS_RZ, 255),
                )
            )
            command = harness.wait_for(lambda c: c.button and c.action[0] > 0, "a deflection")
            half = (16384 * 2 + 1) / 65535
            expected = [1.0, -(half - 0.1) / 0.9, 0.0, 0.0, 0.0, 0.0, 1.0]
            np.testing.assert_allclose(command.action, expected, atol=1e-5)

            # the kernel's buffer overflowed: the node reads the whole state afresh
            bench.state = {**AT_REST, e.ABS_RX: -32768}
            bench.keys = []
            bench.send(pack_event(EV_SYN, SYN_DROPPED, 0), frame(axis(e.ABS_X, 5)))
            command = harness.wait_for(lambda c: c.action[5] > 0, "the resynced state")
            np.testing.assert_allclose(command.action, [0, 0, 0, 0, 0, 1.0, 0], atol=1e-5)
            assert not command.button

            # intervening again, then unplugged: released at once, diagnostics say so
            bench.send(frame(key(e.BTN_TR, 1), axis(e.ABS_RX, 0), axis(e.ABS_Y, 32767)))
            harness.wait_for(lambda c: c.button and c.action[0] < 0, "intervening")
            bench.unplug()
            harness.wait_released()
            status = harness.diagnostics.wait_for(
                lambda s: s.level == DiagnosticStatus.ERROR and "lost" in s.message, "device lost"
            )
            assert "retrying" in status.message
            time.sleep(0.5)
            harness.wait_released()  # stays released while the pad is away

            # plugged back with the left trigger already pulled: the state is read on open
            bench.plug({**AT_REST, e.ABS_Z: 255})
            command = harness.wait_for(lambda c: c.action[6] < 0, "the state read on reopen")
            assert not command.button and not np.any(command.action[:6])
            status = harness.diagnostics.wait_for(
                lambda s: s.level == DiagnosticStatus.OK, "the pad back"
            )
            assert dict((v.key, v.value) for v in status.values)["reconnects"] == "1"
            bench.send(frame(axis(e.ABS_Z, 0), axis(e.ABS_RY, -32768)))
            command = harness.wait_for(lambda c: c.action[2] > 0, "motion after the reconnect")
            np.testing.assert_allclose(command.action, [0, 0, 1.0, 0, 0, 0, 0], atol=1e-5)
    finally:
        bench.close()


def test_node_start_and_back_presses_reach_the_operators_consumer():
    """The actor's ``--operator joy`` (``JoyOperator``) hears the pad's success and reject."""
    from teleop_helpers import WAIT_S, TeleopHarness

    from robot_rl.drivers.teleop.gamepad import GamepadNode
    from robot_rl.rewards.operator import REJECT, SUCCESS
    from robot_rl.ros.operator_buttons import JoyOperator
    from robot_rl.ros.teleop import JOY_TOPIC

    bench = GamepadBench()
    try:
        with TeleopHarness(GamepadNode, bench.open, NODE_PARAMS) as harness:
            assert harness.started
            operator = JoyOperator(node_name="gamepad_test_operator")
            try:
                harness.wait_for(
                    lambda c: operator.node.count_publishers(JOY_TOPIC) > 0, "the pad's /teleop/joy"
                )
                bench.send(frame(key(e.BTN_START, 1)))  # held until heard, as a person does
                assert operator.wait(WAIT_S) == SUCCESS
                bench.send(frame(key(e.BTN_START, 0), key(e.BTN_SELECT, 1)))
                assert operator.wait(WAIT_S) == REJECT
                bench.send(frame(key(e.BTN_SELECT, 0), key(e.BTN_TR, 1)))
                harness.wait_for(lambda c: c.button, "intervening")
                assert operator.poll() == []  # each press counted once, steering says nothing
            finally:
                operator.close()
    finally:
        bench.close()


def test_unknown_axis_name_is_one_line():
    from teleop_helpers import ros_context

    from robot_rl.drivers.teleop.gamepad import GamepadNode
    from robot_rl.ros.node_base import ParameterError

    context = ros_context({"close_button": "BTN_NOPE"})
    try:
        with pytest.raises(ParameterError, match=r"'close_button' = 'BTN_NOPE'"):
            GamepadNode(opener=GamepadBench().open, context=context)
    finally:
        context.try_shutdown()


SCRIPT = ("robot-rl-gamepad", "robot_rl.drivers.teleop.gamepad")


def test_console_script_without_the_device_says_so_in_one_line():
    from teleop_helpers import console_script, run_until

    output = run_until(
        [*console_script(*SCRIPT), "--ros-args", "-p", "device_path:=/dev/input/event99"],
        "cannot open the gamepad",
    )
    assert "cannot open the gamepad at /dev/input/event99: No such file" in output, output
    assert "Traceback" not in output, output
    output = run_until(console_script(*SCRIPT), "no gamepad")
    assert "no gamepad found" in output and "Traceback" not in output, output


def test_console_script_bad_parameter_exits_2():
    from teleop_helpers import console_script

    result = subprocess.run(
        [*console_script(*SCRIPT), "--ros-args", "-p", "twist_axes:=[ABS_X,none]"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert "twist_axes" in result.stderr and "Traceback" not in result.stderr
