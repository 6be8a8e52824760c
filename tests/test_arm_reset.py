"""The scripted arm reset (robot_rl.resets.arm_reset) on a fake robot arm and on the twin."""

import dataclasses

import fakes
import numpy as np
import pytest
from fakes import FINGER_SPAN

from robot_rl.envs.arm_geometry import yaw_of
from robot_rl.resets.arm_reset import (
    ArmResetPose,
    GraspFailedError,
    GraspSpec,
    lift_clear,
    regrasp,
    reset_arm,
)


def robot_arm(tcp=(0.5, 0.0, 0.05), **options):
    """A robot arm (no placing objects) whose TCP steps 8 cm per control period."""
    return fakes.FakeArm(tcp_pos=tcp, max_step=0.08, **options)


POSE = ArmResetPose(pos=(0.5, 0.0, 0.15), noise=(0.03, 0.02, 0.01), gripper=0.0, clearance=0.18)


def test_reset_lifts_clear_first_then_lands_in_the_randomised_box():
    rng = np.random.default_rng(0)
    arm = robot_arm(tcp=(0.42, 0.1, 0.03), object_pos=(0.42, 0.1, 0.03), held=True)
    reset_arm(arm, POSE, rng)
    # straight up from where the last episode left the tool, the held object kept in the hand
    lift_pos, lift_grip = arm.moves[0]
    assert np.allclose(lift_pos, [0.42, 0.1, POSE.clearance]) and lift_grip == 1.0
    assert arm.opening == FINGER_SPAN  # the gripper opened at the reset pose
    positions = [arm.tcp_pos.copy()]
    for _ in range(30):
        reset_arm(arm, POSE, rng)
        positions.append(arm.tcp_pos.copy())
    positions = np.array(positions)
    low = np.array(POSE.pos) - POSE.noise
    high = np.array(POSE.pos) + POSE.noise
    assert np.all(positions >= low) and np.all(positions <= high)
    assert np.all(positions.std(axis=0) > np.array(POSE.noise) / 4)  # every axis randomised


def test_the_drivers_own_reset_runs_first_and_the_procedure_goes_on_from_where_it_left_the_arm():
    arm = robot_arm(tcp=(0.3, 0.2, 0.03))
    arm.driver_reset_pos = (0.55, 0.0, 0.5)  # the Franka node's reset pose, high above
    reset_arm(arm, POSE, np.random.default_rng(0))
    assert arm.resets_begun == 1
    # never back to where the policy left the arm: straight over from the driver's reset pose
    assert all(np.linalg.norm(pos[:2] - [0.3, 0.2]) > 0.1 for pos, _ in arm.moves)
    above, landed = arm.moves[0][0], arm.moves[-1][0]
    assert np.allclose(above[:2], landed[:2]) and above[2] == POSE.clearance


def test_lift_clear_leaves_a_high_tool_where_it_is():
    arm = robot_arm(tcp=(0.5, 0.0, 0.25))
    lift_clear(arm, clearance=0.15)
    assert arm.moves == []


def test_reset_pose_refuses_bad_input():
    with pytest.raises(ValueError, match="3 entries"):
        ArmResetPose(pos=(0.5, 0.0), noise=(0.0, 0.0, 0.0), gripper=0.0, clearance=0.1)
    with pytest.raises(ValueError, match="gripper"):
        ArmResetPose(pos=(0.5, 0.0, 0.1), noise=(0.0, 0.0, 0.0), gripper=2.0, clearance=0.1)


PEG_SPEC = GraspSpec(pick_pos=(0.45, -0.2, 0.08), holding_range=(0.45, 0.85), lift_height=0.1)


def test_robot_regrasp_picks_the_peg_from_its_holder_and_checks_the_grasp():
    arm = robot_arm(tcp=(0.5, 0.0, 0.06), object_pos=PEG_SPEC.pick_pos)
    reading = regrasp(arm, PEG_SPEC)
    assert PEG_SPEC.holding(reading) and arm.held
    assert np.allclose(reading["tcp_pos"], np.add(PEG_SPEC.pick_pos, (0, 0, 0.1)))
    assert np.allclose(arm.object_pos, reading["tcp_pos"])  # the peg came along
    # it came down onto the pick pose from above, open
    descend = [pos for pos, grip in arm.moves if np.allclose(pos, PEG_SPEC.pick_pos)]
    assert descend and all(grip == 0.0 for pos, grip in arm.moves[-2:])


def test_robot_regrasp_keeps_a_peg_that_is_still_in_the_hand():
    arm = robot_arm(tcp=(0.5, 0.0, 0.1), object_pos=(0.5, 0.0, 0.1), held=True)
    reading = regrasp(arm, PEG_SPEC)
    assert PEG_SPEC.holding(reading)
    assert all(not np.allclose(pos, PEG_SPEC.pick_pos) for pos, _ in arm.moves)


