"""The oneDNN convolution extension: built here, equal to XLA's convolution and its gradients."""

import os
import platform
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from skips import BF16_CONVOLUTIONS

from robot_rl.agents.encoders import onednn_conv

X86_LINUX = sys.platform.startswith("linux") and platform.machine() == "x86_64"
pytestmark = pytest.mark.skipif(not X86_LINUX, reason="the extension is built for x86-64 Linux")


def _lax_conv(x, kernel, strides, pads):
    return jax.lax.conv_general_dilated(
        x, kernel, strides, pads, dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


def test_extension_builds_and_registers_here():
    # setup.sh installs g++ and the oneDNN wheels, so a failure here is a broken build, not a
    # machine without them.
    assert onednn_conv.unavailable_reason() is None


GEOMETRIES = [
    # (size, channels in, kernel, stride, pads): LeRobot's layers, odd maps, SAME padding,
    # a map smaller than the padded kernel, a kernel smaller than the stride
    (64, 3, 7, 2, ((0, 0), (0, 0))),
    (29, 32, 5, 2, ((0, 0), (0, 0))),
    (13, 8, 3, 1, ((1, 1), (1, 1))),
    (2, 16, 3, 1, ((1, 1), (1, 1))),
    (9, 4, 1, 2, ((0, 0), (0, 0))),
    (10, 4, 4, 3, ((2, 1), (0, 3))),
]


@pytest.mark.parametrize(("size", "channels", "kernel", "stride", "pads"), GEOMETRIES)
def test_f32_convolution_and_gradients_equal_xla(size, channels, kernel, stride, pads):
    rng = np.random.default_rng(size + kernel)
    x = jnp.asarray(rng.normal(size=(3, size, size, channels)), jnp.float32)
    w = jnp.asarray(rng.normal(size=(kernel, kernel, channels, 5)) * 0.2, jnp.float32)
    strides = (stride, stride)

    def loss(conv):
        return lambda x, w: (jnp.tanh(conv(x, w, strides, pads)) ** 2).sum()

    want = _lax_conv(x, w, strides, pads)
    got = jax.jit(onednn_conv.conv, static_argnums=(2, 3))(x, w, strides, pads)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    got_grads = jax.jit(jax.grad(loss(onednn_conv.conv), (0, 1)))(x, w)
    want_grads = jax.grad(loss(_lax_conv), (0, 1))(x, w)
    for g, want_g in zip(got_grads, want_grads, strict=True):
        np.testing.assert_allclose(g, want_g, rtol=1e-4, atol=1e-4)


@BF16_CONVOLUTIONS
def test_bf16_accumulates_in_f32():
    """bf16 operands, f32 accumulation: the result is XLA's f32 convolution of the same
    bf16-rounded operands, rounded once to bf16 (within two bf16 ulps), and the kernel's
    gradient comes back in f32."""
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(8, 29, 29, 32)), jnp.bfloat16)
    w = jnp.asarray(rng.normal(size=(5, 5, 32, 32)) * 0.05, jnp.bfloat16)
    pads = ((0, 0), (0, 0))
    got = jax.jit(onednn_conv.conv, static_argnums=(2, 3))(x, w, (2, 2), pads)
    assert got.dtype == jnp.bfloat16
    want = _lax_conv(x.astype(jnp.float32), w.astype(jnp.float32), (2, 2), pads)
    np.testing.assert_allclose(
        np.asarray(got, np.float32), want, rtol=2 * 2**-8, atol=1e-3 * float(jnp.abs(want).max())
    )

    grad = jnp.asarray(rng.normal(size=got.shape), jnp.bfloat16)
    _, vjp = jax.vjp(lambda x, w: onednn_conv.conv(x, w, (2, 2), pads), x, w)
    dx, dw = jax.jit(vjp)(grad)
    assert dx.dtype == jnp.bfloat16 and dw.dtype == jnp.bfloat16  # the kernel's own dtype
    _, want_vjp = jax.vjp(
        lambda x, w: _lax_conv(x, w, (2, 2), pads), x.astype(jnp.float32), w.astype(jnp.float32)
    )
    want_dx, want_dw = want_vjp(grad.astype(jnp.float32))
    for g, want_g in ((dx, want_dx), (dw, want_dw)):
        scale = float(jnp.abs(want_g).max())
        np.testing.assert_allclose(np.asarray(g, np.float32), want_g, atol=1e-2 * scale)


