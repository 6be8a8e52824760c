"""The SO-101's kinematics (``drivers/arms/so101_kinematics``): the forward chain against
MuJoCo's own forward kinematics of the same chain, and the inverse kinematics back to it."""

from __future__ import annotations

import numpy as np
import pytest

from robot_rl.drivers.arms import so101_kinematics as kin


def _mjcf() -> str:
    """The chain as MJCF bodies (URDF's rpy becomes MuJoCo's ``euler`` with ``eulerseq='XYZ'``:
    fixed-axis roll, pitch, yaw)."""
    words = lambda values: " ".join(map(str, values))
    body = f'<site name="tcp" pos="{words(kin.TCP[0])}" euler="{words(kin.TCP[1])}"/>'
    chain = list(zip(kin.JOINTS, kin.ORIGINS, kin.LIMITS, strict=True))
    for name, (xyz, rpy), (low, high) in reversed(chain):
        body = (
            f'<body name="{name}" pos="{words(xyz)}" euler="{words(rpy)}">'
            f'<joint name="{name}" axis="0 0 1" range="{low} {high}"/>'
            f'<geom type="sphere" size="0.01" mass="0.1"/>{body}</body>'
        )
    return (
        '<mujoco><compiler angle="radian" eulerseq="XYZ"/><worldbody>'
        f'<body euler="0 0 {kin.BASE_YAW}">{body}</body></worldbody></mujoco>'
    )


def test_forward_kinematics_agrees_with_mujoco():
    mujoco = pytest.importorskip("mujoco")
    model = mujoco.MjModel.from_xml_string(_mjcf())
    data = mujoco.MjData(model)
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.uniform(kin.LIMITS[:, 0], kin.LIMITS[:, 1])
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        tcp = kin.forward(q)
        site = model.site("tcp").id
        np.testing.assert_allclose(tcp[:3, 3], data.site_xpos[site], atol=1e-9)
        gripperframe = data.site_xmat[site].reshape(3, 3)
        np.testing.assert_allclose(tcp[:3, :3], gripperframe @ kin.TOOL_AXES, atol=1e-9)


def test_the_tool_frame_is_the_contracts_jaws_down_is_the_franka_s_down():
    """With the jaws pointing down, the TCP's axes are those of ``down_quat``: a task's pose
    command means the same to the SO-101 as to the Franka."""
    from robot_rl.drivers.arms.so101_link import pose_matrix
    from robot_rl.envs.arm_geometry import down_quat

    down = pose_matrix([0.2, 0.0, 0.03], down_quat(0.0))
    solution = kin.inverse(down, np.array([0.0, 0.0, 0.6, 0.9, 0.0]))
    assert solution.position_error < 1e-3 and solution.orientation_error < 1e-2
    frames, tcp = kin.joint_frames(solution.q)
    jaws = tcp[:3, 3] - frames[-1][:3, 3]  # from the wrist's joint to the TCP
    assert jaws[2] / np.linalg.norm(jaws) < -0.95  # the jaws point down


def test_inverse_kinematics_reaches_reachable_poses_within_the_limits():
    rng = np.random.default_rng(1)
    for _ in range(50):
        q = rng.uniform(0.8 * kin.LIMITS[:, 0], 0.8 * kin.LIMITS[:, 1])
        solution = kin.inverse(kin.forward(q), q + rng.normal(0.0, 0.15, 5))
        assert solution.position_error < 5e-4 and solution.orientation_error < 5e-3
        assert np.all(solution.q >= kin.LIMITS[:, 0]) and np.all(solution.q <= kin.LIMITS[:, 1])


def test_an_unreachable_target_ends_at_the_limits_and_says_how_far():
    far = kin.forward(np.zeros(5))
    far[:3, 3] += [1.0, 0.0, 0.0]  # a metre beyond the reach
    solution = kin.inverse(far, np.zeros(5))
    assert solution.position_error > 0.5
    assert np.all(solution.q >= kin.LIMITS[:, 0]) and np.all(solution.q <= kin.LIMITS[:, 1])


def test_the_jaw_reads_as_the_contracts_closed_fraction():
    low, opened = kin.GRIPPER_LIMITS[0], kin.GRIPPER_OPEN
    assert kin.closed_fraction(opened) == 0.0 and kin.closed_fraction(low) == 1.0
    assert kin.closed_fraction((low + opened) / 2) == pytest.approx(0.5)
    assert kin.closed_fraction(opened + 0.5) == 0.0  # opened further by hand: clipped
    assert kin.closed_fraction(0.5, open_angle=1.0) == pytest.approx(0.5 / (1.0 - low))
