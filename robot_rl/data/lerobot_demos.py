"""Our demonstrations <-> LeRobotDataset episodes (``lerobot_format``).

Features: ``observation.state`` -> ``state``, ``observation.<key>`` -> that key,
``observation.images.<camera>`` (or ``observation.image``, one camera) -> that camera, ``action``;
each pair is checked (exists, dtype, shape; a mismatch names both); other frame sizes are
centre-cropped and resampled (``image_fit``). Actions are ours in [-1, 1]: mapped linearly from
``action_low``/``action_high`` (or ``action_bounds_from_data``), else they must already lie in
[-1, 1] (1e-6 slack); that they mean what the task's actions mean is the user's to know. Import: N
frames -> N - 1 transitions; at n x the control rate every n-th frame is kept (rewards summed).
``outcome``: ``dataset`` (``next.reward``/``next.done``), ``success`` (reward 1, terminated at the
end), ``truncated`` (reward 0), ``auto`` (``dataset`` if those features exist). Export: T + 1 frames
per T steps, so a round trip with ``outcome=dataset`` gives the same transitions.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import numpy as np

from robot_rl.data.image_fit import fit_image
from robot_rl.data.lerobot_format import FrameEpisode, LeRobotDataset, LeRobotFormatError
from robot_rl.data.lerobot_write import numeric_feature, video_feature
from robot_rl.data.mcap_demos import DemoEpisode, EpisodeFile

ACTION = "action"
OUTCOMES = ("auto", "dataset", "success", "truncated")


class MappingError(LeRobotFormatError):
    """A feature mapping that does not fit the dataset or the task (one line)."""


@dataclass
class ActionScale:
    """Physical range per action entry that maps onto [-1, 1]; None: the actions are in
    [-1, 1] already."""

    low: np.ndarray | None = None
    high: np.ndarray | None = None
    from_data: bool = False


@dataclass
class ImportPlan:
    """Where each observation key and the action come from, checked against the task."""

    features: dict[str, str]  # our key (or "action") -> dataset feature
    scale: ActionScale = field(default_factory=ActionScale)
    outcome: str = "auto"
    step: int = 1  # keep every step-th frame


def load_mapping_file(path: str | os.PathLike) -> tuple[dict[str, str], ActionScale]:
    """A YAML mapping: ``feature: key`` pairs, either at the top or under ``features:``, and an
    optional ``action_bounds: {low: [...], high: [...]}`` (or ``action_bounds: data``)."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise MappingError(f"{path}: unreadable mapping ({str(err).splitlines()[0]})") from err
    if not isinstance(data, dict):
        raise MappingError(f"{path}: a mapping file is feature: key pairs, got {type(data)}")
    bounds = data.pop("action_bounds", None)
    pairs = data.pop("features", data)
    if not isinstance(pairs, dict) or not all(isinstance(v, str) for v in pairs.values()):
        raise MappingError(f"{path}: features must be dataset feature: our key pairs")
    scale = ActionScale()
    if bounds == "data":
        scale.from_data = True
    elif isinstance(bounds, dict) and set(bounds) == {"low", "high"}:
        scale.low = np.asarray(bounds["low"], np.float64)
        scale.high = np.asarray(bounds["high"], np.float64)
    elif bounds is not None:
        raise MappingError(f"{path}: action_bounds must be {{low: [...], high: [...]}} or 'data'")
    return {str(k): v for k, v in pairs.items()}, scale