def test_conv_trunk_is_the_same_function_on_onednn_and_on_xla(tmp_path):
    """LeRobot's trunk and its parameter gradient with the extension and, in a process where it
    cannot be built (no compiler), with XLA's convolutions: the same numbers, and the fallback
    says why in one line."""
    script = (
        "import sys, numpy as np, jax, jax.numpy as jnp\n"
        "from robot_rl.agents.encoders import LeRobotConvTrunk, onednn_conv\n"
        "images = np.random.default_rng(0).integers(0, 256, (4, 64, 64, 3), dtype=np.uint8)\n"
        "trunk = LeRobotConvTrunk()\n"
        "v = trunk.init(jax.random.key(0), images)\n"
        "g = jax.jit(jax.grad(lambda v: (trunk.apply(v, images) ** 2).sum()))(v)\n"
        "np.savez(sys.argv[1], out=trunk.apply(v, images), "
        "**{str(i): x for i, x in enumerate(jax.tree.leaves(g))})\n"
        "print('available', onednn_conv.available())\n"
    )
    outputs = {}
    for name, env in (
        ("onednn", {}),
        ("xla", {"CXX": "/nonexistent/g++", "ROBOT_RL_CACHE": str(tmp_path / "cache")}),
    ):
        result = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / f"{name}.npz")],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert f"available {name == 'onednn'}" in result.stdout
        outputs[name] = np.load(tmp_path / f"{name}.npz")
    assert "oneDNN convolutions unavailable, XLA's are used: " in result.stderr
    for key in outputs["xla"].files:
        np.testing.assert_allclose(
            outputs["onednn"][key], outputs["xla"][key], rtol=2e-4, atol=2e-4
        )


def test_xla_convolutions_lets_xla_count_the_flops():
    """Inside ``xla_convolutions()`` a trunk traces to XLA's own convolutions, whose FLOPs XLA's
    cost analysis counts; with the extension it counts none of them."""
    from robot_rl.agents.encoders import LeRobotConvTrunk

    trunk = LeRobotConvTrunk()
    images = np.zeros((8, 64, 64, 3), np.uint8)
    variables = trunk.init(jax.random.key(0), images)

    def flops():
        analysis = jax.jit(lambda v: trunk.apply(v, images)).lower(variables).compile()
        return analysis.cost_analysis()["flops"]

    with onednn_conv.xla_convolutions():
        assert not onednn_conv.available()
        counted = flops()
    assert onednn_conv.available()
    # the first layer alone: 8 images x 29 x 29 outputs x 32 channels x 7 x 7 x 3 taps x 2
    assert counted > 8 * 29 * 29 * 32 * 147 * 2
    assert flops() < counted / 10


@pytest.mark.parametrize(
    ("x_dtype", "kernel_dtype", "message"),
    [
        (jnp.float32, jnp.bfloat16, "input and kernel dtypes differ"),
        (jnp.float16, jnp.float16, "input and kernel dtypes must be f32 or bf16"),
    ],
)
def test_operands_of_another_dtype_are_refused_in_one_line(x_dtype, kernel_dtype, message):
    x = jnp.ones((1, 8, 8, 2), x_dtype)
    kernel = jnp.ones((3, 3, 2, 4), kernel_dtype)
    with pytest.raises(Exception, match=message):
        jax.block_until_ready(onednn_conv.conv(x, kernel, (1, 1), ((0, 0), (0, 0))))
