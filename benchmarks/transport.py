"""Transport figures, one JSON line each.

- ``transport_throughput``: transitions per second from the actor's outbox to the learner's
  queue over loopback TCP, every batch validated, logged (fsync) and acknowledged; state-only
  transitions and transitions with two 128x128 cameras.
- ``weights_broadcast``: latency from ``publish_weights`` to the actor's slot, for the acting
  parameters of the pixel agent (two 128x128 cameras, conv encoder).
- ``actor_control_period``: the actor's control period p50/p99 at 10 Hz on pick_cube, alone
  (baseline) and while a learner process trains on the same machine.
- ``hostile_frame``: what decoding one hostile frame of at most 64 KB costs (peak Python
  memory, wall time, best of a few runs): decompression bombs (16 M and 200 k empty maps, nested
  arrays), a lying declared size, deep nesting and a full batch of items; beside the cost of
  a legitimate 64 KB transition frame (the baseline: ``vs_legit``).

    python benchmarks/transport.py [--quick] [--hostile-only]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import gymnasium as gym
import lz4.block
import numpy as np

from robot_rl.data.spaces_json import box_to_json, dict_space_to_json
from robot_rl.data.transition import Transition
from robot_rl.transport.client import TransportClient
from robot_rl.transport.ingest_log import IngestLog
from robot_rl.transport.messages import encode_transition
from robot_rl.transport.outbox import Outbox
from robot_rl.transport.server import TransportServer
from robot_rl.transport.wire import MAGIC, RAW_MAGIC, WireError, decode

ACTION_SPACE = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)


def _endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def _spaces(cameras: int) -> gym.spaces.Dict:
    spaces = {"state": gym.spaces.Box(-np.inf, np.inf, (10,), np.float32)}
    for i in range(cameras):
        spaces[f"cam{i}"] = gym.spaces.Box(0, 255, (128, 128, 3), np.uint8)
    return gym.spaces.Dict(spaces)


def _pair(directory: Path, obs_space, fsync: str):
    endpoint = _endpoint()
    server = TransportServer(
        endpoint,
        task="bench",
        observation_space=obs_space,
        action_space=ACTION_SPACE,
        welcome_info={},
        ingest_log=IngestLog(directory / "ingest", fsync=fsync),
    ).start()
    hello = {
        "task": "bench",
        "observation_space": dict_space_to_json(obs_space),
        "action_space": box_to_json(ACTION_SPACE),
    }
    client = TransportClient(endpoint, "bench", hello, Outbox(directory / "outbox")).start()
    if not client.wait_welcome(10):
        raise RuntimeError("no welcome from the benchmark server")
    return server, client


def throughput(cameras: int, count: int, fsync: str) -> dict:
    obs_space = _spaces(cameras)
    rng = np.random.default_rng(0)
    frames = []
    for i in range(count):
        # Camera-like content (smooth gradients plus noise) so compression is realistic.
        obs = {k: np.asarray(s.sample(), s.dtype) for k, s in obs_space.spaces.items()}
        for key in obs:
            if key.startswith("cam"):
                ramp = np.linspace(0, 200, 128, dtype=np.float32)[None, :, None]
                noise = rng.integers(0, 24, (128, 128, 3))
                obs[key] = (ramp + noise + i % 30).astype(np.uint8)
        frames.append(
            encode_transition(Transition(obs, np.zeros(4, np.float32), 0.0, False, False, obs))
        )
    with tempfile.TemporaryDirectory() as tmp:
        server, client = _pair(Path(tmp), obs_space, fsync)
        try:
            start = time.perf_counter()
            for frame in frames:
                client.outbox.append(frame)
            received = 0
            while received < count:
                batch = server.received.get(timeout=60)
                received += len(batch.transitions)
            while client.outbox.backlog:
                time.sleep(0.001)
            elapsed = time.perf_counter() - start
        finally:
            client.stop()
            server.stop()
    return {
        "benchmark": "transport_throughput",
        "observations": "state" if cameras == 0 else f"state + {cameras} x 128x128 cameras",
        "ingest_fsync": fsync,
        "transitions": count,
        "transitions_per_s": round(count / elapsed, 1),
        "wire_bytes_per_transition": int(np.mean([len(f) for f in frames])),
    }


def weights_latency(repeats: int) -> dict:
    from robot_rl.agents.acting_policy import weights_bytes
    from robot_rl.agents.config import AgentConfig
    from robot_rl.agents.sac import SACAgent

    obs_space = _spaces(2)
    agent = SACAgent.create(0, obs_space, ACTION_SPACE, AgentConfig(num_critics=2))
    payload = weights_bytes(agent)
    latencies = []
    with tempfile.TemporaryDirectory() as tmp:
        server, client = _pair(Path(tmp), obs_space, "never")
        try:
            for version in range(1, repeats + 1):
                start = time.perf_counter()
                serialise_start = time.perf_counter()
                payload = weights_bytes(agent)  # part of every broadcast
                serialise = time.perf_counter() - serialise_start
                server.publish_weights(version, payload)
                while (client.latest_weights() or (0,))[0] != version:
                    time.sleep(0.0002)
                latencies.append(time.perf_counter() - start)
        finally:
            client.stop()
            server.stop()
    ms = np.asarray(latencies) * 1000
    return {
        "benchmark": "weights_broadcast",
        "agent": "conv encoder, two 128x128 cameras",
        "weights_bytes": len(payload),
        "serialise_ms": round(serialise * 1000, 2),
        "latency_ms_p50": round(float(np.percentile(ms, 50)), 2),
        "latency_ms_p99": round(float(np.percentile(ms, 99)), 2),
        "repeats": repeats,
    }


def _cli(*args: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "COLUMNS": "250", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "robot_rl.cli", *args],
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )


def control_period(seconds: float, with_learner: bool) -> dict:
    steps = int(seconds * 10)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        endpoint = _endpoint()
        learner = None
        if with_learner:
            learner = _cli(
                "learner", "--task", "pick_cube", "--bind", endpoint, "--run-dir",
                str(tmp / "learner"), "--demos", "20", "--start-steps", "20", "--total-steps", "0",
                log=tmp / "learner.log",
            )  # fmt: skip
            deadline = time.monotonic() + 300
            while "learner pick_cube on" not in (tmp / "learner.log").read_text():
                if time.monotonic() > deadline or learner.poll() is not None:
                    raise RuntimeError((tmp / "learner.log").read_text()[-2000:])
                time.sleep(0.5)
        actor = _cli(
            "actor", "--task", "pick_cube", "--learner", endpoint, "--actor-id", "bench",
            "--outbox-dir", str(tmp / "outbox"), "--speedup", "1", "--total-steps", str(steps),
            "--flush-timeout", "5" if with_learner else "0", "--log-every", "1000",
            log=tmp / "actor.log",
        )  # fmt: skip
        actor.wait(timeout=seconds * 4 + 120)
        summary = json.loads((tmp / "actor.log").read_text().strip().splitlines()[-1])
        updates = -1
        if learner is not None:
            os.killpg(learner.pid, signal.SIGINT)
            learner.wait(timeout=120)
            found = re.findall(r"updates (\d+)", (tmp / "learner.log").read_text())
            updates = int(found[-1]) if found else 0
    return {
        "benchmark": "actor_control_period",
        "target_hz": 10,
        "learner_training": with_learner,
        "learner_updates": updates,
        "steps": steps,
        "period_ms_p50": round(summary["control_period_ms_p50"], 2),
        "period_ms_p99": round(summary["control_period_ms_p99"], 2),
    }


def _lz4_frame(body: bytes) -> bytes:
    return MAGIC + struct.pack("<I", len(body)) + lz4.block.compress(body, store_size=False)


def _hostile_frames() -> dict[str, bytes]:
    """Frames of at most 64 KB that would cost far more than their size without the limits."""
    inner = b"\xdc" + struct.pack(">H", 4096) + b"\x00" * 4096
    deep = b"\x81\xa4kind" + b"\x91" * 60_000 + b"\xc0"
    batch_items = b"\xdc" + struct.pack(">H", 4096) + b"\xc4\x00" * 4096
    frames = {
        "16M empty maps (LZ4)": _lz4_frame(
            b"\xdd" + struct.pack(">I", 16_000_000) + b"\x80" * 16_000_000
        ),
        "200k empty maps (LZ4)": _lz4_frame(
            b"\xdd" + struct.pack(">I", 200_000) + b"\x80" * 200_000
        ),
        "255 arrays of 4096 nils (LZ4)": _lz4_frame(
            b"\x81\xa4kind\xdc" + struct.pack(">H", 255) + inner * 255
        ),
        "60k empty maps (raw)": RAW_MAGIC
        + struct.pack("<I", 60_005)
        + b"\xdd"
        + struct.pack(">I", 60_000)
        + b"\x80" * 60_000,
        "declared 256 MB (LZ4)": MAGIC + struct.pack("<I", 256 * 1024 * 1024) + b"\x00" * 60_000,
        "60k-deep nesting (LZ4)": _lz4_frame(deep),
        "4096 empty items (raw)": RAW_MAGIC
        + struct.pack("<I", len(batch_items) + 7)
        + b"\x81\xa5items"
        + batch_items,
    }
    for name, frame in frames.items():
        assert len(frame) <= 64 * 1024, (name, len(frame))
    return frames


def _decode_cost(frame: bytes, repeats: int = 5) -> tuple[float, float, str]:
    best_ms, peak, outcome = float("inf"), 0, "decoded"
    for _ in range(repeats):
        tracemalloc.start()
        start = time.perf_counter()
        try:
            decode(frame)
            outcome = "decoded"
        except WireError as err:
            outcome = f"refused: {str(err)[:60]}"
        elapsed = (time.perf_counter() - start) * 1000
        peak = max(peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        best_ms = min(best_ms, elapsed)
    return best_ms, peak / 1e6, outcome


def hostile_frames() -> list[dict]:
    """Decoding cost of hostile frames (under tracemalloc, so absolute times are inflated;
    compare with the legitimate frame measured the same way)."""
    rng = np.random.default_rng(0)
    ramp = np.linspace(0, 255, 96 * 96 * 3).reshape(96, 96, 3)
    obs = {"state": np.zeros(10, np.float32)}  # one noisy 96x96 camera: a ~56 KB frame
    obs["cam0"] = (ramp + rng.normal(0, 40, ramp.shape)).clip(0, 255).astype(np.uint8)
    legit = encode_transition(Transition(obs, np.zeros(4, np.float32), 0.0, False, False, obs))
    legit_ms, legit_mb, _ = _decode_cost(legit)
    results = [
        {
            "benchmark": "hostile_frame",
            "frame": "legitimate transition (camera 96x96)",
            "frame_bytes": len(legit),
            "decode_ms": round(legit_ms, 3),
            "peak_mb": round(legit_mb, 3),
            "outcome": "decoded",
        }
    ]
    for name, frame in _hostile_frames().items():
        ms, mb, outcome = _decode_cost(frame)
        results.append(
            {
                "benchmark": "hostile_frame",
                "frame": name,
                "frame_bytes": len(frame),
                "decode_ms": round(ms, 3),
                "peak_mb": round(mb, 3),
                "outcome": outcome,
                "vs_legit_ms": round(ms / legit_ms, 2),
                "vs_legit_mb": round(mb / legit_mb, 2),
            }
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer transitions, shorter runs")
    parser.add_argument("--hostile-only", action="store_true", help="only the hostile frames")
    args = parser.parse_args()
    for result in hostile_frames():
        print(json.dumps(result), flush=True)
    if args.hostile_only:
        return
    n_state, n_image, seconds = (2000, 200, 30) if args.quick else (20000, 1000, 120)
    results = [
        throughput(0, n_state, "always"),
        throughput(0, n_state, "never"),
        throughput(2, n_image, "always"),
        weights_latency(20 if args.quick else 100),
    ]
    for result in results:
        print(json.dumps(result), flush=True)
    baseline = control_period(seconds, with_learner=False)
    print(json.dumps(baseline), flush=True)
    loaded = control_period(seconds, with_learner=True)
    loaded["p99_vs_baseline"] = round(loaded["period_ms_p99"] / baseline["period_ms_p99"], 2)
    print(json.dumps(loaded), flush=True)


if __name__ == "__main__":
    main()
