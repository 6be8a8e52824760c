"""The camera drivers' pure image pipeline: crop and resize, intrinsics that follow the pixels,
the device-clock mapping and the stale-frame gate (no ROS, no device)."""

import numpy as np
import pytest

from robot_rl.drivers.cameras.image_pipeline import (
    DeviceClock,
    FrameGeometry,
    FreshnessGate,
    Intrinsics,
    monotonic_to_host,
)


def _blocks(width=640, height=480, block=4):
    """RGB image constant over block x block tiles: R = column tile, G = row tile."""
    image = np.zeros((height, width, 3), np.uint8)
    image[..., 0] = (np.arange(width) // block)[None, :] % 256
    image[..., 1] = (np.arange(height) // block)[:, None] % 256
    image[..., 2] = 7
    return image


def test_zero_crop_and_resize_keep_the_frame():
    geometry = FrameGeometry.build((640, 480))
    assert geometry.crop == (0, 0, 640, 480) and geometry.size == (640, 480)
    assert geometry.is_identity
    image = _blocks()
    assert np.array_equal(geometry.apply(image), image)


def test_one_zero_in_resize_keeps_the_aspect_ratio():
    assert FrameGeometry.build((640, 480), resize=(128, 0)).size == (128, 96)
    assert FrameGeometry.build((640, 480), (80, 0, 480, 480), (0, 128)).size == (128, 128)


@pytest.mark.parametrize(
    "crop", [(600, 0, 100, 100), (0, 0, 640, 481), (-1, 0, 10, 10), (0, 0, 0, 10)]
)
def test_a_crop_outside_the_frame_is_refused_with_the_frame_size(crop):
    with pytest.raises(ValueError, match=r"does not fit in the 640x480 frame"):
        FrameGeometry.build((640, 480), crop)


def test_crop_then_area_resize_gives_the_block_averages():
    geometry = FrameGeometry.build((640, 480), (80, 0, 480, 480), (120, 120))
    out = geometry.apply(_blocks())
    assert out.shape == (120, 120, 3) and out.dtype == np.uint8
    rows, cols = np.mgrid[0:120, 0:120]
    assert np.array_equal(out[..., 0], 20 + cols)  # the crop starts at tile column 80 / 4
    assert np.array_equal(out[..., 1], rows)
    assert np.all(out[..., 2] == 7)


def test_depth_is_resampled_without_inventing_values():
    depth = np.where(np.arange(640)[None, :] < 321, 500, 2000).astype(np.uint16)
    depth = np.repeat(depth, 480, axis=0)
    out = FrameGeometry.build((640, 480), (0, 0, 640, 480), (100, 75)).apply(depth, True)
    assert out.dtype == np.uint16 and set(np.unique(out)) == {500, 2000}


def test_intrinsics_follow_the_crop_and_resize():
    source = Intrinsics(
        640, 480, 600.0, 610.0, 318.2, 241.7, "plumb_bob", (0.1, -0.05, 0.001, 0.002, 0.01)
    )
    geometry = FrameGeometry.build((640, 480), (80, 10, 480, 440), (120, 110))
    out = geometry.adjust(source)
    assert (out.width, out.height) == (120, 110)
    assert out.fx == pytest.approx(150.0) and out.fy == pytest.approx(152.5)
    assert out.coefficients == source.coefficients  # distortion is in normalised coordinates
    # any 3-D point projects onto the same content before and after
    rng = np.random.default_rng(0)
    points = rng.uniform([-0.3, -0.3, 0.5], [0.3, 0.3, 2.0], (50, 3))
    before = (source.matrix() @ points.T).T
    before = before[:, :2] / before[:, 2:]
    after = (out.matrix() @ points.T).T
    after = after[:, :2] / after[:, 2:]
    expected = (before - [80, 10] + 0.5) * [120 / 480, 110 / 440] - 0.5
    assert np.allclose(after, expected)


def test_a_block_lands_where_the_adjusted_intrinsics_put_it():
    """The resize samples about pixel centres as ``adjust`` assumes: a bright 4x4 block at
    source columns 200..203 becomes output column (200 - 80) / 4 = 30."""
    image = np.zeros((480, 640), np.uint8)
    image[100:104, 200:204] = 255
    geometry = FrameGeometry.build((640, 480), (80, 0, 480, 480), (120, 120))
    out = geometry.apply(image)
    assert np.argwhere(out == 255).tolist() == [[25, 30]]
    centre = Intrinsics(640, 480, 500.0, 500.0, 201.5, 101.5)  # principal point at the block
    adjusted = geometry.adjust(centre)
    assert (adjusted.cx, adjusted.cy) == pytest.approx((30.0, 25.0))


def test_ideal_intrinsics_from_the_field_of_view():
    intrinsics = Intrinsics.from_fov(640, 480, 90.0)
    assert intrinsics.fy == pytest.approx(240.0) and intrinsics.fx == intrinsics.fy
    assert (intrinsics.cx, intrinsics.cy) == (319.5, 239.5)
    with pytest.raises(ValueError, match="field of view"):
        Intrinsics.from_fov(640, 480, 180.0)


def test_device_clock_takes_the_smallest_delay_and_never_stamps_after_arrival():
    clock = DeviceClock(drift=0.0)
    # device time 10.0 s arrives at host 1000.050 (50 ms transfer), then a faster transfer
    assert clock.to_host(10.0, 1000.050) == pytest.approx(1000.050)
    assert clock.to_host(10.1, 1000.110) == pytest.approx(1000.110)
    assert clock.to_host(10.2, 1000.215) == pytest.approx(1000.210)  # the 10 ms path counts
    assert clock.to_host(10.3, 1000.400) <= 1000.400
    clock.reset()
    assert clock.to_host(0.5, 2000.0) == pytest.approx(2000.0)


def test_device_clock_follows_drift_and_a_restarted_device_clock():
    clock = DeviceClock(drift=1e-3)
    clock.to_host(0.0, 100.0)
    # the device clock runs slow: arrival - device grows by 0.5 ms per second
    stamps = [clock.to_host(t, 100.0 + t * 1.0005) for t in np.arange(1.0, 200.0)]
    assert stamps[-1] == pytest.approx(100.0 + 199.0 * 1.0005, abs=1e-6)
    assert clock.to_host(0.0, 500.0) == pytest.approx(500.0)  # clock restarted: new offset


def test_freshness_gate_refuses_repeats_old_frames_and_missing_stamps():
    gate = FreshnessGate(max_age=0.5)
    assert gate.refuse(100.0, now=100.01) is None
    assert "not newer" in gate.refuse(100.0, now=100.02)
    assert "not newer" in gate.refuse(99.9, now=100.02)
    assert "old" in gate.refuse(100.1, now=101.0)
    assert "no valid stamp" in gate.refuse(0.0, now=101.0)
    assert gate.refuse(100.9, now=101.0) is None
    assert gate.dropped == 4
    gate.reset()
    assert gate.refuse(50.0, now=50.1) is None  # a new stream starts afresh
    with pytest.raises(ValueError):
        FreshnessGate(0.0)


def test_monotonic_stamps_move_onto_the_wall_clock():
    assert monotonic_to_host(99.5, mono_now=100.0, wall_now=1e9) == pytest.approx(1e9 - 0.5)
    assert monotonic_to_host(0.0, 100.0, 1e9) is None  # the backend gave no stamp
    assert monotonic_to_host(150.0, 100.0, 1e9) is None  # from the future
    assert monotonic_to_host(10.0, 100.0, 1e9) is None  # too old to be a capture time
