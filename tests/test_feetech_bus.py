"""The SO-101's servo bus (``drivers/arms/feetech_bus``, through Feetech's SDK) against a bus peer
on a pty that answers the STS3215 protocol (``sim/cells/feetech_peer``): the bytes on the wire
are the real protocol's, framed by the SDK on one side and by the peer's own code on the other."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("scservo_sdk", reason="needs feetech-servo-sdk (robot-rl[hardware])")

from robot_rl.drivers.arms import feetech_protocol as sts
from robot_rl.drivers.arms.feetech_bus import BusError, FeetechBus
from robot_rl.sim.cells.feetech_peer import FeetechPeer, checksum
from robot_rl.sim.cells.processes import wait_for

IDS = (1, 2, 3, 4, 5, 6)
WAIT = 20.0
"""Seconds a condition may take on a loaded machine."""


@pytest.fixture
def bus(tmp_path):
    peer = FeetechPeer(tmp_path / "so101", IDS).start()
    bus = FeetechBus(str(peer.link), IDS).open()
    yield bus, peer
    bus.close()
    peer.close()


def test_ping_finds_every_servo_as_an_sts3215(bus):
    bus, _ = bus
    assert bus.ping() == dict.fromkeys(IDS, sts.STS3215_MODEL)
    assert bus.read(3, sts.ID) == 3


def test_goal_positions_reach_the_servos_and_the_feedback_follows(bus):
    bus, peer = bus
    bus.set_torque(True)
    assert all(peer.torque(servo) for servo in IDS)
    goals = {servo: 2048 + 100 * servo for servo in IDS}
    bus.write_goals(goals)
    wait_for(
        lambda: peer.goal_writes and peer.goal_writes[-1] == goals, WAIT, "the sync write arrives"
    )

    def arrived():
        feedback = bus.feedback()
        return all(feedback[s].position == goals[s] for s in IDS) and feedback

    feedback = wait_for(arrived, WAIT, "the servos reach their goals")
    assert feedback[1].voltage == pytest.approx(12.0) and feedback[1].temperature == 30
    assert all(not f.errors for f in feedback.values())


def test_torque_off_leaves_the_servos_where_they_are(bus):
    bus, peer = bus
    bus.set_torque(False)
    bus.write_goals({1: 3000})
    time.sleep(0.3)
    assert bus.feedback()[1].position == sts.CENTRE_TICK
    assert not peer.torque(1)


@pytest.mark.parametrize("fault", ["corrupt_next", "truncate_next"])
def test_a_garbled_or_truncated_answer_is_retried(bus, fault):
    bus, peer = bus
    getattr(peer, fault)(1)
    assert set(bus.feedback()) == set(IDS)


@pytest.mark.parametrize(
    ("fault", "reason"), [("corrupt_next", "incorrect status packet"),
                          ("truncate_next", "incorrect status packet")],
)  # fmt: skip
def test_a_bus_that_keeps_garbling_is_one_line_after_the_retries(bus, fault, reason):
    bus, peer = bus
    getattr(peer, fault)(100)
    with pytest.raises(BusError) as caught:
        bus.read(2, sts.PRESENT_POSITION)
    message = str(caught.value)
    assert "\n" not in message and reason in message and "4 tries" in message
    assert str(peer.link) in message


def test_a_servo_that_stops_answering_is_named(bus):
    bus, peer = bus
    peer.silence(4)
    with pytest.raises(BusError, match="servo 4 did not answer"):
        bus.feedback()
    with pytest.raises(BusError, match="servo 4 does not answer a ping"):
        bus.ping()
    peer.silence(4, False)
    assert set(bus.feedback()) == set(IDS)


@pytest.mark.parametrize(("bits", "names"), [(0x20, ["overload"]), (0x04, ["overheat"]),
                                              (0x24, ["overheat", "overload"])])  # fmt: skip
def test_overload_and_overheat_bits_reach_the_feedback_and_drop_the_torque(bus, bits, names):
    bus, peer = bus
    bus.set_torque(True)
    peer.set_error(2, bits)
    feedback = bus.feedback()
    assert list(feedback[2].errors) == names and not feedback[1].errors
    assert not peer.torque(2) and peer.torque(1)
    bus.set_torque(True)  # the servo's protection keeps it off
    assert not peer.torque(2)


def test_unplug_fails_in_one_line_and_a_replug_reopens(bus):
    bus, peer = bus
    peer.unplug()
    with pytest.raises(BusError) as caught:
        bus.feedback()
    assert "\n" not in str(caught.value)
    bus.close()
    with pytest.raises(BusError, match="cannot open"):
        bus.open()
    peer.plug()
    bus.open()
    assert bus.ping() == dict.fromkeys(IDS, sts.STS3215_MODEL)


def test_the_peer_ignores_a_packet_with_a_wrong_checksum(bus):
    bus, peer = bus
    body = bytes([1, 4, 0x03, sts.GOAL_POSITION[0], 0x00, 0x0A])  # WRITE 2560 to servo 1
    bad = b"\xff\xff" + body + bytes([checksum(body) ^ 0x55])
    bus._port.writePort(bad)  # raw bytes on the wire
    wait_for(lambda: peer.bad_packets == 1, WAIT, "the peer sees the packet")
    assert peer.entry(1, sts.GOAL_POSITION) == sts.CENTRE_TICK


def test_bad_ids_and_a_missing_port_are_one_line(tmp_path):
    with pytest.raises(ValueError, match="servo ids"):
        FeetechBus("/dev/null", [300])
    with pytest.raises(BusError, match="cannot open the servo bus"):
        FeetechBus(str(tmp_path / "nothing"), IDS).open()


def test_doctor_finds_servo_bus_adapters_among_the_serial_ports():
    """pyserial's port records as a machine with a Waveshare board, an FTDI cable and a
    VESC (an STM32's own USB, not a bus adapter) would list them."""
    from serial.tools.list_ports_common import ListPortInfo

    from robot_rl.drivers.arms.feetech_bus import discover_adapters

    def port(device, vid, pid, serial):
        info = ListPortInfo(device, skip_link_detection=True)
        info.vid, info.pid, info.serial_number = vid, pid, serial
        return info

    ports = [
        port("/dev/ttyACM0", 0x1A86, 0x55D3, "5A46083062"),
        port("/dev/ttyACM1", 0x0483, 0x5740, "304F"),  # a VESC
        port("/dev/ttyUSB0", 0x0403, 0x6001, "A10K"),
    ]
    found = discover_adapters(ports)
    assert [(d["device"], d["name"]) for d in found] == [
        ("/dev/ttyACM0", "CH343 (Waveshare bus servo adapter)"),
        ("/dev/ttyUSB0", "FTDI FT232"),
    ]
    assert found[0]["kind"] == "servo bus" and found[0]["serial"] == "5A46083062"
    assert discover_adapters([]) == []
