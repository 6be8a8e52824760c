"""RLPD-style batch mixing: a fixed share of every minibatch comes from demonstrations.

Keeping the share fixed per minibatch (not just per sampled batch) matters because the agent
slices one sampled batch into ``num_minibatches`` critic updates; each of them sees the mix.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class SampleSource(Protocol):
    def __len__(self) -> int: ...

    def sample(self, rng: np.random.Generator, size: int) -> dict: ...


def _interleave_blocks(demo, online, num_blocks: int):
    """Per block: the demo rows, then the online rows (recursing into observation dicts)."""
    if isinstance(demo, dict):
        if set(demo) != set(online):
            raise ValueError(
                f"demo and online batches have different keys: {sorted(demo)} vs {sorted(online)}"
            )
        return {key: _interleave_blocks(demo[key], online[key], num_blocks) for key in demo}
    demo_blocks = demo.reshape(num_blocks, -1, *demo.shape[1:])
    online_blocks = online.reshape(num_blocks, -1, *online.shape[1:])
    if demo_blocks.dtype != online_blocks.dtype:
        raise ValueError(f"demo and online dtypes differ: {demo.dtype} vs {online.dtype}")
    mixed = np.concatenate([demo_blocks, online_blocks], axis=1)
    return mixed.reshape(-1, *demo.shape[1:])


class MixedSampler:
    def __init__(
        self,
        online: SampleSource,
        demo: SampleSource | None = None,
        demo_fraction: float = 0.5,
    ):
        if not 0.0 <= demo_fraction <= 1.0:
            raise ValueError(f"demo_fraction must lie in [0, 1], got {demo_fraction}")
        self.online = online
        self.demo = demo
        self.demo_fraction = demo_fraction

    def sample(self, rng: np.random.Generator, batch_size: int, num_minibatches: int = 1) -> dict:
        """``num_minibatches * batch_size`` rows; each block of ``batch_size`` is mixed alike."""
        if batch_size < 1 or num_minibatches < 1:
            raise ValueError(
                f"batch_size and num_minibatches must be >= 1, got {batch_size}, {num_minibatches}"
            )
        online_size = len(self.online)
        demo_size = 0 if self.demo is None else len(self.demo)
        if online_size == 0 and demo_size == 0:
            raise ValueError("cannot sample: both the online and the demo buffer are empty")
        total = batch_size * num_minibatches
        if demo_size == 0:
            return self.online.sample(rng, total)
        if online_size == 0:  # offline pretraining on demonstrations alone
            return self.demo.sample(rng, total)
        demo_per_block = round(self.demo_fraction * batch_size)
        if demo_per_block == 0:
            return self.online.sample(rng, total)
        if demo_per_block == batch_size:
            return self.demo.sample(rng, total)
        demo = self.demo.sample(rng, demo_per_block * num_minibatches)
        online = self.online.sample(rng, (batch_size - demo_per_block) * num_minibatches)
        return _interleave_blocks(demo, online, num_minibatches)
