"""Pixel smoke tests with tiny images: conv + DrQ, frozen ResNet-10, the embedding cache."""

import jax
import numpy as np
import pytest
from agent_fixtures import action_space, pixel_space, random_batch
from skips import BF16_CONVOLUTIONS

from robot_rl.agents.config import AgentConfig
from robot_rl.agents.sac import SACAgent

TINY = AgentConfig(hidden_dims=(32, 32), num_critics=2, critic_subsample=2, bottleneck_dim=16)


def changed(a, b) -> bool:
    return any(
        not np.array_equal(x, y)
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


def test_conv_encoder_with_drq_trains_end_to_end():
    space = pixel_space(32)
    agent = SACAgent.create(0, space, action_space(3), TINY.replace(gripper=True))
    assert agent.nets.image_keys == ("front", "wrist")
    new, info = agent.update(random_batch(space, 3, 4 * 8, gripper=True), utd_ratio=4)
    assert all(np.isfinite(float(v)) for v in info.values())
    encoder_before = agent.critic.params["encoder"]
    encoder_after = new.critic.params["encoder"]
    assert changed(encoder_before["trunk_front"], encoder_after["trunk_front"])
    assert changed(encoder_before["head_wrist"], encoder_after["head_wrist"])
    obs = {k: v[0] for k, v in random_batch(space, 3, 1)["observations"].items()}
    action = new.eval_actions(obs)
    assert action.shape == (3,) and action[-1] in (-1.0, 0.0, 1.0)


@BF16_CONVOLUTIONS
def test_bf16_conv_trunk_keeps_f32_parameters_and_tracks_the_f32_update():
    """encoder_dtype='bfloat16': the convolutions' operands are bf16, everything the optimiser
    sees stays f32, and one update moves the parameters as the f32 agent's does (the same
    direction; the step differs by bf16 rounding only). Adam's first step is about the sign of
    each gradient entry, so entries near zero may flip: 0.97 here, 1.0 between two f32 runs."""
    space = pixel_space(32)
    batch = random_batch(space, 3, 8)
    agents = {
        dtype: SACAgent.create(0, space, action_space(), TINY.replace(encoder_dtype=dtype))
        for dtype in ("float32", "bfloat16")
    }
    before = agents["float32"].critic.params
    after = {dtype: agent.update(batch)[0].critic.params for dtype, agent in agents.items()}
    for leaf in jax.tree.leaves(after["bfloat16"]):
        assert leaf.dtype == np.float32 and np.isfinite(leaf).all()

    def step(params):
        pairs = zip(jax.tree.leaves(params), jax.tree.leaves(before), strict=True)
        return np.concatenate([np.ravel(a - b) for a, b in pairs])

    delta = {dtype: step(params) for dtype, params in after.items()}
    cosine = delta["float32"] @ delta["bfloat16"]
    cosine /= np.linalg.norm(delta["float32"]) * np.linalg.norm(delta["bfloat16"])
    assert cosine > 0.95


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"encoder_dtype": "float16"}, "encoder_dtype must be float32 or bfloat16"),
        ({"encoder_dtype": "bfloat16", "encoder": "resnet10"}, "not to 'resnet10'"),
        (
            {"encoder_dtype": "bfloat16", "encoder": "conv", "encoder_frozen": True},
            "not to a frozen 'conv'",
        ),
    ],
)
def test_encoder_dtype_is_checked(changes, message):
    with pytest.raises(ValueError, match=message):
        TINY.replace(**changes).validate()


def test_drq_shift_changes_the_update_and_zero_pad_does_not_augment():
    space = pixel_space(32, cameras=("front",))
    batch = random_batch(space, 2, 8)
    a = SACAgent.create(0, space, action_space(), TINY.replace(drq_pad=0)).update(batch)[0]
    b = SACAgent.create(0, space, action_space(), TINY.replace(drq_pad=4)).update(batch)[0]
    assert changed(a.critic.params, b.critic.params)


