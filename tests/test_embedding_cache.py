"""EmbeddingCache: features of stored frames, embedded once, re-embedded after overwrite."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.data.augment import random_shift
from robot_rl.data.embedding_cache import EmbeddingCache
from robot_rl.data.replay import ReplayBuffer

SIZE = 8
OBS_SPACE = gym.spaces.Dict(
    {
        "state": gym.spaces.Box(-np.inf, np.inf, (3,), np.float32),
        "front": gym.spaces.Box(0, 255, (SIZE, SIZE, 3), np.uint8),
        "wrist": gym.spaces.Box(0, 255, (SIZE, SIZE, 3), np.uint8),
    }
)
ACTION_SPACE = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
PROJECTION = np.random.default_rng(42).normal(size=(3, 5))


class CountingEmbed:
    """Fixed linear projection of the mean-pooled image; records how many rows it embedded."""

    def __init__(self):
        self.rows = 0
        self.calls = 0

    def __call__(self, images: np.ndarray) -> np.ndarray:
        assert images.dtype == np.uint8 and images.ndim == 4
        self.rows += len(images)
        self.calls += 1
        return reference_embed(images)


def reference_embed(images: np.ndarray) -> np.ndarray:
    return images.astype(np.float64).mean(axis=(1, 2)) @ PROJECTION / 255.0


def make_obs(rng):
    return {
        "state": rng.normal(size=3).astype(np.float32),
        "front": rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8),
        "wrist": rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8),
    }


def fill(buffer, steps, rng, episode_length=5):
    obs = make_obs(rng)
    for step in range(steps):
        nxt = make_obs(rng)
        end = step % episode_length == episode_length - 1
        buffer.add(obs, rng.uniform(-1, 1, 2), 0.0, end, False, nxt)
        obs = make_obs(rng) if end else nxt


def test_view_zero_features_equal_embedding_of_stored_frame():
    buffer = ReplayBuffer(OBS_SPACE, ACTION_SPACE, capacity=32)
    rng = np.random.default_rng(0)
    fill(buffer, 20, rng)
    embed = CountingEmbed()
    cache = EmbeddingCache(buffer, ("front", "wrist"), embed, num_views=1, dtype=np.float32)
    indices = np.arange(len(buffer))
    features = cache.gather(indices, rng)
    pixels = buffer.gather(indices)
    for key in ("front", "wrist"):
        for which in ("observations", "next_observations"):
            assert features[which][key].dtype == np.float32
            np.testing.assert_allclose(
                features[which][key], reference_embed(pixels[which][key]), rtol=1e-6, atol=1e-6
            )
    np.testing.assert_array_equal(
        features["observations"]["state"], pixels["observations"]["state"]
    )
    np.testing.assert_array_equal(features["actions"], pixels["actions"])


def test_each_frame_is_embedded_once_and_shared_frames_share_rows():
    buffer = ReplayBuffer(OBS_SPACE, ACTION_SPACE, capacity=64)
    rng = np.random.default_rng(1)
    fill(buffer, 20, rng)  # 4 episodes of 5 steps: 4 * 6 = 24 frames
    embed = CountingEmbed()
    cache = EmbeddingCache(
        buffer, ("front", "wrist"), embed, num_views=3, chunk_size=7, bucket_sizes=False
    )
    cache.sample(rng, 4)
    frames_seen = embed.rows // (2 * 3)
    assert 0 < frames_seen <= 8  # lazily: only the frames of the sampled transitions
    assert cache.refresh() == 24 - frames_seen
    assert embed.rows == 24 * 2 * 3  # frames x image keys x views
    assert cache.refresh() == 0
    assert embed.rows == 24 * 2 * 3
    # Consecutive transitions share a frame, hence the same cached feature rows.
    obs_slots, next_slots = buffer.frame_slots(np.arange(len(buffer)))
    np.testing.assert_array_equal(obs_slots[1:5], next_slots[:4])
    one_view = EmbeddingCache(buffer, ("front",), CountingEmbed(), num_views=1)
    batch = one_view.gather(np.arange(5), rng)
    np.testing.assert_array_equal(
        batch["observations"]["front"][1:], batch["next_observations"]["front"][:-1]
    )


def test_views_hold_random_shifts_of_the_frame():
    buffer = ReplayBuffer(OBS_SPACE, ACTION_SPACE, capacity=8)
    rng = np.random.default_rng(2)
    fill(buffer, 4, rng)
    cache = EmbeddingCache(
        buffer, ("front",), reference_embed, num_views=4, pad=2, dtype=np.float64
    )
    cache.refresh()
    slots = buffer.frame_slots([0])[0]
    stored = cache._features["front"][slots[0]]
    np.testing.assert_allclose(stored[0], reference_embed(buffer.frames("front", slots))[0])
    assert not np.allclose(stored[1], stored[0]) or not np.allclose(stored[2], stored[0])
    # Sampled features are always one of the frame's views.
    batch = cache.gather(np.zeros(50, int), rng)
    for row in batch["observations"]["front"]:
        assert np.any(np.all(np.isclose(row, stored), axis=1))


def test_overwritten_slots_are_re_embedded():
    buffer = ReplayBuffer(OBS_SPACE, ACTION_SPACE, capacity=6, frame_capacity=8)
    rng = np.random.default_rng(3)
    fill(buffer, 6, rng)
    embed = CountingEmbed()
    cache = EmbeddingCache(
        buffer, ("front",), embed, num_views=1, dtype=np.float32, bucket_sizes=False
    )
    first = cache.refresh()
    fill(buffer, 6, rng)  # wraps the frame ring
    second = cache.refresh()
    assert second > 0 and embed.rows == first + second
    indices = np.arange(len(buffer))
    features = cache.gather(indices, rng)
    pixels = buffer.gather(indices)
    np.testing.assert_allclose(
        features["observations"]["front"],
        reference_embed(pixels["observations"]["front"]),
        rtol=1e-6,
        atol=1e-6,
    )


def test_bucketed_calls_use_few_shapes_and_same_features():
    buffer = ReplayBuffer(OBS_SPACE, ACTION_SPACE, capacity=64)
    rng = np.random.default_rng(4)
    shapes = set()

    def embed(images):
        shapes.add(len(images))
        return reference_embed(images)

    cache = EmbeddingCache(buffer, ("front",), embed, num_views=1, chunk_size=16, dtype=np.float32)
    for _ in range(6):
        fill(buffer, int(rng.integers(1, 9)), rng)
        cache.refresh()
    assert shapes <= {1, 2, 4, 8, 16}
    indices = np.arange(len(buffer))
    np.testing.assert_allclose(
        cache.gather(indices, rng)["next_observations"]["front"],
        reference_embed(buffer.gather(indices)["next_observations"]["front"]),
        rtol=1e-6,
        atol=1e-6,
    )


def test_random_shift_keeps_shape_and_content():
    rng = np.random.default_rng(5)
    images = rng.integers(0, 256, (6, 10, 12, 3), dtype=np.uint8)
    shifted = random_shift(rng, images, 3)
    assert shifted.shape == images.shape and shifted.dtype == np.uint8
    np.testing.assert_array_equal(random_shift(rng, images, 0), images)
    padded = np.pad(images, ((0, 0), (3, 3), (3, 3), (0, 0)), mode="edge")
    for image, out in zip(padded, shifted, strict=True):
        assert any(
            np.array_equal(image[dy : dy + 10, dx : dx + 12], out)
            for dy in range(7)
            for dx in range(7)
        )


def test_unknown_image_key_is_refused():
    buffer = ReplayBuffer(OBS_SPACE, ACTION_SPACE, capacity=4)
    with pytest.raises(ValueError, match="side"):
        EmbeddingCache(buffer, ("side",), reference_embed)


def test_fine_feature_maps_get_a_fresh_shift_at_every_gather():
    """DrQ on cached features: a map of >= 8 cells moves by up to ``feature_shift`` cells per
    sample (edge repeated), so a frame's few cached views are not all the critic ever sees."""
    from robot_rl.data.embedding_cache import MIN_SHIFT_CELLS

    def map_embed(images):  # a fine 8x8 map whose cells hold their own coordinates
        count = len(images)
        grid = np.stack(np.meshgrid(np.arange(8), np.arange(8), indexing="ij"), -1)
        return np.broadcast_to(grid, (count, 8, 8, 2)).astype(np.float32)

    rng = np.random.default_rng(0)
    buffer = ReplayBuffer(OBS_SPACE, ACTION_SPACE, capacity=20)
    fill(buffer, 10, rng)
    cache = EmbeddingCache(
        buffer, ("front",), map_embed, num_views=1, feature_shift=1, dtype=np.float32
    )
    assert cache.shift_cells((MIN_SHIFT_CELLS, MIN_SHIFT_CELLS, 2)) == 1
    assert cache.shift_cells((4, 4, 512)) == 0 and cache.shift_cells((256,)) == 0
    batch = cache.gather(np.arange(10).repeat(20), np.random.default_rng(1))
    maps = batch["observations"]["front"]
    offsets = {(int(m[4, 4, 0]) - 4, int(m[4, 4, 1]) - 4) for m in maps}
    assert offsets == {(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)}
    for m in maps:  # a shifted map, edge repeated: interior steps stay one cell apart
        assert np.all(np.diff(m[1:-1, :, 0], axis=0) == 1)
        assert m[0, 0, 0] in (0, 1) and m[-1, -1, 0] in (6, 7)
    unshifted = EmbeddingCache(buffer, ("front",), map_embed, num_views=1, dtype=np.float32)
    plain = unshifted.gather(np.arange(10), np.random.default_rng(1))["observations"]["front"]
    np.testing.assert_array_equal(plain, map_embed(np.zeros((10, 1, 1, 3), np.uint8)))
