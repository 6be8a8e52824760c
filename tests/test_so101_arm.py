"""The SO-101 in MuJoCo behind the servo bus peer (``sim/so101_arm``): the driver's bus talks to
servos whose positions come from physics (gravity, the actuators' torque limits)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("scservo_sdk", reason="needs feetech-servo-sdk (robot-rl[hardware])")

from robot_rl.drivers.arms import feetech_protocol as sts
from robot_rl.drivers.arms import so101_calibration as calibration
from robot_rl.drivers.arms.feetech_bus import FeetechBus
from robot_rl.sim.cells.feetech_peer import FeetechPeer
from robot_rl.sim.cells.processes import wait_for
from robot_rl.sim.so101_arm import MujocoServoArm

START = {"shoulder_lift": -0.6, "elbow_flex": 0.9, "wrist_flex": 0.4}
WAIT = 20.0


@pytest.fixture
def bus(tmp_path):
    motors = calibration.default()
    peer = FeetechPeer(tmp_path / "so101", [m.id for m in motors.values()],
                       arm=MujocoServoArm(START)).start()  # fmt: skip
    bus = FeetechBus(str(peer.link), [m.id for m in motors.values()]).open()
    yield bus, motors
    bus.close()
    peer.close()


def test_the_servos_hold_and_reach_their_goals_against_gravity(bus):
    bus, motors = bus
    here = {servo: f.position for servo, f in bus.feedback().items()}
    bus.write_goals(here)
    bus.set_torque(True)
    lift = motors["shoulder_lift"]
    goal = lift.to_ticks(START["shoulder_lift"] + 0.3)
    bus.write_goals({lift.id: goal})

    def there():
        return abs(bus.feedback()[lift.id].position - goal) <= 15  # a little sag under load

    wait_for(there, WAIT, "shoulder_lift at its goal")
    load = bus.feedback()[lift.id].load
    assert load != 0  # it holds the arm up


def test_torque_off_lets_the_arm_fall(bus):
    bus, motors = bus
    lift = motors["shoulder_lift"]
    start = bus.feedback()[lift.id].position
    bus.set_torque(False)
    wait_for(lambda: abs(bus.feedback()[lift.id].position - start) > 100, WAIT, "the arm falling")


def test_the_model_and_the_kinematics_agree():
    from robot_rl.drivers.arms import so101_kinematics as kin

    arm = MujocoServoArm(START)
    q = np.array([arm.data.joint(name).qpos[0] for name in kin.JOINTS])
    tcp = arm.data.site("tcp")
    np.testing.assert_allclose(tcp.xpos, kin.forward(q)[:3, 3], atol=1e-9)
    assert arm.motors["wrist_roll"].to_ticks(0.0) == sts.CENTRE_TICK


def test_the_driver_link_moves_the_simulated_arm_to_a_pose_target(tmp_path):
    from robot_rl.drivers.arms.configs import So101Config
    from robot_rl.drivers.arms.so101_link import LinkSettings, So101Link

    motors = calibration.default()
    peer = FeetechPeer(tmp_path / "so101", [m.id for m in motors.values()],
                       arm=MujocoServoArm(START)).start()  # fmt: skip
    config = So101Config(
        port=str(peer.link), state_hz=50.0, reconnect_period=0.2, max_joint_step=0.1
    )
    settings = LinkSettings.of(config, motors)
    link = So101Link(settings, lambda reading: None, lambda level, message: None)
    link.connect()
    link.start()
    link.enable(True)
    try:
        wait_for(lambda: link.last is not None, WAIT, "the first reading")
        target = link.last.tcp_pos + np.array([0.02, 0.03, 0.03])
        quat = link.last.tcp_quat

        def reached():
            link.command_pose(target, quat)
            return np.linalg.norm(link.last.tcp_pos - target) < 0.003

        wait_for(reached, WAIT, "the TCP at the target")
    finally:
        link.close()
        peer.close()
