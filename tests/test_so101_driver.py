"""The SO-101 driver node (``robot-rl-so101``'s module, its own process) against the STS3215 bus
peer on a pty (``sim/cells/feetech_peer``), spoken to only through ROS 2: the arm contract, pose
commands that move the servos, e-stop, the reset service, a servo fault that turns the torque
off and ``clear_error``. Waits are long and bounded (a loaded machine)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("scservo_sdk", reason="needs feetech-servo-sdk (robot-rl[hardware])")

from robot_rl.drivers.arms import so101_calibration as calibration
from robot_rl.drivers.arms import so101_kinematics as kin
from robot_rl.sim.cells.feetech_peer import FeetechPeer
from robot_rl.sim.cells.franka_harness import ArmClient, Driver, wait_for

START = np.array([0.0, -0.6, 0.9, 0.4, 0.0])
RESET = [0.2, -0.4, 0.7, 0.5, 0.0]
NODE = "/arm/so101"


@pytest.fixture(scope="module")
def cell(tmp_path_factory):
    logs = tmp_path_factory.mktemp("so101")
    motors = calibration.default()
    peer = FeetechPeer(logs / "so101-bus", [m.id for m in motors.values()])
    for motor, angle in zip(list(motors.values())[:5], START, strict=True):
        peer.arm.positions[motor.id] = float(motor.to_ticks(angle))
    peer.start()
    driver = Driver(
        logs / "driver.log", module="robot_rl.drivers.arms.so101", port=str(peer.link),
        command_max_age=1.0, watchdog_timeout=0.5, reset_joints=RESET, reset_timeout=60.0,
        reset_speed=1.0, diagnostics_hz=5.0, workspace_min=[0.1, -0.2, 0.02],
        workspace_max=[0.4, 0.2, 0.3],
    )  # fmt: skip
    arm = ArmClient()
    try:
        wait_for(arm.pose, 120.0, "the driver's first ee_pose")
        wait_for(lambda: arm.driver_status(NODE).get("motion_enabled") == "True", 60.0,
                 "the driver to become active")  # fmt: skip
        yield peer, arm
    finally:
        arm.close()
        driver.stop()
        peer.close()
        print(driver.output()[-3000:])


def test_publishes_the_arm_contract(cell):
    _, arm = cell
    names = ("joint_states", "ee_pose", "ee_twist", "gripper/joint_states")
    wait_for(lambda: all(arm.counts.get(n, 0) > 10 for n in names), 60.0, "every state topic")
    joints = arm.latest["joint_states"]
    assert list(joints.name) == list(kin.JOINTS)
    np.testing.assert_allclose(joints.position, START, atol=0.01)
    assert arm.latest["ee_pose"].header.frame_id == "base"
    np.testing.assert_allclose(arm.position(), kin.forward(START)[:3, 3], atol=0.005)
    (closed,) = arm.latest["gripper/joint_states"].position  # the contract's 0 open .. 1 closed
    assert 0.0 <= closed <= 1.0
    linear = arm.latest["ee_twist"].twist.linear  # at rest: the TCP does not move
    assert np.linalg.norm([linear.x, linear.y, linear.z]) < 0.02
    assert "ee_wrench" not in arm.counts  # no force sensor, no wrench


def test_a_pose_command_moves_the_servos_to_the_target(cell):
    _, arm = cell
    target = arm.position() + np.array([0.0, 0.03, 0.02])
    _, quat = arm.pose()
    reached = arm.track(target, tolerance=0.005, timeout=60.0, quat=quat)
    assert np.linalg.norm(reached - target) < 0.005
    arm.stop_stream()
    wait_for(lambda: arm.driver_status(NODE).get("mode") == "holding", 30.0, "the watchdog hold")


def test_estop_refuses_commands_and_the_reset_service_moves_to_the_reset_joints(cell):
    _, arm = cell
    assert arm.estop(True).success
    before = int(arm.driver_status(NODE).get("refused", "0"))
    arm.send_pose(arm.position(), arm.pose()[1])
    wait_for(lambda: int(arm.driver_status(NODE).get("refused", "0")) > before, 30.0,
             "the refusal")  # fmt: skip
    assert "e-stop" in arm.driver_status(NODE)["last_refusal"]
    assert arm.estop(False).success
    answer = arm.trigger("reset")
    assert answer.success, answer.message
    np.testing.assert_allclose(arm.latest["joint_states"].position, RESET, atol=0.05)


def test_an_overloaded_servo_turns_the_torque_off_until_clear_error(cell):
    peer, arm = cell
    peer.set_error(2, 0x20)
    wait_for(lambda: arm.driver_status(NODE).get("mode") == "fault", 30.0, "the fault")
    assert "shoulder_lift: overload" in arm.driver_status(NODE)["fault"]
    assert not any(peer.torque(servo) for servo in range(1, 7))
    peer.set_error(2, 0)
    assert arm.trigger("clear_error").success
    wait_for(lambda: arm.driver_status(NODE).get("mode") == "holding", 30.0, "holding again")
    assert all(peer.torque(servo) for servo in range(1, 7))