def test_frozen_resnet_trunk_is_not_trained_and_head_is():
    space = pixel_space(32, cameras=("front",))
    cfg = TINY.replace(encoder="resnet10", encoder_frozen=True, pooling="spatial_learned")
    agent = SACAgent.create(0, space, action_space(), cfg)
    # The frozen trunk is outside the trainable parameters altogether.
    assert set(agent.critic.params["encoder"]) == {"head_front"}
    new, _ = agent.update(random_batch(space, 2, 2 * 4), utd_ratio=2)
    assert not changed(agent.frozen_trunk, new.frozen_trunk)
    assert changed(agent.critic.params["encoder"], new.critic.params["encoder"])


def test_cached_features_give_the_same_update_as_pixels():
    from robot_rl.data.embedding_cache import EmbeddingCache
    from robot_rl.data.replay import ReplayBuffer

    space = pixel_space(32, cameras=("front",))
    cfg = TINY.replace(encoder="resnet10", encoder_frozen=True, pooling="avg", drq_pad=0)
    agent = SACAgent.create(0, space, action_space(), cfg)
    replay = ReplayBuffer(space, action_space(), capacity=64)
    rng = np.random.default_rng(0)
    frames = random_batch(space, 2, 21)["observations"]
    for i in range(20):
        replay.add(
            {k: v[i] for k, v in frames.items()},
            rng.uniform(-1, 1, 2).astype(np.float32),
            float(rng.normal()),
            False,
            i % 7 == 6,
            {k: v[i + 1] for k, v in frames.items()},
        )
    cache = EmbeddingCache(
        replay, agent.nets.image_keys, agent.embed_frames, num_views=1, dtype=np.float32
    )
    indices = np.arange(len(replay))[:16]
    pixels = replay.gather(indices)
    features = cache.gather(indices, rng)
    assert features["observations"]["front"].dtype == np.float32
    assert features["observations"]["front"].ndim == 4  # [N, h, w, c] feature maps
    from_pixels, _ = agent.update(pixels, utd_ratio=2)
    from_cache, _ = agent.update(features, utd_ratio=2)
    for x, y in zip(
        jax.tree.leaves(from_pixels.critic.params),
        jax.tree.leaves(from_cache.critic.params),
        strict=True,
    ):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-5)


def test_images_too_small_for_the_conv_trunk_are_refused_clearly():
    with pytest.raises(ValueError, match="too small for the conv trunk"):
        SACAgent.create(0, pixel_space(16), action_space(), TINY)


def test_training_samples_a_frozen_trunk_through_the_embedding_cache():
    from robot_rl.data.embedding_cache import EmbeddingCache
    from robot_rl.data.replay import ReplayBuffer
    from robot_rl.runtime.learning_core import make_sampler

    space = pixel_space(32, cameras=("front",))
    cfg = TINY.replace(encoder="resnet10", encoder_frozen=True, pooling="avg")
    agent = SACAgent.create(0, space, action_space(), cfg)
    replay = ReplayBuffer(space, action_space(), capacity=32)
    demos = ReplayBuffer(space, action_space(), capacity=32)
    batch = random_batch(space, 2, 8)
    for i in range(8):
        obs = {k: v[i] for k, v in batch["observations"].items()}
        nxt = {k: v[i] for k, v in batch["next_observations"].items()}
        replay.add(obs, batch["actions"][i], 0.0, False, False, nxt)
    sampler = make_sampler(agent, replay, demos, 0.5)
    assert isinstance(sampler.online, EmbeddingCache)
    sample = sampler.sample(np.random.default_rng(0), 4)
    assert sample["observations"]["front"].dtype == np.float32  # features, not pixels
    agent.update(sample)
    conv = SACAgent.create(0, space, action_space(), TINY)
    assert not isinstance(make_sampler(conv, replay, demos, 0.5).online, EmbeddingCache)
