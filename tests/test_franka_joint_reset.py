"""The Franka node's rule for starting a reset with a joint move (null-space drift)."""

import numpy as np
import pytest

from robot_rl.drivers.arms.franka_joint_reset import JointResetPolicy

AT_POSE = np.array([0.0, 0.3, 0.0, -2.0, 0.0, 2.3, 0.8])


def test_the_first_reset_moves_joints_and_its_result_is_the_reference():
    policy = JointResetPolicy(drift_bound=0.3)
    assert policy.take() and not policy.take()  # the first reset only
    assert policy.at_reset_pose(AT_POSE, after_joint_move=True) is None
    np.testing.assert_array_equal(policy.reference, AT_POSE)


def test_drift_at_the_same_pose_past_the_bound_calls_for_a_joint_move():
    policy = JointResetPolicy(drift_bound=0.3)
    policy.take()
    policy.at_reset_pose(AT_POSE, after_joint_move=True)
    assert policy.at_reset_pose(AT_POSE + 0.2, after_joint_move=False) is None
    # the elbow swung round: joint 1 and joint 3 turned opposite ways, the TCP stayed
    drifted = AT_POSE + np.array([1.5, 0, -1.5, 0, 0, 0, 0])
    assert policy.at_reset_pose(drifted, after_joint_move=False) == pytest.approx(1.5)
    # after the joint move the pose's joints are the reference again
    assert policy.at_reset_pose(AT_POSE + 0.01, after_joint_move=True) is None
    assert policy.at_reset_pose(AT_POSE, after_joint_move=False) is None


def test_a_failed_reset_makes_the_next_one_start_with_joints_and_zero_disables():
    policy = JointResetPolicy(drift_bound=0.3)
    policy.take()
    policy.failed()
    assert policy.take()
    never = JointResetPolicy(drift_bound=0.0)
    assert not never.take()
    never.failed()
    assert not never.take()
    never.at_reset_pose(AT_POSE, after_joint_move=False)
    assert never.at_reset_pose(AT_POSE + 2.0, after_joint_move=False) is None
    with pytest.raises(ValueError, match="drift_bound"):
        JointResetPolicy(drift_bound=-1.0)