def parse_pairs(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``FEATURE=KEY`` strings -> {feature: key}."""
    out = {}
    for pair in pairs:
        feature, sep, key = pair.partition("=")
        if not sep or not feature or not key:
            raise MappingError(f"--map {pair!r}: expected FEATURE=KEY (observation.state=state)")
        out[feature] = key
    return out


def _is_image(space: gym.spaces.Box) -> bool:
    return space.dtype == np.uint8 and len(space.shape) == 3


def plan_import(
    dataset: LeRobotDataset,
    observation_space: gym.spaces.Dict,
    action_space: gym.spaces.Box,
    control_hz: float,
    *,
    pairs: dict[str, str] | None = None,
    scale: ActionScale | None = None,
    outcome: str = "auto",
    task_name: str = "the task",
) -> ImportPlan:
    """Resolve and check the mapping field by field; each problem is one ``MappingError``."""
    features = dataset.features
    targets = [*observation_space.spaces, ACTION]
    chosen: dict[str, str] = {}
    for feature, key in (pairs or {}).items():
        if feature not in features:
            raise MappingError(
                f"mapping: the dataset has no feature {feature!r} "
                f"(it has {', '.join(_data_features(dataset))})"
            )
        if key not in targets:
            raise MappingError(
                f"mapping: {feature!r} -> {key!r}: {task_name} observes "
                f"{', '.join(observation_space.spaces)}; map to one of those or 'action'"
            )
        if key in chosen:
            raise MappingError(f"mapping: {key!r} is mapped twice ({chosen[key]}, {feature})")
        chosen[key] = feature
    for key in targets:
        if key in chosen:
            continue
        found = next((c for c in _default_names(key, observation_space) if c in features), None)
        if found is None:
            raise MappingError(
                f"{task_name}'s {'action' if key == ACTION else f'observation {key!r}'} has no "
                f"dataset feature: map one with --map FEATURE={key} (the dataset has "
                f"{', '.join(_data_features(dataset))})"
            )
        chosen[key] = found
    for key, feature in chosen.items():
        space = action_space if key == ACTION else observation_space[key]
        _check_feature(dataset, feature, key, space, task_name)
    plan = ImportPlan(chosen, scale or ActionScale(), outcome, _frame_step(dataset, control_hz))
    if outcome not in OUTCOMES:
        raise MappingError(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
    has_outcome = all(k in features for k in ("next.reward", "next.done"))
    if outcome == "dataset" and not has_outcome:
        raise MappingError("--outcome dataset: the dataset has no next.reward and next.done")
    if outcome == "auto":
        plan.outcome = "dataset" if has_outcome else "success"
    _check_scale(plan.scale, action_space)
    return plan


def _data_features(dataset: LeRobotDataset) -> list[str]:
    index = ("timestamp", "frame_index", "episode_index", "index", "task_index")
    return [k for k in dataset.features if k not in index]


def _default_names(key: str, observation_space: gym.spaces.Dict) -> list[str]:
    if key == ACTION:
        return [ACTION]
    if _is_image(observation_space[key]):
        cameras = [k for k, s in observation_space.spaces.items() if _is_image(s)]
        single = ["observation.image"] if len(cameras) == 1 else []
        return [f"observation.images.{key}", *single]
    return ["observation.state"] if key == "state" else [f"observation.{key}"]


def _check_feature(dataset, feature: str, key: str, space: gym.spaces.Box, task_name) -> None:
    info = dataset.features[feature]
    dtype = str(info.get("dtype"))
    where = f"{feature} -> {key}"
    if _is_image(space):
        if dtype not in ("video", "image"):
            raise MappingError(f"{where}: {task_name}'s {key!r} is a camera, {feature} is {dtype}")
        shape = dataset.image_shape(feature)
        if len(shape) != 3 or shape[2] != 3:
            raise MappingError(f"{where}: expected RGB frames (H, W, 3), got shape {shape}")
        return
    if dtype in ("video", "image", "string"):
        raise MappingError(f"{where}: {task_name}'s {key!r} is a vector, {feature} is {dtype}")
    if not (dtype.startswith(("float", "int", "uint")) or dtype == "bool"):
        raise MappingError(f"{where}: dtype {dtype} is not numeric")
    shape = tuple(int(s) for s in info.get("shape", ()))
    if int(np.prod(shape)) != int(np.prod(space.shape)):
        raise MappingError(
            f"{where}: the dataset's shape {shape} does not fit {task_name}'s {key!r} "
            f"{tuple(space.shape)}"
        )


def _frame_step(dataset: LeRobotDataset, control_hz: float) -> int:
    ratio = dataset.fps / control_hz
    step = round(ratio)
    if step < 1 or abs(ratio - step) > 1e-6:
        raise MappingError(
            f"the dataset runs at {dataset.fps:g} fps and the task at {control_hz:g} Hz: "
            "only an integer multiple of the task's rate can be resampled"
        )
    return step


def _check_scale(scale: ActionScale, action_space: gym.spaces.Box) -> None:
    if (scale.low is None) != (scale.high is None):
        raise MappingError("action bounds need both --action-low and --action-high")
    if scale.low is None:
        return
    size = int(np.prod(action_space.shape))
    scale.low = np.asarray(scale.low, np.float64).reshape(-1)
    scale.high = np.asarray(scale.high, np.float64).reshape(-1)
    if scale.low.shape != (size,) or scale.high.shape != (size,):
        raise MappingError(
            f"action bounds: {size} entries each expected, got {scale.low.size} and "
            f"{scale.high.size}"
        )
    if not np.all(scale.high > scale.low):
        bad = int(np.argmin(scale.high > scale.low))
        raise MappingError(f"action bounds: entry {bad} has high <= low")


def data_action_bounds(dataset: LeRobotDataset, feature: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-entry min and max of an action feature over the whole dataset (its frames, not the
    possibly rounded stats.json)."""
    lows, highs = [], []
    for episode in dataset.episodes:
        values = dataset.frames(episode, [feature]).values[feature]
        values = values.reshape(len(values), -1).astype(np.float64)
        lows.append(values.min(axis=0))
        highs.append(values.max(axis=0))
    low, high = np.min(lows, axis=0), np.max(highs, axis=0)
    return low, np.where(high > low, high, low + 1.0)  # a constant entry maps to -1


def scale_actions(actions: np.ndarray, scale: ActionScale, feature: str) -> np.ndarray:
    actions = np.asarray(actions, np.float64).reshape(len(actions), -1)
    if not np.all(np.isfinite(actions)):
        raise MappingError(f"{feature}: actions that are not finite")
    if scale.low is not None:
        actions = 2.0 * (actions - scale.low) / (scale.high - scale.low) - 1.0
    outside = np.abs(actions) > 1.0 + 1e-6
    if np.any(outside):
        entry = int(np.argmax(outside.any(axis=0)))
        low, high = actions[:, entry].min(), actions[:, entry].max()
        how = "after scaling by the bounds given" if scale.low is not None else ""
        raise MappingError(
            f"{feature} entry {entry} spans [{low:.4g}, {high:.4g}] {how}, outside [-1, 1] "
            "(our actions are normalised): give its physical range with --action-low/"
            "--action-high, or --action-bounds-from-data"
        )
    return np.clip(actions, -1.0, 1.0).astype(np.float32)


def import_episodes(
    dataset: LeRobotDataset,
    plan: ImportPlan,
    observation_space: gym.spaces.Dict,
    action_space: gym.spaces.Box,
) -> Iterator[tuple[DemoEpisode, FrameEpisode]]:
    """Each dataset episode (of at least 2 kept frames) as a DemoEpisode, with its frames."""
    image_size = {
        k: s.shape[0] for k, s in observation_space.spaces.items() if _is_image(s)
    }  # square, the task's image size
    by_feature: dict[str, list[str]] = {}
    for key, feature in plan.features.items():
        by_feature.setdefault(feature, []).append(key)
    if plan.scale.from_data:
        low, high = data_action_bounds(dataset, plan.features[ACTION])
        plan.scale = ActionScale(low, high)
    size = next(iter(image_size.values()), None)
    transform = (lambda image: fit_image(image, size)) if size else None
    for row in dataset.episodes:
        frames = dataset.frames(row, list(by_feature), transform)
        kept = np.arange(0, len(frames), plan.step)
        if len(kept) < 2:
            continue
        observations = []
        for i in kept:
            obs = {}
            for key, space in observation_space.spaces.items():
                value = frames.values[plan.features[key]][i]
                obs[key] = np.asarray(value, space.dtype).reshape(space.shape)
            observations.append(obs)
        feature = plan.features[ACTION]
        actions = scale_actions(frames.values[feature][kept[:-1]], plan.scale, feature)
        actions = actions.reshape(len(kept) - 1, *action_space.shape)
        rewards, terminated, truncated = _outcome(plan, frames.values, kept)
        episode = DemoEpisode(
            observations=observations,
            actions=actions,
            rewards=rewards,
            terminated=terminated,
            truncated=truncated,
        )
        yield episode, frames


def _outcome(plan: ImportPlan, values: dict, kept: np.ndarray):
    steps = len(kept) - 1
    rewards = np.zeros(steps, np.float32)
    terminated = np.zeros(steps, bool)
    truncated = np.zeros(steps, bool)
    if plan.outcome == "dataset":
        reward = np.asarray(values["next.reward"], np.float64).reshape(-1)
        done = np.asarray(values["next.done"]).reshape(-1).astype(bool)
        for k in range(steps):
            window = slice(kept[k], kept[k + 1])
            rewards[k] = reward[window].sum()
            terminated[k] = bool(done[window].any())
        end = int(np.argmax(terminated)) if terminated.any() else None
        if end is not None and end < steps - 1:  # nothing after a termination is a transition
            raise MappingError(
                f"next.done is set at frame {kept[end]} before the episode's last frame: "
                "split episodes at their ends, or --outcome success|truncated"
            )
    elif plan.outcome == "success":
        rewards[-1], terminated[-1] = 1.0, True
    truncated[-1] = not terminated[-1]
    return rewards, terminated, truncated


# ---------------------------------------------------------------------------------------------
# export


def export_feature_name(key: str, space: gym.spaces.Box) -> str:
    if _is_image(space):
        return f"observation.images.{key}"
    return "observation.state" if key == "state" else f"observation.{key}"


def export_episodes(
    files: list[EpisodeFile],
) -> tuple[list[FrameEpisode], dict[str, dict]]:
    """Our episodes as LeRobot frames and the features that describe them."""
    first = files[0]
    features: dict[str, dict] = {}
    for key, space in first.observation_space.spaces.items():
        name = export_feature_name(key, space)
        if _is_image(space):
            features[name] = video_feature(space.shape[0], space.shape[1])
        else:
            features[name] = {"dtype": "float32", "shape": list(space.shape), "names": None}
    features[ACTION] = {"dtype": "float32", "shape": list(first.action_space.shape), "names": None}
    out = []
    for loaded in files:
        episode = loaded.episode
        values: dict[str, np.ndarray] = {}
        for key, space in loaded.observation_space.spaces.items():
            values[export_feature_name(key, space)] = np.stack(
                [np.asarray(o[key], space.dtype) for o in episode.observations]
            )
        values[ACTION] = np.concatenate([episode.actions, episode.actions[-1:]]).astype(np.float32)
        values["next.reward"] = np.append(episode.rewards, 0.0).astype(np.float32)
        values["next.done"] = np.append(episode.terminated, True).astype(bool)
        out.append(FrameEpisode(values, task=str(episode.info.get("task", ""))))
    features["next.reward"] = numeric_feature(out[0].values["next.reward"])
    features["next.done"] = numeric_feature(out[0].values["next.done"])
    return out, features
