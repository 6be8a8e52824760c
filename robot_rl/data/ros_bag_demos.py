"""A ROS 2 bag of the robot's topics (MCAP: ``ros2 bag record``) as demonstration episodes.

Steps: the bag is resampled at the task's control rate; each tick's reading is what the ROS backend
would have read (``robot_rl.ros.reading_entries``, ``robot_rl.ros.sync.synchronise`` over messages
stamped at or before the tick, staleness bound ``max_age``), observed by ``task.observe``. Actions:
``/teleop/twist`` and ``/teleop/joy`` through ``TeleopMapping.action`` (older than
``teleop_max_age``: released), then ``task.to_command``; ``/arm/cmd/*`` is not used. An episode
starts at the first fresh tick with a non-zero action and ends at the operator's verdict on
``success_topic`` (Joy success button: kept, reward 1 and terminated there; reject: dropped;
``std_msgs/Bool`` True: success) or at a stale tick or the bag's end (dropped unless
``all_success``, which makes every episode a success and ignores verdicts). A camera's
``camera_info`` in the bag, fitted as its frames are, goes with the episodes (``camera_model``).
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robot_rl.data.camera_model import from_camera_info
from robot_rl.data.mcap_demos import DemoEpisode
from robot_rl.data.mcap_topics import camera_info_topic, camera_topic
from robot_rl.envs.backend import StaleReadingError
from robot_rl.errors import UserError

TWIST_TOPIC = "/teleop/twist"
JOY_TOPIC = "/teleop/joy"
ARM_NAMESPACE = "/arm"


class BagError(UserError):
    """A bag that cannot give demonstrations for this task (one line)."""


@dataclass(frozen=True)
class BagRules:
    success_topic: str = JOY_TOPIC
    success_button: int = 3
    reject_button: int = 4
    all_success: bool = False
    max_age: float = 0.3
    slop: float = 0.1
    teleop_max_age: float = 0.3


class _History:
    """One topic's (stamp, entries) up to a tick: what ``synchronise`` reads of a live
    ``TopicHistory`` at that moment."""

    def __init__(self, topic: str, window: float):
        self.topic, self.window = topic, window
        self.stamps: list[float] = []
        self.entries: list[dict] = []
        self.now = -np.inf

    def snapshot(self) -> list[tuple[float, dict]]:
        end = bisect.bisect_right(self.stamps, self.now)
        start = bisect.bisect_left(self.stamps, self.now - self.window, 0, end)
        start = min(start, max(end - 1, 0))
        return list(zip(self.stamps[start:end], self.entries[start:end], strict=True))

    def newest(self, now: float, max_age: float):
        end = bisect.bisect_right(self.stamps, now)
        if end and now - self.stamps[end - 1] <= max_age:
            return self.entries[end - 1]
        return None


def bag_files(path: str | os.PathLike) -> list[Path]:
    path = Path(path)
    if path.is_file():
        return [path]
    files = sorted(path.glob("*.mcap")) if path.is_dir() else []
    if not files:
        raise BagError(f"no ROS 2 bag at {path} (an .mcap file, or a bag folder holding them)")
    return files


def _stamp(message, decoded) -> float:
    header = getattr(decoded, "header", None)
    if header is not None and (header.stamp.sec or header.stamp.nanosec):
        return header.stamp.sec + header.stamp.nanosec * 1e-9
    return message.log_time * 1e-9


def _read(files: list[Path], converters: dict, raw_topics: set[str]):
    """Per topic, (stamps, values) sorted by stamp: converted reading entries for the sensor
    topics, the decoded messages for ``raw_topics``; and each topic's schema name."""
    from mcap.exceptions import McapError
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    data: dict[str, list] = {}
    schemas: dict[str, str] = {}
    wanted = [*converters, *raw_topics]
    for file in files:
        try:
            with open(file, "rb") as stream:
                reader = make_reader(stream, decoder_factories=[DecoderFactory()])
                summary = reader.get_summary()
                if summary is not None:
                    for channel in summary.channels.values():
                        schema = summary.schemas.get(channel.schema_id)
                        schemas[channel.topic] = schema.name if schema else ""
                for schema, channel, message, decoded in reader.iter_decoded_messages(
                    topics=wanted
                ):
                    schemas[channel.topic] = schema.name if schema else ""
                    convert = converters.get(channel.topic)
                    try:
                        value = convert(decoded) if convert else decoded
                    except (ValueError, KeyError):
                        continue  # malformed data never becomes a reading, as live
                    data.setdefault(channel.topic, []).append((_stamp(message, decoded), value))
        except McapError as err:
            raise BagError(f"{file}: not a readable MCAP bag ({err})") from err
    return {t: sorted(v, key=lambda e: e[0]) for t, v in data.items()}, schemas


