"""Round trips of every message conversion in robot_rl.ros.convert (no DDS traffic)."""

import array
import math

import numpy as np
import pytest

pytest.importorskip("rclpy")

from robot_rl.ros import convert

RNG = np.random.default_rng(0)


def _image(encoding, shape):
    dtype, _ = convert.IMAGE_ENCODINGS[encoding]
    if dtype == np.float32:
        return RNG.normal(size=shape).astype(np.float32)
    return RNG.integers(0, np.iinfo(dtype).max, shape, dtype=dtype)


@pytest.mark.parametrize(
    ("encoding", "shape"),
    [
        ("rgb8", (5, 7, 3)),
        ("bgr8", (4, 6, 3)),
        ("mono8", (3, 5)),
        ("16UC1", (4, 3)),
        ("32FC1", (2, 9)),
    ],
)
def test_image_round_trip(encoding, shape):
    image = _image(encoding, shape)
    msg = convert.array_to_image(image, encoding, 12.5, "cam")
    back = convert.image_to_array(msg)
    np.testing.assert_array_equal(back, image)
    assert back.dtype == image.dtype
    assert msg.header.frame_id == "cam"
    assert convert.from_stamp(msg.header.stamp) == 12.5
    assert not np.shares_memory(back, np.frombuffer(msg.data, np.uint8))


@pytest.mark.parametrize(
    ("encoding", "shape"),
    [("rgb8", (3, 5, 3)), ("16UC1", (4, 3)), ("32FC1", (2, 3)), ("mono8", (3, 3))],
)
def test_image_with_row_padding_and_big_endian(encoding, shape):
    image = _image(encoding, shape)
    dtype, _ = convert.IMAGE_ENCODINGS[encoding]
    big = image.astype(dtype.newbyteorder(">"))
    row_bytes = big[0].nbytes
    padding = 5
    rows = [big[r].tobytes() + b"\xee" * padding for r in range(shape[0])]
    msg = convert.array_to_image(image, encoding, 0.0)
    msg.is_bigendian = 1
    msg.step = row_bytes + padding
    msg.data = array.array("B", b"".join(rows))
    np.testing.assert_array_equal(convert.image_to_array(msg), image)


def test_bgr_and_mono_to_rgb():
    rgb = _image("rgb8", (4, 4, 3))
    bgr_msg = convert.array_to_image(np.ascontiguousarray(rgb[:, :, ::-1]), "bgr8", 0.0)
    np.testing.assert_array_equal(convert.image_to_rgb(bgr_msg), rgb)
    mono = _image("mono8", (4, 4))
    out = convert.image_to_rgb(convert.array_to_image(mono, "mono8", 0.0))
    assert out.shape == (4, 4, 3)
    np.testing.assert_array_equal(out[:, :, 1], mono)


def test_image_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="unsupported encoding"):
        convert.array_to_image(np.zeros((2, 2, 3), np.uint8), "yuv422", 0.0)
    with pytest.raises(ValueError, match="dtype"):
        convert.array_to_image(np.zeros((2, 2, 3), np.float32), "rgb8", 0.0)
    msg = convert.array_to_image(np.zeros((2, 2, 3), np.uint8), "rgb8", 0.0)
    msg.data = array.array("B", b"\x00" * 5)
    with pytest.raises(ValueError, match="bytes"):
        convert.image_to_array(msg)


@pytest.mark.parametrize("seconds", [0.0, 1.5, 123456.000000001, 1e-9, 99.999999999])
def test_stamp_round_trip(seconds):
    stamp = convert.to_stamp(seconds)
    assert 0 <= stamp.nanosec < 1_000_000_000
    assert abs(convert.from_stamp(stamp) - seconds) < 1e-9


def test_stamp_refuses_negative_and_nan():
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError):
            convert.to_stamp(bad)


def test_pose_round_trip_reorders_quaternion():
    pos = np.array([0.1, -0.2, 0.3])
    quat = np.array([0.5, 0.5, -0.5, 0.5])  # w x y z
    msg = convert.pose_to_msg(pos, quat, 3.0, "base")
    assert msg.pose.orientation.w == 0.5 and msg.pose.orientation.y == -0.5
    back_pos, back_quat = convert.msg_to_pose(msg)
    np.testing.assert_array_equal(back_pos, pos)
    np.testing.assert_array_equal(back_quat, quat)
    with pytest.raises(ValueError, match="finite"):
        convert.pose_to_msg([0, 0, np.nan], quat, 0.0)


def test_twist_and_wrench_round_trip():
    v = RNG.normal(size=6)
    np.testing.assert_array_equal(convert.twist_to_array(convert.array_to_twist(v)), v)
    msg = convert.array_to_twist_stamped(v, 2.0, "tcp")
    np.testing.assert_array_equal(convert.twist_stamped_to_array(msg), v)
    w = RNG.normal(size=6)
    msg = convert.array_to_wrench_stamped(w, 2.0, "flange")
    np.testing.assert_array_equal(convert.wrench_stamped_to_array(msg), w)
    with pytest.raises(ValueError, match="6 values"):
        convert.array_to_twist([1, 2, 3])


def test_joint_state_round_trip_and_reorder():
    names = [f"joint{i}" for i in range(1, 8)]
    pos, vel = RNG.normal(size=7), RNG.normal(size=7)
    msg = convert.joint_state_msg(names, pos, vel, stamp=4.0)
    p, v, e = convert.joint_state_to_arrays(msg)
    np.testing.assert_array_equal(p, pos)
    np.testing.assert_array_equal(v, vel)
    assert np.all(np.isnan(e))
    p, _, _ = convert.joint_state_to_arrays(msg, names[::-1])
    np.testing.assert_array_equal(p, pos[::-1])
    with pytest.raises(KeyError, match="lacks"):
        convert.joint_state_to_arrays(msg, ["elbow"])


def test_camera_info_from_fovy():
    msg = convert.camera_info(160, 120, 45.0, 1.0, "front")
    assert (msg.width, msg.height) == (160, 120)
    assert msg.k[2] == 80 and msg.k[5] == 60 and msg.k[0] == msg.k[4]
    assert abs(convert.camera_fovy(msg) - 45.0) < 1e-9
    with pytest.raises(ValueError):
        convert.camera_info(0, 10, 45.0, 0.0)


def test_odometry_and_imu_round_trip():
    pos, quat, vel = RNG.normal(size=3), convert.yaw_to_quat(0.7), RNG.normal(size=6)
    back = convert.odometry_to_arrays(convert.odometry_msg(pos, quat, vel, 5.0))
    for a, b in zip(back, (pos, quat, vel), strict=True):
        np.testing.assert_allclose(a, b)
    assert abs(convert.quat_to_yaw(back[1]) - 0.7) < 1e-12
    gyro, accel = RNG.normal(size=3), RNG.normal(size=3)
    back = convert.imu_to_arrays(convert.imu_msg(quat, gyro, accel, 5.0))
    for a, b in zip(back, (quat, gyro, accel), strict=True):
        np.testing.assert_allclose(a, b)
