"""The arm drivers' hard limits as pure functions: command validation, the workspace box and
the per-step translation and rotation limits (no ROS 2, no robot)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_rl.drivers.arms.arm_safety import (
    Workspace,
    gripper_command_reason,
    limit_step,
    pose_command_reason,
    quat_angle,
    safe_target,
    slerp,
)
from robot_rl.drivers.arms.franka_state import ArmState, pose_twist

DOWN = np.array([0.0, 1.0, 0.0, 0.0])  # w-x-y-z: the tool pointing down
BOX = Workspace((0.3, -0.3, 0.05), (0.7, 0.3, 0.6))
NOW = 1_000_000.0


def reason(pos=(0.5, 0.0, 0.3), quat=DOWN, frame="base", stamp=NOW - 0.01, max_age=0.2):
    return pose_command_reason(np.array(pos), np.array(quat), frame, stamp, NOW, max_age)


def test_a_fresh_finite_command_in_the_base_frame_passes():
    assert reason() is None
    assert reason(frame="") is None


@pytest.mark.parametrize(
    "stamp, words", [(0.0, "unstamped"), (NOW - 1.0, "stale"), (NOW + 1.0, "future")]
)
def test_unstamped_stale_and_future_commands_are_refused(stamp, words):
    assert words in reason(stamp=stamp)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_positions_and_quaternions_are_refused(bad):
    assert "non-finite" in reason(pos=(0.5, bad, 0.3))
    assert "non-finite" in reason(quat=(bad, 1.0, 0.0, 0.0))
    assert "non-finite" in gripper_command_reason(bad)
    assert gripper_command_reason(0.7) is None


def test_other_frames_and_malformed_quaternions_are_refused():
    assert "frame 'tcp'" in reason(frame="tcp")
    assert "norm" in reason(quat=(0.0, 0.0, 0.0, 0.0))
    assert "norm" in reason(quat=(0.0, 2.0, 0.0, 0.0))
    assert reason(quat=(0.0, 1.02, 0.0, 0.0)) is None  # rounding, not malformed


def test_workspace_clips_each_axis_and_rejects_bad_bounds():
    np.testing.assert_allclose(BOX.clip([1.0, -1.0, 0.3]), [0.7, -0.3, 0.3])
    assert BOX.contains([0.5, 0.0, 0.3]) and not BOX.contains([0.5, 0.0, 0.7])
    with pytest.raises(ValueError, match="below"):
        Workspace((0.5, 0.0, 0.0), (0.4, 1.0, 1.0))
    with pytest.raises(ValueError, match="finite"):
        Workspace((0.0, 0.0, math.nan), (1.0, 1.0, 1.0))


def test_a_far_target_moves_one_step_along_the_way():
    pos, quat = limit_step([0.5, 0.0, 0.3], DOWN, [0.5, 0.2, 0.3], DOWN, 0.03, 0.2)
    np.testing.assert_allclose(pos, [0.5, 0.03, 0.3])
    np.testing.assert_allclose(quat, DOWN)


def test_a_near_target_is_left_alone():
    pos, _ = limit_step([0.5, 0.0, 0.3], DOWN, [0.51, 0.0, 0.3], DOWN, 0.03, 0.2)
    np.testing.assert_allclose(pos, [0.51, 0.0, 0.3])


def test_a_large_rotation_is_cut_to_the_step_limit():
    turned = np.array([0.0, math.cos(0.5), math.sin(0.5), 0.0])  # 1 rad about z from DOWN
    _, quat = limit_step([0.5, 0.0, 0.3], DOWN, [0.5, 0.0, 0.3], turned, 0.03, 0.2)
    assert quat_angle(DOWN, quat) == pytest.approx(0.2, abs=1e-6)
    assert quat_angle(quat, turned) == pytest.approx(0.8, abs=1e-6)


def test_slerp_takes_the_short_way_for_opposite_signs():
    assert quat_angle(slerp(DOWN, -DOWN, 0.5), DOWN) == pytest.approx(0.0, abs=1e-6)


unit = st.floats(-1.0, 1.0)


@settings(max_examples=200, deadline=None)
@given(
    st.tuples(st.floats(0.3, 0.7), st.floats(-0.3, 0.3), st.floats(0.05, 0.6)),
    st.tuples(st.floats(-5, 5), st.floats(-5, 5), st.floats(-5, 5)),
    st.tuples(unit, unit, unit, unit).filter(lambda q: np.linalg.norm(q) > 0.1),
)
def test_safe_targets_stay_in_the_box_and_within_one_step(current, target, quat):
    pos, out_quat = safe_target(current, DOWN, target, quat, BOX, 0.03, 0.2)
    assert BOX.contains(pos, tolerance=1e-9)
    assert np.linalg.norm(pos - np.array(current)) <= 0.03 + 1e-9
    assert quat_angle(DOWN, out_quat) <= 0.2 + 1e-6
    assert np.linalg.norm(out_quat) == pytest.approx(1.0)


def test_the_published_twist_is_the_finite_difference_of_two_poses():
    def reading(stamp, pos, quat):
        zeros = np.zeros(7)
        return ArmState(
            stamp,
            zeros,
            zeros,
            zeros,
            np.array(pos, float),
            np.array(quat, float),
            np.zeros(6),
            np.zeros(6),
            None,
        )

    turned = np.array([math.cos(0.005), 0.0, 0.0, math.sin(0.005)])  # 0.01 rad about z
    twist = pose_twist(
        reading(1.0, [0.5, 0.0, 0.3], [1.0, 0.0, 0.0, 0.0]),
        reading(1.01, [0.5, 0.001, 0.3], turned),
    )
    np.testing.assert_allclose(twist, [0.0, 0.1, 0.0, 0.0, 0.0, 1.0], atol=1e-9)
