"""Data-parallel agent updates over every local JAX device (several GPUs on a learner host, or
``--xla_force_host_platform_device_count=N`` CPU devices in tests).

The agent is replicated on a one-axis device mesh and each minibatch is split along its batch
axis; the update itself is the same jitted function as on one device. XLA's SPMD partitioner
turns the batch means of the losses into all-reduces, so every device applies the same gradient
and the replicas stay identical. With JAX's partitionable threefry (the default), random draws
do not depend on the sharding either, so a sharded update equals the single-device update up to
the order of floating-point sums (tested in tests/test_data_parallel.py).

Across hosts, the same mesh spans the devices of every process once ``jax.distributed`` is
initialised (README.md, "Several devices").
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

BATCH_AXIS = "batch"


class DataParallel:
    """Where an agent and its minibatches live when updates are spread over ``devices``."""

    def __init__(self, devices: list | None = None):
        devices = list(devices if devices is not None else jax.devices())
        if not devices:
            raise ValueError("no JAX devices to spread updates over")
        self.devices = devices
        self.mesh = Mesh(np.asarray(devices), (BATCH_AXIS,))
        self._replicated = NamedSharding(self.mesh, PartitionSpec())
        # minibatches are [utd_ratio, batch, ...]: split the batch axis
        self._split = NamedSharding(self.mesh, PartitionSpec(None, BATCH_AXIS))

    @property
    def size(self) -> int:
        return len(self.devices)

    def check_batch_size(self, batch_size: int) -> None:
        if batch_size % self.size:
            raise ValueError(
                f"batch size {batch_size} does not split over {self.size} devices; "
                f"use a multiple of {self.size}"
            )

    def place_agent(self, agent: Any) -> Any:
        """The agent replicated on every device."""
        return jax.device_put(agent, self._replicated)

    def place_minibatches(self, minibatches: dict) -> dict:
        """``[utd_ratio, batch, ...]`` arrays, each device holding its slice of the batch.

        With several processes (``jax.distributed``) each one passes its own share of the
        global batch (``batch / process_count`` rows, sampled from its own replay): the global
        minibatch is their concatenation."""
        global_batch = jax.tree.leaves(minibatches)[0].shape[1] * jax.process_count()
        self.check_batch_size(global_batch)
        return jax.tree.map(
            lambda x: jax.make_array_from_process_local_data(self._split, x), minibatches
        )


def initialize_multi_host(coordinator: str, num_processes: int, process_id: int) -> None:
    """Join a multi-host learner: every process calls this first, with the same coordinator
    address (``host:port`` of process 0) and its own ``process_id``; ``jax.devices()`` then
    lists the devices of every process and ``DataParallel()`` spans them. CPU hosts exchange
    gradients through gloo; GPU hosts through NCCL."""
    # (asking for the backend here would start it, which initialize must precede)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator, num_processes=num_processes, process_id=process_id)


def local_data_parallel() -> DataParallel | None:
    """Data parallelism over every device this process sees, or None with only one."""
    return DataParallel() if len(jax.devices()) > 1 else None
