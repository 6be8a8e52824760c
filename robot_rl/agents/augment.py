"""DrQ image augmentation in JAX: pad by replicating edges, then crop back at a random offset."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def random_shift(rng: jax.Array, images: jax.Array, pad: int) -> jax.Array:
    """Shift each image of a [B, H, W, C] batch by up to ``pad`` pixels in each direction."""
    if pad == 0:
        return images
    batch, height, width, _ = images.shape
    padded = jnp.pad(images, ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="edge")
    offsets = jax.random.randint(rng, (batch, 2), 0, 2 * pad + 1)

    def crop(image, offset):
        return jax.lax.dynamic_slice(
            image, (offset[0], offset[1], 0), (height, width, image.shape[-1])
        )

    return jax.vmap(crop)(padded, offsets)


def augment_observations(
    rng: jax.Array, observations: dict, image_keys: tuple[str, ...], pad: int
) -> dict:
    """Random-shift every camera that still holds pixels; features and state pass unchanged."""
    if not image_keys or pad == 0:
        return observations
    out = dict(observations)
    for key, key_rng in zip(image_keys, jax.random.split(rng, len(image_keys)), strict=True):
        if out[key].dtype == jnp.uint8:
            out[key] = random_shift(key_rng, out[key], pad)
    return out
