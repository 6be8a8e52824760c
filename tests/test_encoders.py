"""Image trunks, pooling heads and the trunk registry."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from robot_rl.agents.encoders import (
    POOLINGS,
    TRUNKS,
    ConvTrunk,
    EncoderHead,
    ResNet10Trunk,
    SpatialLearnedEmbeddings,
    make_trunk,
)


def _images(size: int, batch: int = 2) -> np.ndarray:
    return np.random.default_rng(size).integers(0, 256, (batch, size, size, 3), dtype=np.uint8)


@pytest.mark.parametrize(("size", "expected"), [(64, (2, 11, 11, 32)), (128, (2, 27, 27, 32))])
def test_conv_trunk_shape(size, expected):
    trunk = ConvTrunk()
    images = _images(size)
    variables = trunk.init(jax.random.key(0), images)
    features = trunk.apply(variables, images)
    assert features.shape == expected
    assert features.dtype == np.float32


@pytest.mark.parametrize(("size", "expected"), [(64, (2, 2, 2, 32)), (128, (2, 6, 6, 32))])
def test_lerobot_conv_trunk_shape(size, expected):
    trunk = make_trunk("lerobot_conv")
    assert trunk.kernel_sizes == (7, 5, 3, 3) and trunk.strides == (2, 2, 2, 2)
    images = _images(size)
    variables = trunk.init(jax.random.key(0), images)
    features = trunk.apply(variables, images)
    assert features.shape == expected
    assert features.dtype == np.float32


@pytest.mark.parametrize(("size", "expected"), [(64, (2, 2, 2, 512)), (128, (2, 4, 4, 512))])
def test_resnet10_trunk_shape_and_variables(size, expected):
    trunk = ResNet10Trunk()
    images = _images(size)
    variables = trunk.init(jax.random.key(0), images)
    assert set(variables) == {"params", "batch_stats"}
    assert set(variables["params"]) == {
        "conv1",
        "bn1",
        "layer1_0",
        "layer2_0",
        "layer3_0",
        "layer4_0",
    }
    assert "downsample_conv" not in variables["params"]["layer1_0"]
    assert variables["params"]["layer2_0"]["downsample_conv"]["kernel"].shape == (1, 1, 64, 128)
    features = trunk.apply(variables, images)  # no mutable batch_stats: running averages only
    assert features.shape == expected
    assert features.dtype == np.float32


def test_spatial_learned_embeddings_match_numpy():
    features = np.random.default_rng(0).normal(size=(3, 4, 5, 6)).astype(np.float32)
    pooling = SpatialLearnedEmbeddings(num_features=2)
    variables = pooling.init(jax.random.key(0), features)
    kernel = np.asarray(variables["params"]["kernel"])
    assert kernel.shape == (4, 5, 6, 2)
    expected = np.einsum("bhwc,hwcf->bcf", features, kernel).reshape(3, 12)
    np.testing.assert_allclose(pooling.apply(variables, features), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pooling", POOLINGS)
def test_encoder_head_is_bounded_with_the_bottleneck_dim(pooling):
    features = np.random.default_rng(1).normal(size=(2, 4, 4, 8)).astype(np.float32) * 10
    head = EncoderHead(pooling=pooling, num_spatial_features=2, bottleneck_dim=16, dropout=0.1)
    variables = head.init(jax.random.key(0), features)
    out = head.apply(variables, features)
    assert out.shape == (2, 16)
    assert np.all(np.abs(np.asarray(out)) < 1.0)
    trained = head.apply(variables, features, train=True, rngs={"dropout": jax.random.key(1)})
    assert trained.shape == (2, 16)


def test_encoder_head_rejects_unknown_pooling():
    with pytest.raises(ValueError, match="max"):
        EncoderHead(pooling="max").init(jax.random.key(0), np.zeros((1, 2, 2, 3), np.float32))


def test_make_trunk():
    assert isinstance(make_trunk("conv", num_filters=8), ConvTrunk)
    assert make_trunk("conv", num_filters=8).num_filters == 8
    assert isinstance(make_trunk("resnet10", normalize_imagenet=False), ResNet10Trunk)
    with pytest.raises(ValueError, match="conv, lerobot_conv, resnet10"):
        make_trunk("resnet50")
    assert set(TRUNKS) == {"conv", "lerobot_conv", "resnet10", "serl_resnet10"}


def test_importing_encoders_does_not_import_torch():
    code = (
        "import sys\n"
        "import robot_rl.agents.encoders\n"
        "import robot_rl.agents.encoders.torch_import\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("size", "stride", "padding"), [(2, 1, ((1, 1), (1, 1))), (3, 2, "SAME"), (8, 1, "VALID")]
)
def test_small_map_conv_matches_flax_conv(size, stride, padding):
    import flax.linen as nn

    from robot_rl.agents.encoders.cpu_conv import Conv

    x = np.random.default_rng(0).normal(size=(2, size, size, 5)).astype(np.float32)
    ours = Conv(7, (3, 3), (stride, stride), padding)
    flax_conv = nn.Conv(7, (3, 3), (stride, stride), padding, use_bias=False)
    variables = ours.init(jax.random.key(0), x)
    assert jax.tree.map(np.shape, variables) == jax.tree.map(
        np.shape, flax_conv.init(jax.random.key(0), x)
    )
    np.testing.assert_allclose(
        ours.apply(variables, x), flax_conv.apply(variables, x), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize(
    ("size", "kernel", "stride"), [(29, 5, 2), (64, 7, 2), (13, 3, 2), (10, 3, 3), (9, 1, 2)]
)
def test_strided_conv_matches_flax_conv_and_its_gradients(size, kernel, stride):
    """The sub-pixel input gradient (odd and even maps, a stride above 2, a kernel smaller than
    the stride) and everything else equal flax's ``nn.Conv`` with its bias."""
    import flax.linen as nn

    from robot_rl.agents.encoders.cpu_conv import Conv

    x = np.random.default_rng(1).normal(size=(3, size, size, 4)).astype(np.float32)
    args = (6, (kernel, kernel), (stride, stride), "VALID")
    ours, flax_conv = Conv(*args, use_bias=True), nn.Conv(*args)
    variables = flax_conv.init(jax.random.key(0), x)
    assert jax.tree.map(np.shape, ours.init(jax.random.key(0), x)) == jax.tree.map(
        np.shape, variables
    )

    def loss(module):
        return lambda v, x: (jnp.tanh(module.apply(v, x)) ** 2).sum()

    for argnums in (0, 1):
        got = jax.grad(loss(ours), argnums)(variables, x)
        want = jax.grad(loss(flax_conv), argnums)(variables, x)
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)
