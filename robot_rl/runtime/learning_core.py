"""The learning core behind every entry point (acme's Learner, fed by an adder); what it holds
and who feeds it: docs/ARCHITECTURE.md, "One loop, one core"."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np

from robot_rl.agents.checkpoint import read_metadata, restore_agent, save_checkpoint
from robot_rl.agents.data_parallel import local_data_parallel
from robot_rl.agents.pretrained import encoder_metadata
from robot_rl.data.mixing import MixedSampler
from robot_rl.data.replay import ReplayBuffer
from robot_rl.data.transition import Transition

REPLAY_FILE = "replay.npz"
DEMO_FILE = "demos.npz"
INTERVENTION_FIELDS = {"intervened": ((), np.bool_)}
"""Replay's per-transition flag when a run has interventions: the operator acted."""
DEMO_CAPACITY = 100_000
"""The demonstration buffer holds at most this many transitions (or the replay's capacity)."""


def make_sampler(agent, replay, demos, demo_fraction: float) -> MixedSampler:
    """50/50 online/demo batches; with a frozen image trunk, through the embedding cache so
    that the trunk runs once per stored frame instead of on every sampled image."""
    if agent.frozen_trunk is not None and agent.nets.image_keys:
        from robot_rl.data.embedding_cache import EmbeddingCache

        keys, pad = agent.nets.image_keys, agent.config.drq_pad
        # DrQ's shifts: 4 cached pixel-shifted views per frame, and a fresh one-cell shift of
        # every sampled feature map that is fine enough (data/embedding_cache.py says why)
        views, shift = (4, 1) if pad else (1, 0)
        # The trunk never changes, so the first agent's embed function stays valid.
        replay, demos = (
            EmbeddingCache(
                b, keys, agent.embed_frames, num_views=views, pad=pad, feature_shift=shift
            )
            for b in (replay, demos)
        )
    return MixedSampler(replay, demos, demo_fraction=demo_fraction)


def checkpoint_metadata(cfg, backend: str, env_id: str = "") -> dict:
    """What `robot-rl eval` and ``--resume`` read of a train or learner run's checkpoint (a gym
    run records no observation mode)."""
    return {
        "task": cfg.task,
        "backend": backend,
        "env_id": env_id,
        "cameras": list(cfg.cameras),
        "image_size": cfg.image_size,
        "observation": None if backend == "gym" else cfg.metadata(cfg.task),
        "encoder": encoder_metadata(cfg.agent),
    }


def store_transition(replay: ReplayBuffer, demos: ReplayBuffer, t: Transition, **extras) -> int:
    """Every transition goes to the online replay (its index there is returned). In a run with
    interventions (its buffers keep the ``intervened`` flag) an operator's also goes to the
    demonstration buffer (HIL-SERL): this is the one place that rule lives."""
    hil = "intervened" in replay.extra_fields
    if hil:
        extras["intervened"] = t.intervened
    index = replay.add(*t.replay_args(), **extras)
    if hil and t.intervened:
        demos.add(*t.replay_args(), **extras)
    return index


class TakeoverPenalty:
    """RLIF's signal beside the task's reward: the policy's last step before an operator takes
    over gets ``penalty`` taken off its reward. Without it a policy that stalls loses almost
    nothing (the operator finishes, and the success flows back to the stall discounted by a few
    steps): it learns to wait for the operator. Kept per stream (one actor's episodes in
    order); an episode's end forgets the step."""

    def __init__(self, penalty: float):
        if not penalty >= 0.0:
            raise ValueError(f"intervention_penalty must be >= 0, got {penalty}")
        self.penalty = penalty
        self.takeovers = 0
        self._last_policy_step: dict[int, int] = {}  # stream -> replay index

    def observe(self, replay: ReplayBuffer, t: Transition, index: int, stream: int) -> None:
        """``t``, just stored at ``index``: penalise the step before it if it is a takeover."""
        previous = self._last_policy_step.pop(stream, None)
        if t.intervened and previous is not None:
            self.takeovers += replay.add_to_reward(previous, -self.penalty)
        if not (t.intervened or t.terminated or t.truncated):
            self._last_policy_step[stream] = index


