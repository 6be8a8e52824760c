"""Demonstrations as MCAP files with ROS 2 message encoding, one episode per file.

At the control rate (stamps ``start + k / control_hz``) a file holds the robot's topics, each
camera observation on ``/<camera>_cam/image_raw`` (rgb8, the task's image size, stored once),
every other observation key on ``/robot_rl/observation/<key>`` (Float32MultiArray), the applied
action on ``/robot_rl/action``, and ``/robot_rl/reward``, ``/robot_rl/terminated``,
``/robot_rl/truncated``. Every message of step k has sequence number k; transition k is
``(obs_k, action_k, reward_{k+1}, terminated_{k+1}, truncated_{k+1}, obs_{k+1})``, exact after a
round trip. Spaces, control rate and free-form facts are in the ``robot_rl.episode`` metadata.
For other tools (``mcap_topics``; the reader ignores them): with ``readings``, the TCP on ``/tf``
each step; with ``cameras``, each camera's ``/<camera>_cam/camera_info`` at every image's stamp
and the known mounts on ``/tf_static`` once, at the first stamp.
Writing needs the ROS 2 message packages (``ros_schemas``); reading only ``mcap`` and
``mcap-ros2-support``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import numpy as np

from robot_rl.data.camera_model import CameraModel
from robot_rl.data.mcap_topics import (
    arm_messages,
    camera_frame,
    camera_topic,
    frame_messages,
    image_from_message,
    image_message,
)
from robot_rl.data.replay import ReplayBuffer
from robot_rl.data.spaces_json import (
    box_from_json,
    box_to_json,
    describe_differences,
    dict_space_from_json,
    dict_space_to_json,
)
from robot_rl.errors import UserError

FORMAT = "robot_rl.demo/1"
METADATA_NAME = "robot_rl.episode"
OBSERVATION_PREFIX = "/robot_rl/observation/"
ACTION_TOPIC = "/robot_rl/action"
REWARD_TOPIC = "/robot_rl/reward"
TERMINATED_TOPIC = "/robot_rl/terminated"
TRUNCATED_TOPIC = "/robot_rl/truncated"
ARRAY_TYPE = "std_msgs/msg/Float32MultiArray"
FLOAT_TYPE = "std_msgs/msg/Float32"
BOOL_TYPE = "std_msgs/msg/Bool"


class DemoFormatError(UserError):
    """A file that is not a robot_rl demonstration, or one that does not fit the buffer."""


@dataclass
class DemoEpisode:
    """One episode: T + 1 observations around T steps (flags are per step, numpy arrays)."""

    observations: list[dict[str, np.ndarray]]
    actions: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    readings: list[dict[str, np.ndarray]] | None = None
    """Backend readings beside each observation (device topics only; optional)."""
    info: dict[str, str] = field(default_factory=dict)
    """Free-form facts stored in the metadata (task, source, seed, ...)."""
    cameras: dict[str, CameraModel] = field(default_factory=dict)
    """Per camera observation key, what its recorded image shows (``camera_model``): written as
    ``camera_info`` and ``/tf_static``, not read back (optional)."""

    def __post_init__(self) -> None:
        steps = len(self.actions)
        if steps < 1 or len(self.observations) != steps + 1:
            raise ValueError(
                f"an episode needs T >= 1 actions and T + 1 observations, "
                f"got {steps} and {len(self.observations)}"
            )
        for name in ("rewards", "terminated", "truncated"):
            if len(getattr(self, name)) != steps:
                raise ValueError(
                    f"{name}: expected {steps} entries, got {len(getattr(self, name))}"
                )
        if self.readings is not None and len(self.readings) != steps + 1:
            raise ValueError(f"readings: expected {steps + 1}, got {len(self.readings)}")

    def __len__(self) -> int:
        return len(self.actions)

    def transitions(self) -> Iterator[tuple]:
        """``(obs, action, reward, terminated, truncated, next_obs)`` as ReplayBuffer.add takes."""
        for k in range(len(self)):
            yield (
                self.observations[k],
                self.actions[k],
                self.rewards[k],
                bool(self.terminated[k]),
                bool(self.truncated[k]),
                self.observations[k + 1],
            )


def _is_image(space: gym.spaces.Box) -> bool:
    return space.dtype == np.uint8 and len(space.shape) == 3


def _check_spaces(observation_space: gym.spaces.Dict) -> None:
    for key, space in observation_space.spaces.items():
        if not _is_image(space) and space.dtype != np.float32:
            raise DemoFormatError(
                f"observation {key!r}: only float32 vectors and uint8 HxWxC images can be "
                f"recorded exactly, got {space.dtype} {space.shape}"
            )


def _array_message(values: np.ndarray, label: str) -> dict:
    flat = np.asarray(values, np.float32).reshape(-1)
    return {
        "layout": {
            "dim": [{"label": label, "size": flat.size, "stride": flat.size}],
            "data_offset": 0,
        },
        "data": flat.tolist(),
    }


def _check_cameras(cameras: dict[str, CameraModel], observation_space: gym.spaces.Dict) -> None:
    for key, model in cameras.items():
        space = observation_space.spaces.get(key)
        if space is None or not _is_image(space):
            raise ValueError(f"cameras: {key!r} is not an image observation")
        if (model.height, model.width) != space.shape[:2]:
            raise ValueError(
                f"cameras: {key!r} describes {model.width}x{model.height} images, its "
                f"observation is {space.shape[1]}x{space.shape[0]}"
            )


def write_episode(
    path: str | os.PathLike,
    episode: DemoEpisode,
    observation_space: gym.spaces.Dict,
    action_space: gym.spaces.Box,
    *,
    control_hz: float,
    start_time_ns: int | None = None,
) -> Path:
    """Write ``episode`` to ``path`` (.mcap) atomically: a temporary file, fsync, rename."""
    from mcap_ros2.writer import Writer  # lazily: the core library imports without it

    from robot_rl.data.ros_schemas import message_definition

    _check_spaces(observation_space)
    _check_cameras(episode.cameras, observation_space)
    if control_hz <= 0:
        raise ValueError(f"control_hz must be > 0, got {control_hz}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    start = time.time_ns() if start_time_ns is None else int(start_time_ns)
    period_ns = 1e9 / control_hz
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as stream:
        writer = Writer(stream)
        schemas: dict = {}

        def put(topic: str, type_name: str, message: dict, step: int, stamp: int) -> None:
            if type_name not in schemas:
                schemas[type_name] = writer.register_msgdef(
                    type_name, message_definition(type_name)
                )
            writer.write_message(topic, schemas[type_name], message, stamp, stamp, step)

        for k, obs in enumerate(episode.observations):
            stamp = start + round(k * period_ns)
            if episode.readings is not None:
                for topic, type_name, message in arm_messages(episode.readings[k], stamp):
                    put(topic, type_name, message, k, stamp)
            reading = episode.readings[k] if episode.readings is not None else None
            for topic, type_name, message in frame_messages(
                episode.cameras, reading, stamp, k == 0
            ):
                put(topic, type_name, message, k, stamp)
            for key, space in observation_space.spaces.items():
                value = np.asarray(obs[key])
                if value.shape != space.shape:
                    raise ValueError(
                        f"observation {k}[{key!r}]: shape {value.shape}, expected {space.shape}"
                    )
                if _is_image(space):
                    message = image_message(value.astype(np.uint8), stamp, camera_frame(key))
                    put(camera_topic(key), "sensor_msgs/msg/Image", message, k, stamp)
                else:
                    put(OBSERVATION_PREFIX + key, ARRAY_TYPE, _array_message(value, key), k, stamp)
            if k < len(episode):
                action = _array_message(episode.actions[k], "action")
                put(ACTION_TOPIC, ARRAY_TYPE, action, k, stamp)
            if k >= 1:  # the outcome of action k - 1 arrives with observation k
                outcome = (
                    (REWARD_TOPIC, FLOAT_TYPE, float(episode.rewards[k - 1])),
                    (TERMINATED_TOPIC, BOOL_TYPE, bool(episode.terminated[k - 1])),
                    (TRUNCATED_TOPIC, BOOL_TYPE, bool(episode.truncated[k - 1])),
                )
                for topic, type_name, value in outcome:
                    put(topic, type_name, {"data": value}, k, stamp)
        meta = {
            "format": FORMAT,
            "observation_space": json.dumps(dict_space_to_json(observation_space)),
            "action_space": json.dumps(box_to_json(action_space)),
            "control_hz": repr(float(control_hz)),
            "steps": str(len(episode)),
            **{str(k): str(v) for k, v in episode.info.items()},
        }
        writer.add_metadata(METADATA_NAME, meta)
        writer.finish()
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(tmp, path)
    return path


@dataclass
class EpisodeFile:
    episode: DemoEpisode
    observation_space: gym.spaces.Dict
    action_space: gym.spaces.Box
    control_hz: float


def read_episode(path: str | os.PathLike) -> EpisodeFile:
    """Rebuild the episode in ``path`` from its ``/robot_rl/*`` and camera topics."""
    from mcap.exceptions import McapError
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    path = Path(path)
    try:
        with open(path, "rb") as stream:
            reader = make_reader(stream, decoder_factories=[DecoderFactory()])
            meta = next(
                (m.metadata for m in reader.iter_metadata() if m.name == METADATA_NAME), None
            )
            if meta is None or meta.get("format") != FORMAT:
                found = meta.get("format") if meta else "no robot_rl.episode metadata"
                raise DemoFormatError(f"{path}: not a {FORMAT} demonstration ({found})")
            obs_space = dict_space_from_json(json.loads(meta["observation_space"]))
            action_space = box_from_json(json.loads(meta["action_space"]))
            steps = int(meta["steps"])
            topics = _topics_by_key(obs_space)
            wanted = [*topics, ACTION_TOPIC, REWARD_TOPIC, TERMINATED_TOPIC, TRUNCATED_TOPIC]
            by_topic: dict[str, dict[int, object]] = {t: {} for t in wanted}
            for _, channel, message, decoded in reader.iter_decoded_messages(topics=wanted):
                by_topic[channel.topic][message.sequence] = decoded
    except McapError as err:
        raise DemoFormatError(f"{path}: not a readable MCAP file ({err})") from err

    def need(topic: str, k: int):
        try:
            return by_topic[topic][k]
        except KeyError:
            raise DemoFormatError(f"{path}: step {k} has no message on {topic}") from None

    observations = []
    for k in range(steps + 1):
        obs = {}
        for topic, key in topics.items():
            space = obs_space[key]
            if _is_image(space):
                value = image_from_message(need(topic, k))
            else:
                value = np.asarray(need(topic, k).data, np.float32).reshape(space.shape)
            if value.shape != space.shape:
                raise DemoFormatError(
                    f"{path}: {topic} at step {k} has shape {value.shape}, expected {space.shape}"
                )
            obs[key] = value
        observations.append(obs)
    actions = np.stack([np.asarray(need(ACTION_TOPIC, k).data, np.float32) for k in range(steps)])
    if actions.shape[1:] != action_space.shape:
        raise DemoFormatError(
            f"{path}: actions of shape {actions.shape[1:]}, expected {action_space.shape}"
        )
    episode = DemoEpisode(
        observations=observations,
        actions=actions,
        rewards=np.array([need(REWARD_TOPIC, k).data for k in range(1, steps + 1)], np.float32),
        terminated=np.array([need(TERMINATED_TOPIC, k).data for k in range(1, steps + 1)], bool),
        truncated=np.array([need(TRUNCATED_TOPIC, k).data for k in range(1, steps + 1)], bool),
        info={k: v for k, v in meta.items() if k not in _RESERVED_META},
    )
    return EpisodeFile(episode, obs_space, action_space, float(meta["control_hz"]))


_RESERVED_META = ("format", "observation_space", "action_space", "control_hz", "steps")


def _topics_by_key(observation_space: gym.spaces.Dict) -> dict[str, str]:
    return {
        (camera_topic(key) if _is_image(space) else OBSERVATION_PREFIX + key): key
        for key, space in observation_space.spaces.items()
    }


def _spaces_json(holder: ReplayBuffer | EpisodeFile) -> dict:
    return {
        "observation_space": dict_space_to_json(holder.observation_space),
        "action_space": box_to_json(holder.action_space),
    }


def demo_files(path: str | os.PathLike) -> list[Path]:
    """``path`` itself, or the ``*.mcap`` files directly in a directory (sorted by name)."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"no demonstration file or directory at {path}")
    files = sorted(p for p in path.glob("*.mcap") if p.is_file())
    if not files:
        raise FileNotFoundError(f"no *.mcap demonstration files in {path}")
    return files


def load_demos(
    path: str | os.PathLike,
    buffer: ReplayBuffer | None = None,
    *,
    files: Sequence[Path] | None = None,
) -> tuple[ReplayBuffer, dict]:
    """Add every transition of the demos at ``path`` (file or directory) to ``buffer``; without
    one, one just large enough is made with the files' spaces. A file recorded with other spaces
    than the buffer's is refused with the differences named. Returns the buffer and counts
    (episodes, transitions)."""
    files = list(files) if files is not None else demo_files(path)
    episodes = [(f, read_episode(f)) for f in files]
    if buffer is None:
        total = sum(len(e.episode) for _, e in episodes)
        first = episodes[0][1]
        # every episode of T transitions holds T + 1 frames: room for all of them, or the
        # oldest frames (the first transitions) would be overwritten
        buffer = ReplayBuffer(
            first.observation_space,
            first.action_space,
            max(total, 1),
            frame_capacity=total + len(episodes) + 1,
        )
    want = _spaces_json(buffer)
    for file, loaded in episodes:
        differences = describe_differences(want, _spaces_json(loaded))
        if differences:
            raise DemoFormatError(
                f"{file} was recorded for other spaces than this run's "
                f"(cameras, image size, task?): "
                + "; ".join(differences[:5]).replace(" log", " file")
            )
    transitions = 0
    for _, loaded in episodes:
        for transition in loaded.episode.transitions():
            buffer.add(*transition)
            transitions += 1
    return buffer, {"episodes": len(episodes), "transitions": transitions}
