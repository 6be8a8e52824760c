"""Agent checkpoints: parameters, optimiser states, RNG and step counters in Flax's msgpack format.

No pickle: the file holds only arrays and plain values. Each checkpoint is a directory written
under a temporary name and renamed into place, so a crash leaves either the old or the new
checkpoint, never half of one. ``config.json`` beside the state lets a restore refuse an agent
built with a different configuration and say which fields differ.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization

from robot_rl.agents.config import AgentConfig

AGENT_FILE = "agent.msgpack"
CONFIG_FILE = "config.json"
META_FILE = "meta.json"
_STEP_DIR = re.compile(r"^step_(\d+)$")


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, damaged or of another shape: each command decides its exit
    code (a damaged file is 1 for the learner, bad input 2 elsewhere)."""


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def config_to_json(config: AgentConfig) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(config)))


def config_differences(saved: dict, current: AgentConfig) -> list[str]:
    now = config_to_json(current)
    return [
        f"{k}: checkpoint has {saved.get(k)!r}, this run has {now.get(k)!r}"
        for k in sorted(set(saved) | set(now))
        if saved.get(k) != now.get(k)
    ]


def save_checkpoint(
    directory: str | os.PathLike,
    step: int,
    agent: Any,
    *,
    extra_writers: dict[str, Callable[[Path], None]] | None = None,
    metadata: dict | None = None,
    keep: int | None = 3,
) -> Path:
    """Write ``directory/step_<step>/`` atomically and prune all but the newest ``keep``.
    ``extra_writers`` maps a file name to a function that writes that file (the replay buffer,
    say) into the checkpoint directory before it is renamed into place."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"step_{step:010d}"
    tmp = directory / f".tmp_step_{step:010d}_{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    state = jax.device_get(serialization.to_state_dict(agent))
    _write_file(tmp / AGENT_FILE, serialization.msgpack_serialize(state))
    _write_file(tmp / CONFIG_FILE, json.dumps(config_to_json(agent.config), indent=2).encode())
    _write_file(tmp / META_FILE, json.dumps({"step": step, **(metadata or {})}).encode())
    for name, write in (extra_writers or {}).items():
        write(tmp / name)
    _fsync_dir(tmp)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    _fsync_dir(directory)
    if keep is not None:
        for old in list_checkpoints(directory)[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    return final


def list_checkpoints(directory: str | os.PathLike) -> list[Path]:
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [p for p in directory.iterdir() if p.is_dir() and _STEP_DIR.match(p.name)]
    return sorted(found, key=lambda p: int(_STEP_DIR.match(p.name).group(1)))


def latest_checkpoint(directory: str | os.PathLike) -> Path | None:
    """The newest complete checkpoint in ``directory``, or ``directory`` itself if it is one."""
    directory = Path(directory)
    if (directory / AGENT_FILE).is_file():
        return directory
    found = list_checkpoints(directory)
    return found[-1] if found else None


def _read_json(path: Path) -> dict:
    """A checkpoint's JSON file, or CheckpointError naming it (never a bare JSONDecodeError)."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise CheckpointError(
            f"{path}: cannot read it ({type(err).__name__}: {err}); the checkpoint is damaged "
            "or incomplete"
        ) from err
    if not isinstance(value, dict):
        raise CheckpointError(f"{path}: expected a JSON object, found {type(value).__name__}")
    return value


def read_metadata(checkpoint: str | os.PathLike) -> dict:
    return _read_json(Path(checkpoint) / META_FILE)


def config_from_json(saved: dict) -> AgentConfig:
    """The AgentConfig that ``config_to_json`` wrote (lists back to tuples)."""
    fields = {f.name for f in dataclasses.fields(AgentConfig)}
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in saved.items() if k in fields}
    return AgentConfig(**values)


def read_config(checkpoint: str | os.PathLike) -> AgentConfig:
    """The AgentConfig a checkpoint was written with (to rebuild its agent)."""
    path = Path(checkpoint) / CONFIG_FILE
    try:
        return config_from_json(_read_json(path))
    except TypeError as err:  # fields of the wrong kind
        raise CheckpointError(f"{path}: not an agent configuration ({err})") from err


def restore_agent(checkpoint: str | os.PathLike, template: Any) -> Any:
    """Load a checkpoint into an agent of the same configuration and shapes (``template``)."""
    path = latest_checkpoint(checkpoint)
    if path is None:
        raise CheckpointError(f"no checkpoint found at {checkpoint}")
    saved_config = _read_json(path / CONFIG_FILE)
    differences = config_differences(saved_config, template.config)
    if differences:
        raise CheckpointError(
            f"checkpoint {path} was written with another agent configuration:\n  "
            + "\n  ".join(differences)
        )
    try:
        state = serialization.msgpack_restore((path / AGENT_FILE).read_bytes())
    except Exception as err:  # msgpack's own errors ("Unpack failed") do not name the file
        raise CheckpointError(
            f"{path / AGENT_FILE}: cannot read it ({type(err).__name__}: {err}); the checkpoint "
            "is damaged or incomplete"
        ) from err
    try:
        restored = serialization.from_state_dict(template, state)
    except (ValueError, KeyError) as err:
        raise CheckpointError(f"checkpoint {path} does not fit this agent: {err}") from err
    _check_shapes(template, restored, path)
    return jax.tree.map(
        lambda x: jax.numpy.asarray(x) if isinstance(x, np.ndarray) else x, restored
    )


def _check_shapes(template: Any, restored: Any, path: Path) -> None:
    expected = jax.tree_util.tree_flatten_with_path(template)[0]
    got = jax.tree.leaves(restored)
    for (key_path, want), have in zip(expected, got, strict=True):
        if np.shape(want) != np.shape(have):
            name = jax.tree_util.keystr(key_path)
            raise CheckpointError(
                f"checkpoint {path}: tensor {name} has shape {np.shape(have)}, "
                f"the agent expects {np.shape(want)} (different observation or action space?)"
            )