class LearningCore:
    """Agent, buffers, sampling, the update-to-data ratio and checkpoints. The ratio: once
    ``start_steps`` transitions are stored, every stored transition allows ``utd_ratio`` more
    critic updates (``may_update(n)``: are ``n`` more allowed yet)."""

    def __init__(
        self,
        agent,
        observation_space,
        action_space,
        *,
        seed: int,
        batch_size: int,
        utd_ratio: int,
        start_steps: int,
        demo_fraction: float,
        replay_capacity: int,
        extra_fields: dict | None = None,
        intervention_penalty: float = 0.0,
    ):
        self.agent = agent
        self.replay = ReplayBuffer(
            observation_space, action_space, replay_capacity, extra_fields=extra_fields
        )
        self.demos = ReplayBuffer(
            observation_space,
            action_space,
            min(replay_capacity, DEMO_CAPACITY),
            extra_fields=extra_fields,
        )
        self.rng = np.random.default_rng(seed)
        self.batch_size, self.utd_ratio = batch_size, utd_ratio
        self.start_steps, self.demo_fraction = start_steps, demo_fraction
        self.parallel = None
        self.received = self.updates = 0
        self.update_seconds = self.sample_seconds = 0.0
        self._sampler: MixedSampler | None = None
        self.takeover_penalty = (
            TakeoverPenalty(intervention_penalty) if intervention_penalty else None
        )

    @classmethod
    def for_run(cls, agent, observation_space, action_space, cfg, **overrides) -> LearningCore:
        """A core with a run config's sampling, ratio and replay settings (train's, the
        learner's, forward-backward's: they name these fields alike)."""
        names = ("seed", "batch_size", "utd_ratio", "start_steps", "demo_fraction")
        settings = {name: getattr(cfg, name) for name in (*names, "replay_capacity")}
        settings["intervention_penalty"] = getattr(cfg, "intervention_penalty", 0.0)
        return cls(agent, observation_space, action_space, **{**settings, **overrides})

    def add(self, t: Transition, **extras) -> None:
        index = store_transition(self.replay, self.demos, t, **extras)
        if self.takeover_penalty is not None:
            self.takeover_penalty.observe(self.replay, t, index, int(extras.get("stream", 0)))
        self.received += 1

    def behaviour_action(self, obs: dict, action_space) -> np.ndarray:
        """What the robot does while training: uniformly random until ``start_steps``
        transitions are stored, then a sample from the policy (clipped to the unit box)."""
        if self.received < self.start_steps:
            action = action_space.sample()
        else:
            action, self.agent = self.agent.sample_actions(obs)
        return np.clip(action, -1.0, 1.0).astype(np.float32)

    def allowed_updates(self) -> int:
        """Critic updates the stored transitions allow so far."""
        if self.received < max(self.start_steps, 1):
            return 0
        return self.utd_ratio * (self.received - self.start_steps + 1)

    def may_update(self, n: int) -> bool:
        return self.updates + n <= self.allowed_updates()

    def spread(self, log: Callable[[str], None]) -> None:
        """Split every update over this process's devices along the batch, when it sees several
        (GPUs), and ``log`` that it does."""
        self.parallel = local_data_parallel()
        if self.parallel is not None:
            self.parallel.check_batch_size(self.batch_size)
            self.agent = self.parallel.place_agent(self.agent)
            log(f"updates data-parallel over {self.parallel.size} devices")

    @property
    def sampler(self) -> MixedSampler:
        if self._sampler is None:
            self._sampler = make_sampler(self.agent, self.replay, self.demos, self.demo_fraction)
        return self._sampler

    def update(self, n: int, wait: bool = True) -> dict:
        """``n`` critic updates in one compiled call. ``wait``: return once they have finished
        (JAX dispatches asynchronously), so that ``update_seconds`` counts work, not
        dispatches; the learner process leaves it to its progress line to wait.
        ``update_seconds`` includes the sampling, ``sample_seconds`` is that share."""
        t0 = time.perf_counter()
        batch = self.sampler.sample(self.rng, self.batch_size, num_minibatches=n)
        self.sample_seconds += time.perf_counter() - t0
        self.agent, info = self.agent.update(batch, utd_ratio=n, parallel=self.parallel)
        if wait:
            info = jax.block_until_ready(info)
        self.updates += n
        self.update_seconds += time.perf_counter() - t0
        return info

    def save(self, directory: Path, step: int, metadata: dict) -> Path:
        """An atomic checkpoint: agent and optimisers, both buffers, the sampling RNG and the
        ratio's counters beside ``metadata``."""
        return save_checkpoint(
            directory,
            step,
            self.agent,
            extra_writers={REPLAY_FILE: self.replay.save, DEMO_FILE: self.demos.save},
            metadata={
                **metadata,
                "numpy_rng": self.rng.bit_generator.state,
                "received": self.received,
                "updates": self.updates,
            },
        )

    def restore(self, checkpoint: Path) -> dict:
        """Agent, buffers, RNG and counters from ``checkpoint``; returns its metadata."""
        meta = read_metadata(checkpoint)
        self.agent = restore_agent(checkpoint, self.agent)
        self.replay = ReplayBuffer.load(checkpoint / REPLAY_FILE)
        if (checkpoint / DEMO_FILE).is_file():
            self.demos = ReplayBuffer.load(checkpoint / DEMO_FILE)
        if "numpy_rng" in meta:  # train-fb checkpoints before 2026-11 kept none per direction
            self.rng.bit_generator.state = meta["numpy_rng"]
        self.received = meta.get("received", meta["step"])
        # a checkpoint from before the counters were kept had done every update it allowed
        self.updates = meta.get("updates", self.allowed_updates())
        self._sampler = None
        return meta
