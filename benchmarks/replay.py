"""Replay buffer throughput and memory, against other buffers timed in the same run.

    python benchmarks/replay.py [--quick] [--rounds N] [--baseline-rev REV] [--serl-repo DIR]

Two configurations: ``a_state`` (20-d state, 4-d action) and ``b_state_2cams_128`` (20-d state
plus two 128x128x3 uint8 cameras). The workload is realistic: episodes of 100 steps, each step's
observation the previous step's next observation, a fresh first observation after each episode
end, frames drawn from a pool of distinct random images (so making data is not what is timed).

Contenders, all alive at once and timed in small alternating chunks (A, B, C, A, B, C, ...) so
that the machine's load hits them alike:

- ``robot_rl``: ``robot_rl.data.replay.ReplayBuffer`` as checked out;
- ``robot_rl_distinct_obs``: the same, each observation a different array from the previous
  next observation (equal data), as after the network: every add compares the frames;
- ``robot_rl_before``: the same file at ``--baseline-rev`` (a git revision), when given;
- ``serl``: SERL's ``MemoryEfficientReplayBuffer`` (rail-berkeley/serl,
  ``serl_launcher/data/``), when ``--serl-repo`` names a git directory of that repository. Its
  four data modules are copied out of git into a temporary directory at run time (never into
  this repository) and imported with ``gym`` mapped to ``gymnasium`` when ``gym`` is missing;
  transitions are given to it as SERL's own loop builds them (pixels with a leading frame-stack
  axis of 1, ``masks``, ``dones``). Its ``sample`` returns strided views (the consumer still
  has to make them contiguous); ours returns contiguous arrays.

Per contender: ``insert_fill`` (transitions/s while the buffer fills for the first
time: first-touch page faults included, as in any run's first hour), ``insert_steady`` (the
buffer full, overwriting), ``sample`` (batches of 256, transitions/s) and memory: bytes and
frames per transition slot (what is allocated per unit of capacity) and per held transition
(at steady state, where episode-start frames and invalid rows count against the buffer). Each
JSON line carries the median chunk rate, every chunk's rate, and against each other contender
the median of the paired chunk-by-chunk ratios.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from statistics import median

import gymnasium as gym
import numpy as np

from robot_rl.data.replay import ReplayBuffer

BATCH = 256
EPISODE = 100
SERL_DATA = "serl_launcher/serl_launcher/data"


def spaces(cameras: int, size: int = 128) -> tuple[gym.spaces.Dict, gym.spaces.Box]:
    obs = {"state": gym.spaces.Box(-np.inf, np.inf, (20,), np.float32)}
    for i in range(cameras):
        obs[f"cam{i}"] = gym.spaces.Box(0, 255, (size, size, 3), np.uint8)
    return gym.spaces.Dict(obs), gym.spaces.Box(-1.0, 1.0, (4,), np.float32)


class Ours:
    """A robot_rl ReplayBuffer class (checked out or from another revision). With
    ``distinct_obs`` each observation is a different array from the previous next observation
    (same data), as transitions decoded from the network are: the buffer compares them."""

    def __init__(self, buffer_class, obs_space, act_space, capacity, distinct_obs=False):
        self.buffer = buffer_class(obs_space, act_space, capacity)
        self.distinct_obs = distinct_obs

    @staticmethod
    def prepare(obs: dict) -> dict:
        return obs

    def add(self, obs, action, reward, terminated, truncated, next_obs):
        self.buffer.add(obs, action, reward, terminated, truncated, next_obs)

    def sample(self, rng, size):
        return self.buffer.sample(rng, size)

    def memory(self) -> dict:
        b = self.buffer
        obs_slot, next_slot = b.frame_slots(np.arange(len(b)))
        resident = len(np.union1d(obs_slot, next_slot))
        return {
            "bytes_per_slot": b.nbytes / b.capacity,
            "bytes_per_held_transition": b.nbytes / len(b),
            "frames_per_slot": b.frame_capacity / b.capacity,
            "frames_per_held_transition": resident / len(b),
            "held_transitions": len(b),
            "capacity": b.capacity,
        }


class Serl:
    """SERL's MemoryEfficientReplayBuffer, fed as SERL's own loop feeds it."""

    module = None

    def __init__(self, obs_space, act_space, capacity):
        keys = tuple(k for k, s in obs_space.spaces.items() if s.dtype == np.uint8)
        self.pixel_keys = keys
        stacked = {
            k: (gym.spaces.Box(0, 255, (1, *s.shape), np.uint8) if k in keys else s)
            for k, s in obs_space.spaces.items()
        }
        self.buffer = self.module.MemoryEfficientReplayBuffer(
            gym.spaces.Dict(stacked), act_space, capacity, pixel_keys=keys
        )
        self.buffer.seed(0)

    @staticmethod
    def prepare(obs: dict) -> dict:
        return {k: (v[None] if v.dtype == np.uint8 else v) for k, v in obs.items()}

    def add(self, obs, action, reward, terminated, truncated, next_obs):
        done = terminated or truncated
        self.buffer.insert(
            dict(
                observations=obs,
                next_observations=next_obs,
                actions=action,
                rewards=reward,
                masks=1.0 - terminated,
                dones=done,
            )
        )

    def sample(self, rng, size):
        return self.buffer.sample(size)

    def memory(self) -> dict:
        b = self.buffer
        arrays = []

        def collect(d):
            for v in d.values():
                collect(v) if isinstance(v, dict) else arrays.append(v)

        collect(b.dataset_dict)
        nbytes = sum(a.nbytes for a in arrays) + b._is_correct_index.nbytes
        held = int(b._is_correct_index[: len(b)].sum())
        return {
            "bytes_per_slot": nbytes / b._capacity,
            "bytes_per_held_transition": nbytes / held,
            "frames_per_slot": 1.0,
            "frames_per_held_transition": len(b) / held,  # every row holds one frame
            "held_transitions": held,
            "capacity": b._capacity,
        }


def load_serl(repo: Path, into: Path) -> types.ModuleType:
    """SERL's data modules, copied out of its git directory into ``into`` and imported."""
    package = into / "serl_launcher" / "data"
    package.mkdir(parents=True)
    (into / "serl_launcher" / "__init__.py").write_text("")
    for name in ("__init__", "dataset", "replay_buffer", "memory_efficient_replay_buffer"):
        text = subprocess.run(
            ["git", "--git-dir", str(repo), "show", f"HEAD:{SERL_DATA}/{name}.py"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (package / f"{name}.py").write_text(text)
    try:
        import gym as _gym  # noqa: F401
    except ImportError:  # SERL uses gym only for spaces and seeding: gymnasium has both
        import gymnasium.utils.seeding

        sys.modules["gym"] = gym
        sys.modules["gym.spaces"] = gym.spaces
        sys.modules["gym.utils"] = gymnasium.utils
        sys.modules["gym.utils.seeding"] = gymnasium.utils.seeding
    sys.path.insert(0, str(into))
    from serl_launcher.data import memory_efficient_replay_buffer

    return memory_efficient_replay_buffer


def load_revision(rev: str, into: Path):
    """``ReplayBuffer`` from robot_rl/data/replay.py at git revision ``rev``."""
    root = Path(__file__).resolve().parents[1]
    text = subprocess.run(
        ["git", "-C", str(root), "show", f"{rev}:robot_rl/data/replay.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = into / "replay_before.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("replay_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ReplayBuffer


def workload(contender, obs_space, inserts: int, pool_size: int = 64):
    """A function that adds ``n`` transitions of 100-step episodes from a pool of frames."""
    rng = np.random.default_rng(0)
    pool = []
    for _ in range(pool_size):
        obs = {}
        for key, space in obs_space.spaces.items():
            if space.dtype == np.uint8:
                obs[key] = rng.integers(0, 256, space.shape, dtype=np.uint8)
            else:
                obs[key] = rng.normal(size=space.shape).astype(np.float32)
        pool.append(contender.prepare(obs))
    next_pool = pool
    if getattr(contender, "distinct_obs", False):
        next_pool = [{k: v.copy() for k, v in obs.items()} for obs in pool]
    actions = rng.uniform(-1, 1, (pool_size, 4)).astype(np.float32)
    state = {"step": 0, "frame": 0}

    def add(n: int) -> float:
        step, frame = state["step"], state["frame"]
        start = time.perf_counter()
        for _ in range(n):
            end = step % EPISODE == EPISODE - 1
            obs, nxt = pool[frame % pool_size], next_pool[(frame + 1) % pool_size]
            contender.add(obs, actions[step % pool_size], 1.0, False, end, nxt)
            step += 1
            # after an episode ends the next one starts from a fresh frame
            frame += 2 if end else 1
        seconds = time.perf_counter() - start
        state["step"], state["frame"] = step, frame
        return n / seconds

    return add


def measure(makers: dict, obs_space, capacity: int, rounds: int, batches: int) -> dict:
    """Every contender alive at once, timed in small alternating chunks (A, B, C, A, B, C, ...)
    so that a change in the machine's load lands on all of them: per figure, each chunk's
    rate per contender, chunk by chunk."""
    contenders = {name: make() for name, make in makers.items()}
    adds = {name: workload(c, obs_space, capacity) for name, c in contenders.items()}
    rates = {name: {"insert_fill": [], "insert_steady": [], "sample": []} for name in makers}
    chunks = 8
    for _ in range(chunks):  # the first fill, in chunks: first-touch page faults and all
        for name, add in adds.items():
            rates[name]["insert_fill"].append(add(capacity // chunks))
    steady = max(capacity // 10, 50)
    for _ in range(rounds):
        for name, add in adds.items():
            rates[name]["insert_steady"].append(add(steady))
    rng = np.random.default_rng(1)
    for contender in contenders.values():
        contender.sample(rng, BATCH)  # warm-up
    for _ in range(rounds):
        for name, contender in contenders.items():
            start = time.perf_counter()
            for _ in range(batches):
                contender.sample(rng, BATCH)
            rates[name]["sample"].append(batches * BATCH / (time.perf_counter() - start))
    memory = {name: c.memory() for name, c in contenders.items()}
    del contenders, adds
    gc.collect()
    return {"rates": rates, "memory": memory}


def run(
    quick: bool = False,
    rounds: int = 8,
    baseline_rev: str | None = None,
    serl_repo: str | None = None,
) -> list[dict]:
    load_start = os.getloadavg()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        before = load_revision(baseline_rev, Path(tmp)) if baseline_rev else None
        if serl_repo:
            Serl.module = load_serl(Path(serl_repo), Path(tmp) / "serl")
        configs = [("a_state", 0, 2_000 if quick else 20_000, 20 if quick else 50)]
        configs.append(("b_state_2cams_128", 2, 500 if quick else 5_000, 4 if quick else 10))
        for config, cameras, capacity, batches in configs:
            obs_space, act_space = spaces(cameras)
            args = (obs_space, act_space, capacity)
            makers = {"robot_rl": functools.partial(Ours, ReplayBuffer, *args)}
            if cameras:
                makers["robot_rl_distinct_obs"] = functools.partial(
                    Ours, ReplayBuffer, *args, distinct_obs=True
                )
            if before is not None:
                makers["robot_rl_before"] = functools.partial(Ours, before, *args)
            if serl_repo and cameras:  # SERL's memory-efficient buffer is for pixels
                makers["serl"] = functools.partial(Serl, *args)
            measured = measure(makers, obs_space, capacity, 2 if quick else rounds, batches)
            lines.extend(summarise(config, measured))
    load_end = os.getloadavg()
    for line in lines:
        line["loadavg_start"] = [round(x, 2) for x in load_start]
        line["loadavg_end"] = [round(x, 2) for x in load_end]
    return lines


def summarise(config: str, measured: dict) -> list[dict]:
    """Per contender and figure: the median chunk rate, and against each other contender the
    median of the chunk-by-chunk ratios (paired: both measured back to back)."""
    rates, lines = measured["rates"], []
    for name, figures in rates.items():
        for figure, values in figures.items():
            line = {
                "config": config,
                "buffer": name,
                "figure": figure,
                "transitions_per_s": round(median(values), 1),
                "chunks": [round(v) for v in values],
            }
            if figure == "sample":
                line["batch"] = BATCH
            if name.startswith("robot_rl"):
                for other in rates:
                    if other != name and other != "robot_rl":
                        pairs = zip(values, rates[other][figure], strict=True)
                        line[f"ratio_vs_{other}"] = round(median(a / b for a, b in pairs), 2)
            lines.append(line)
        memory = measured["memory"][name]
        lines.append(
            {
                "config": config,
                "buffer": name,
                "figure": "memory",
                "episode_length": EPISODE,
                **{k: round(v, 4) if isinstance(v, float) else v for k, v in memory.items()},
            }
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one round")
    parser.add_argument("--rounds", type=int, default=8, help="interleaved chunks")
    parser.add_argument("--baseline-rev", help="also time replay.py at this git revision")
    parser.add_argument("--serl-repo", help="git directory of rail-berkeley/serl: time its buffer")
    args = parser.parse_args(argv)
    for line in run(args.quick, args.rounds, args.baseline_rev, args.serl_repo):
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
