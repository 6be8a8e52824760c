"""The SO-101 driver's bus thread (``drivers/arms/so101_link``) against the STS3215 bus peer on a
pty (``sim/cells/feetech_peer``): pose targets become bounded servo goals, the watchdog holds,
servo faults turn the torque off, an unplugged adapter is reconnected."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("scservo_sdk", reason="needs feetech-servo-sdk (robot-rl[hardware])")

from robot_rl.drivers.arms import so101_calibration as calibration
from robot_rl.drivers.arms import so101_kinematics as kin
from robot_rl.drivers.arms.configs import So101Config
from robot_rl.drivers.arms.so101_link import FAULT, FOLLOWING, HOLDING, LinkSettings, So101Link
from robot_rl.sim.cells.feetech_peer import FeetechPeer
from robot_rl.sim.cells.processes import wait_for

WAIT = 20.0
START = np.array([0.0, -0.6, 0.9, 0.4, 0.0])
"""A bent arm, away from the straight (singular) pose."""


@pytest.fixture
def arm(tmp_path):
    motors = calibration.default()
    peer = FeetechPeer(tmp_path / "so101", [m.id for m in motors.values()])
    for (_name, motor), angle in zip(list(motors.items())[:5], START, strict=True):
        peer.arm.positions[motor.id] = float(motor.to_ticks(angle))
    peer.start()
    config = So101Config(
        port=str(peer.link), state_hz=50.0, reconnect_period=0.2, max_joint_step=0.1
    )
    settings = LinkSettings.of(config, motors)
    logs = []
    link = So101Link(settings, lambda reading: None, lambda level, msg: logs.append(msg))
    link.connect()
    link.start()
    link.enable(True)
    yield link, peer
    link.close()
    peer.close()


def _command_towards(link, target, seconds: float):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        link.command_pose(target, link.last.tcp_quat)
        time.sleep(0.05)


def test_a_pose_target_is_followed_in_bounded_steps(arm):
    link, peer = arm
    wait_for(lambda: link.last is not None, WAIT, "the first reading")
    start = link.last.tcp_pos.copy()
    target = start + np.array([0.0, 0.03, -0.03])
    link.command_pose(target, link.last.tcp_quat)
    wait_for(lambda: peer.goal_writes, WAIT, "a goal write")
    first = peer.goal_writes[0]
    motors = list(link.motors.values())
    moved = [abs(motors[i].to_radians(first[m.id]) - START[i]) for i, m in enumerate(motors[:5])]
    assert max(moved) <= 0.1 + 1e-3  # max_joint_step
    _command_towards(link, target, 3.0)
    assert link.mode == FOLLOWING
    assert np.linalg.norm(link.last.tcp_pos - target) < 0.004


def test_a_target_within_the_hold_deadband_keeps_the_one_in_force(arm):
    """A task's zero action re-sends the measured TCP, a little off the goal of a servo that
    sags or jitters; re-aiming at it every period walked the arm off in the cell."""
    link, peer = arm
    wait_for(lambda: link.last is not None, WAIT, "the first reading")
    target = link.last.tcp_pos + np.array([0.0, 0.02, -0.02])
    _command_towards(link, target, 3.0)
    assert np.linalg.norm(link.last.tcp_pos - target) < 0.002
    goals = dict(peer.goal_writes[-1])
    near = target + np.array([0.0014, 0.0, 0.0])  # within hold_deadband (1.5 mm)
    _command_towards(link, near, 1.0)
    moved = [abs(peer.goal_writes[-1][servo] - tick) for servo, tick in goals.items()]
    assert max(moved) <= 2, moved  # ticks: the goals of the target in force
    beyond = target + np.array([0.004, 0.0, 0.0])
    _command_towards(link, beyond, 2.0)
    assert np.linalg.norm(link.last.tcp_pos - beyond) < 0.002


def test_the_watchdog_holds_when_commands_stop(arm):
    link, peer = arm
    wait_for(lambda: link.last is not None, WAIT, "the first reading")
    link.command_pose(link.last.tcp_pos + np.array([0.0, 0.0, 0.02]), link.last.tcp_quat)
    wait_for(lambda: link.mode == FOLLOWING, WAIT, "following")
    wait_for(lambda: link.mode == HOLDING, WAIT, "holding after the watchdog")
    writes = len(peer.goal_writes)
    time.sleep(0.3)
    assert len(peer.goal_writes) == writes  # no goal goes out while holding


def test_an_overloaded_servo_is_a_fault_that_turns_every_torque_off(arm):
    link, peer = arm
    wait_for(lambda: link.last is not None, WAIT, "the first reading")
    peer.set_error(3, 0x20)
    wait_for(lambda: link.mode == FAULT, WAIT, "the fault")
    assert "elbow_flex: overload" in link.fault
    assert not any(peer.torque(servo) for servo in range(1, 7))
    link.command_pose(link.last.tcp_pos + np.array([0.0, 0.0, 0.02]), link.last.tcp_quat)
    time.sleep(0.2)
    assert link.mode == FAULT and not peer.goal_writes[1:]  # refused while the fault stands
    peer.set_error(3, 0)
    assert link.clear_error().startswith("cleared: elbow_flex: overload")
    wait_for(lambda: link.mode == HOLDING, WAIT, "holding after clear_error")
    assert all(peer.torque(servo) for servo in range(1, 7))


def test_a_servo_hotter_than_the_bound_is_a_fault(arm):
    link, peer = arm
    wait_for(lambda: link.last is not None, WAIT, "the first reading")
    peer.set_temperature(1, 70)
    wait_for(lambda: link.mode == FAULT, WAIT, "the fault")
    assert "shoulder_pan at 70 C" in link.fault
    assert not any(peer.torque(servo) for servo in range(1, 7))


def test_an_unplugged_adapter_is_reconnected(arm):
    link, peer = arm
    wait_for(lambda: link.last is not None, WAIT, "the first reading")
    peer.unplug()
    wait_for(lambda: link.loop.faults >= 1, WAIT, "the lost bus noticed")
    peer.plug()
    wait_for(lambda: link.reconnects >= 1 and link.mode == HOLDING, WAIT, "the reconnect")
    cycles = link.cycles
    wait_for(lambda: link.cycles > cycles + 5, WAIT, "readings again")


def test_the_default_arm_pose_is_inside_the_models_reach():
    tcp = kin.forward(START)
    assert 0.1 < np.linalg.norm(tcp[:2, 3]) < 0.45