def bag_episodes(
    path: str | os.PathLike, task, rules: BagRules | None = None
) -> Iterator[DemoEpisode]:
    """The demonstrations in the bag at ``path`` for ``task`` (module docstring: the rules)."""
    from robot_rl.ros.reading_entries import ARM_TOPICS, camera_entries
    from robot_rl.ros.sync import synchronise
    from robot_rl.ros.teleop import TeleopMapping
    from robot_rl.runtime.interventions import teleop_axes

    rules = rules or BagRules()
    if task.robot != "arm":
        raise BagError(f"bags of the {task.robot} are not supported yet (arm tasks only)")
    files = bag_files(path)
    converters = {f"{ARM_NAMESPACE}/{rel}": fn for rel, (_, fn) in ARM_TOPICS.items()}
    for camera in task.cameras:
        converters[camera_topic(camera)] = camera_entries(camera, task.image_size)
    verdict = None if rules.all_success else rules.success_topic
    infos = {camera_info_topic(c): c for c in task.cameras}
    raw = {TWIST_TOPIC, JOY_TOPIC, *infos} | ({verdict} if verdict else set())
    data, schemas = _read(files, converters, raw)
    # the images' intrinsics: each camera's last camera_info in the bag, fitted as its frames
    cameras = {
        c: from_camera_info(data[t][-1][1], task.image_size) for t, c in infos.items() if t in data
    }
    missing = [camera_topic(c) for c in task.cameras if camera_topic(c) not in data]
    if missing:
        raise BagError(f"{path}: no messages on {', '.join(missing)} (a camera the task observes)")
    sensors = [t for t in converters if t in data]
    if not any(t.startswith(ARM_NAMESPACE + "/") for t in sensors):
        raise BagError(f"{path}: no arm topics ({', '.join(converters)}) in the bag")
    if TWIST_TOPIC not in data and JOY_TOPIC not in data:
        raise BagError(f"{path}: no teleop messages ({TWIST_TOPIC}, {JOY_TOPIC}): no actions")
    if verdict and verdict not in data:
        raise BagError(
            f"{path}: no messages on {verdict} to say which episodes succeeded: give "
            "--success-topic, or --all-success"
        )
    window = max(1.0, 2 * (rules.max_age + rules.slop))
    histories = []
    for topic in sensors:
        history = _History(topic, window)
        history.stamps = [s for s, _ in data[topic]]
        history.entries = [e for _, e in data[topic]]
        histories.append(history)
    teleop = {t: _History(t, window) for t in (TWIST_TOPIC, JOY_TOPIC)}
    for topic, history in teleop.items():
        history.stamps = [s for s, _ in data.get(topic, [])]
        history.entries = [m for _, m in data.get(topic, [])]
    events = _verdicts(data.get(verdict, []), schemas.get(verdict, ""), rules) if verdict else []
    mapping = TeleopMapping(axes=teleop_axes(task, task.action_space().shape[0]))
    start = max(h.stamps[0] for h in histories)
    end = max(h.stamps[-1] for h in histories)
    period = 1.0 / task.control_hz
    recorder = _EpisodeRecorder(task, rules, cameras)
    event_index, previous = 0, -np.inf
    for k in range(int(np.floor((end - start) / period)) + 1):
        tick = start + k * period
        for history in histories:
            history.now = tick
        try:
            reading, _ = synchronise(histories, tick, rules.max_age, rules.slop)
        except StaleReadingError:
            reading = None
        said = None
        while event_index < len(events) and events[event_index][0] <= tick:
            if events[event_index][0] > previous:
                said = said if said == "reject" else events[event_index][1]  # reject wins
            event_index += 1
        previous = tick
        twist = teleop[TWIST_TOPIC].newest(tick, rules.teleop_max_age)
        joy = teleop[JOY_TOPIC].newest(tick, rules.teleop_max_age)
        action = None
        if twist is not None or joy is not None:
            deflection = None
            if twist is not None:
                t = twist.twist
                deflection = [t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y,
                              t.angular.z]  # fmt: skip
            action = mapping.action(deflection, tuple(joy.buttons) if joy is not None else ())
        episode = recorder.tick(reading, action, said)
        if episode is not None:
            yield episode
    episode = recorder.finish()
    if episode is not None:
        yield episode