def test_robot_regrasp_fails_clearly_when_the_peg_is_not_there():
    arm = robot_arm(tcp=(0.5, 0.0, 0.1), object_pos=(0.3, 0.3, 0.0))
    with pytest.raises(GraspFailedError, match="no grasp after 2 attempts"):
        regrasp(arm, PEG_SPEC)
    assert arm.opening == FINGER_SPAN  # it let go after the failed attempts


# -- on the twin ------------------------------------------------------------------------------


@pytest.fixture
def twin_env():
    pytest.importorskip("mujoco")
    from robot_rl.envs.task import make_task
    from robot_rl.sim import make_twin_env

    envs = []

    def make(name, **options):
        envs.append(make_twin_env(make_task(name, **options)))
        return envs[-1]

    yield make
    for env in envs:
        env.close()


@pytest.mark.parametrize("task_name", ["pick_cube", "peg_insert"])
def test_twin_reset_lands_in_the_randomised_box(twin_env, task_name):
    env = twin_env(task_name)
    pose = env.task.reset_pose()
    for seed in range(6):
        env.reset(seed=seed)
        reading = env.reading
        offset = np.abs(reading["tcp_pos"] - np.asarray(pose.pos))
        assert np.all(offset <= np.asarray(pose.noise) + 0.004), offset
        assert abs(yaw_of(reading["tcp_quat"]) - pose.yaw) <= pose.yaw_noise + 0.01
        expected_grip = pose.gripper
        assert float(reading["gripper_pos"][0]) == pytest.approx(expected_grip, abs=0.05)


def test_twin_peg_reset_regrasps_the_peg_and_pulls_it_out_of_the_hole(twin_env):
    from robot_rl.sim import make_expert

    env = twin_env("peg_insert")
    expert = make_expert(env.task)
    env.reset(seed=3)
    expert.reset(np.random.default_rng(3))
    for _ in range(env.task.max_episode_steps):
        *_, terminated, truncated, info = env.step(expert.act(env.reading))
        if terminated or truncated:
            break
    assert info["success"]  # the peg is in the hole
    env.reset(seed=4)
    reading = env.reading
    tip_below_tcp = reading["tcp_pos"] - reading["object/peg_pos"]
    assert np.allclose(tip_below_tcp, [0, 0, 0.045], atol=1e-3)  # in the hand
    assert reading["gripper_pos"][0] > 0.95
    assert env.task.info(reading)["peg_depth"] < -0.02  # out of the hole, above the board


class RobotView:
    """The twin seen as a real robot: no privileged placement, so the robot sequence runs."""

    is_simulated = False

    def __init__(self, twin):
        self._twin = twin
        self.control_hz = twin.control_hz

    def __getattr__(self, name):
        if name == "place_object":
            raise AttributeError("a robot cannot place objects")
        return getattr(self._twin, name)


def test_robot_grasp_sequence_lifts_a_real_cube_in_the_twin(twin_env):
    env = twin_env("pick_cube")
    env.reset(seed=0)
    cube = np.array([0.45, 0.05, 0.025])
    env.backend.place_object("cube", cube, np.array([1.0, 0.0, 0.0, 0.0]))
    spec = GraspSpec(pick_pos=tuple(cube), holding_range=(0.2, 0.9), lift_height=0.08)
    reading = regrasp(RobotView(env.backend), spec)
    assert spec.holding(reading)
    lifted = reading["object/cube_pos"]
    assert lifted[2] == pytest.approx(cube[2] + 0.08, abs=0.01)  # the cube came along
    assert np.linalg.norm(lifted - reading["tcp_pos"]) < 0.01
    # with nothing at the pick pose the fingers close on air: a clear failure, not a silent one
    with pytest.raises(GraspFailedError):
        regrasp(RobotView(env.backend), dataclasses.replace(spec, pick_pos=(0.6, -0.1, 0.025)))


def test_put_down_cube_starts_with_the_cube_lifted_in_the_hand(twin_env):
    env = twin_env("put_down_cube")
    task = env.task
    for seed in range(4):
        env.reset(seed=seed)
        reading = env.reading
        assert task.cube_holding_range[0] < reading["gripper_pos"][0] < task.cube_holding_range[1]
        cube = reading["object/cube_pos"]
        assert np.linalg.norm(cube - reading["tcp_pos"]) < 0.01
        low, high = task.hold_height
        assert low - 0.005 <= cube[2] - 0.025 <= high + 0.005
        assert np.all(np.abs(cube[:2] - task.reset_pos[:2]) <= task.cube_region + 0.01)
        assert not task.success(reading)
