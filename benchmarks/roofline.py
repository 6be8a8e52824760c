"""What the learner's update could reach on this machine, and what one update costs.

Helpers for ``benchmarks/learner.py``:

- ``matmul_roofline``: jitted batched matmuls at the critic ensemble's own shapes (N critics,
  batch B, hidden K, as ``vmap`` over the ensemble lowers), each of a layer's three training
  matmuls (forward, weight gradient, input gradient) chained inside one ``fori_loop`` so that
  dispatch does not count: the GFLOP/s that the update's dominant operations can reach here,
  now.
- ``conv_roofline``: the same for a 3x3 convolution at a trunk's costliest shape (the conv
  trunk's second layer, 32 to 32 channels at stride 2; ResNet-10's first stage, 64 to 64).
- ``state_update_flops``: the FLOPs of one critic update and one actor update of the state
  configuration, counted by hand (every dense layer: 2 * B * in * out forward; a backward pass
  computes weight gradients for every layer and input gradients for all but the first).
- ``xla_flops``: XLA's own count (``compiled.cost_analysis()``) of any jitted function, for the
  pixel configurations whose convolutions are tedious to count by hand.
"""

from __future__ import annotations

import itertools
import time

import jax
import jax.numpy as jnp


def seconds_per_call(fn, *args, calls: int) -> float:
    jax.block_until_ready(fn(*args))  # compile and warm up
    start = time.perf_counter()
    for _ in range(calls):
        out = fn(*args)
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / calls


# The three matmuls of a dense layer's training step, batched over the ensemble: forward
# (activations times weights), weight gradient (contracting over the batch), input gradient
# (times the transposed weights).
TRAINING_MATMULS = {
    "forward": "nbi,nij->nbj",
    "weight_grad": "nbi,nbj->nij",
    "input_grad": "nbj,nij->nbi",
}


def matmul_roofline(n: int, batch: int, k: int, iters: int = 32, calls: int = 5) -> dict:
    """GFLOP/s of ``iters`` chained ``[n, batch, k] x [n, k, k]`` matmuls in one call, for each
    of a layer's training matmuls, and their harmonic mean (equal FLOPs each, as in a layer's
    forward and backward pass): what the ensemble's update could reach if it were only
    matmuls. The chain feeds each product into the next, so ``batch`` must equal ``k``."""
    if batch != k:
        raise ValueError("the chained roofline needs batch == hidden width")
    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (n, batch, k), jnp.float32)
    w = jax.random.normal(key, (n, k, k), jnp.float32) / jnp.sqrt(k)
    flops = 2.0 * n * batch * k * k
    result = {"shape": f"[{n},{batch},{k}]x[{n},{k},{k}]"}
    for name, spec in TRAINING_MATMULS.items():

        @jax.jit
        def chain(x, w, spec=spec):
            return jax.lax.fori_loop(0, iters, lambda _, h: jnp.einsum(spec, h, w), x)

        result[f"gflops_{name}"] = flops * iters / seconds_per_call(chain, x, w, calls=calls) / 1e9

    @jax.jit
    def one(x, w):  # a single matmul per call: what dispatch costs at this size
        return jnp.einsum(TRAINING_MATMULS["forward"], x, w)

    result["gflops_forward_one_per_call"] = (
        flops / seconds_per_call(one, x, w, calls=calls * iters) / 1e9
    )
    rates = [result[f"gflops_{name}"] for name in TRAINING_MATMULS]
    result["gflops"] = len(rates) / sum(1 / r for r in rates)
    result["us_per_matmul"] = flops / result["gflops"] / 1e3
    return result


def conv_roofline(
    batch: int,
    side: int,
    channels: int,
    filters: int,
    stride: int,
    iters: int = 8,
    calls: int = 3,
) -> dict:
    """GFLOP/s of a 3x3 VALID conv, ``channels`` to ``filters``, on ``[batch, side, side, .]``."""
    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (batch, side, side, channels), jnp.float32)
    w = jax.random.normal(key, (3, 3, channels, filters), jnp.float32) / 10.0
    out_side = (side - 3) // stride + 1

    def conv(h):
        return jax.lax.conv_general_dilated(
            h, w, (stride, stride), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )

    @jax.jit
    def loop(x):
        # each conv's input depends on the last output, so XLA cannot hoist it out of the loop
        def body(_, c):
            return c + 1e-6 * conv(x + c).mean()

        return jax.lax.fori_loop(0, iters, body, jnp.zeros((), jnp.float32))

    flops = 2.0 * batch * out_side * out_side * filters * 9 * channels
    seconds = seconds_per_call(loop, x, calls=calls)
    return {
        "shape": f"conv3x3/s{stride} [{batch},{side},{side},{channels}]->{filters}",
        "gflops": flops * iters / seconds / 1e9,
    }


def _dense_flops(batch: int, widths: list[int]) -> float:
    return sum(2.0 * batch * a * b for a, b in itertools.pairwise(widths))


def state_update_flops(
    batch: int, obs: int, act: int, hidden: tuple[int, ...], critics: int, subset: int
) -> dict:
    """Hand-counted FLOPs (dense layers only) of one critic and one actor update."""
    actor_widths = [obs, *hidden, 2 * act]  # mean and log-std heads side by side
    critic_widths = [obs + act, *hidden, 1]
    actor_fwd = _dense_flops(batch, actor_widths)
    actor_first = 2.0 * batch * obs * hidden[0]
    critic_fwd = critics * _dense_flops(batch, critic_widths)
    critic_first = critics * 2.0 * batch * (obs + act) * hidden[0]
    target_fwd = subset * _dense_flops(batch, critic_widths)
    # next actions (forward), the target subset (forward), the ensemble (forward, weight
    # gradients, input gradients of all but the first layer)
    critic_update = actor_fwd + target_fwd + critic_fwd + critic_fwd + (critic_fwd - critic_first)
    # the actor forward and backward, the ensemble forward and its input gradients down to
    # the actions
    actor_update = 3 * actor_fwd - actor_first + 2 * critic_fwd
    return {"critic_update": critic_update, "actor_update": actor_update}


def xla_flops(fn, *args) -> float | None:
    """XLA's FLOP count of ``jax.jit(fn)(*args)`` (None where the backend gives none)."""
    analysis = jax.jit(fn).lower(*args).compile().cost_analysis()
    if isinstance(analysis, list | tuple):
        analysis = analysis[0] if analysis else None
    if not analysis or "flops" not in analysis:
        return None
    return float(analysis["flops"])