def _verdicts(messages, schema: str, rules: BagRules) -> list[tuple[float, str]]:
    """(time, 'success' | 'reject') presses: a button's edge from released to pressed (the
    first message seen with it down counts), or a Bool True after a False (or first)."""
    out, down = [], {"success": False, "reject": False}
    for stamp, message in messages:
        if schema.endswith("Joy"):
            buttons = list(message.buttons)
            states = {
                "success": rules.success_button < len(buttons)
                and bool(buttons[rules.success_button]),
                "reject": rules.reject_button < len(buttons) and bool(buttons[rules.reject_button]),
            }
        elif schema.endswith("Bool"):
            states = {"success": bool(message.data), "reject": False}
        else:
            raise BagError(f"success topic of type {schema or 'unknown'}: expected Joy or Bool")
        for name, state in states.items():
            if state and not down[name]:
                out.append((stamp, name))
            down[name] = state
    return out


class _EpisodeRecorder:
    """Steps -> episodes, by the module's rules."""

    def __init__(self, task, rules: BagRules, cameras: dict):
        self.task, self.rules, self.cameras = task, rules, cameras
        self._reset()

    def _reset(self) -> None:
        self.observations, self.readings, self.actions = [], [], []
        self.pending = None  # the action chosen at the last tick, applied until this one

    def _observe(self, reading):
        try:
            return self.task.observe(reading)
        except KeyError as err:
            raise BagError(
                f"the bag has no topic for the reading {err.args[0]!r} that {self.task.name} "
                "observes (docs/ARCHITECTURE.md: the arm's topics)"
            ) from None

    def tick(self, reading, action, said) -> DemoEpisode | None:
        recording = bool(self.observations)
        if reading is None:  # a gap: the episode ends without a verdict
            return self._end(success=self.rules.all_success) if recording else None
        if recording:
            self.observations.append(self._observe(reading))
            self.readings.append(_device(reading))
            self.actions.append(self.pending)
            if said is not None:
                return self._end(success=said == "success")
        elif action is None or not np.any(action != 0):
            return None  # waiting for the operator to move
        else:
            self.observations.append(self._observe(reading))
            self.readings.append(_device(reading))
        command = np.zeros(self.task.action_space().shape, np.float32) if action is None else action
        _, self.pending = self.task.to_command(command, reading)
        return None

    def _end(self, success: bool) -> DemoEpisode | None:
        observations, readings, actions = self.observations, self.readings, self.actions
        self._reset()
        if not success or not actions:
            return None
        steps = len(actions)
        rewards = np.zeros(steps, np.float32)
        terminated = np.zeros(steps, bool)
        rewards[-1], terminated[-1] = 1.0, True
        return DemoEpisode(
            observations=observations,
            actions=np.stack(actions).astype(np.float32),
            rewards=rewards,
            terminated=terminated,
            truncated=np.zeros(steps, bool),
            readings=readings,
            cameras={c: model for c, model in self.cameras.items() if model},
            info={"source": "ros2 bag", "judge": "all-success" if self.rules.all_success else ""},
        )

    def finish(self) -> DemoEpisode | None:
        return self._end(success=self.rules.all_success) if self.observations else None


def _device(reading) -> dict:
    return {k: v for k, v in reading.items() if not k.startswith("image/")}
