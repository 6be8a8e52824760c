"""LeRobotDataset files (the layout LeRobot keeps on the Hugging Face Hub), read and written with
``pyarrow`` and PyAV (``av``); no ROS 2, torch or ``lerobot`` import.

v3.0 layout (``codebase_version`` "v3.0", what this module writes)::

    meta/info.json                           fps, features (dtype, shape, names), path templates
    meta/stats.json                          min/max/mean/std/count per feature
    meta/tasks.parquet                       task strings (the pandas index) -> task_index
    meta/episodes/chunk-000/file-000.parquet one row per episode: length, data and video offsets
    data/chunk-000/file-000.parquet          one row per frame: the features + timestamp,
                                             frame_index, episode_index, index, task_index
    videos/<key>/chunk-000/file-000.mp4      one camera, every episode one after another; an
                                             episode's frames are at from_timestamp + timestamp

Reading also takes v2.1 (one parquet and one MP4 per episode, ``meta/episodes.jsonl``); any other
version is refused in one line. Video frames are decoded by timestamp (within half a frame).
Writing is ``lerobot_write``, the Hub ``lerobot_hub``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robot_rl.errors import UserError

CODEBASE_VERSION = "v3.0"
READABLE_VERSIONS = ("v3.0", "v2.1")
INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
TASKS_PATH = "meta/tasks.parquet"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
CHUNKS_SIZE = 1000
INDEX_FEATURES = ("timestamp", "frame_index", "episode_index", "index", "task_index")
EXTRA = "pip install -e '.[lerobot]'"


class LeRobotFormatError(UserError):
    """A folder that is not a LeRobotDataset this module reads, or a write that cannot be done."""


def need(module: str):
    """Import ``module``, or a one-line error naming the extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise LeRobotFormatError(
            f"LeRobotDataset files need {module.split('.')[0]} ({err}): {EXTRA}"
        ) from err


@dataclass
class FrameEpisode:
    """One episode as LeRobot frames: ``values`` (feature -> (N, *shape) array, videos as
    (N, H, W, 3) uint8), the task string and its index in the dataset."""

    values: dict[str, np.ndarray]
    task: str = ""
    index: int = 0

    def __len__(self) -> int:
        return len(next(iter(self.values.values()))) if self.values else 0


@dataclass
class LeRobotDataset:
    """A dataset on disk: its ``info.json``, its task strings and its episodes' rows."""

    root: Path
    info: dict
    tasks: list[str]
    episodes: list[dict] = field(default_factory=list)

    @property
    def version(self) -> str:
        return str(self.info.get("codebase_version"))

    @property
    def fps(self) -> float:
        return float(self.info["fps"])

    @property
    def features(self) -> dict[str, dict]:
        return self.info["features"]

    def video_keys(self) -> list[str]:
        return [k for k, f in self.features.items() if f.get("dtype") == "video"]

    def image_shape(self, key: str) -> tuple[int, int, int]:
        """(H, W, C) of a video or image feature, whichever of the two orders ``names`` says
        (LeRobot has written both: channels first in older datasets)."""
        feature = self.features[key]
        shape = tuple(int(s) for s in feature["shape"])
        names = [str(n).lower() for n in (feature.get("names") or [])]
        if (names and names[0] in ("c", "channel", "channels")) or (
            not names and shape[0] in (1, 3) and shape[-1] not in (1, 3)
        ):
            shape = (shape[1], shape[2], shape[0])
        return shape  # type: ignore[return-value]

    def frames(
        self,
        episode: dict,
        keys: list[str],
        image_transform: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> FrameEpisode:
        """The frames of one episode (a row of ``episodes``), for ``keys`` (and the index
        columns and ``next.*`` columns present). Images go through ``image_transform`` as they
        are decoded, so a long episode of large frames is never held at full size."""
        return _episode_frames(self, episode, keys, image_transform)


# ---------------------------------------------------------------------------------------------
# reading


def read_dataset(root: str | os.PathLike) -> LeRobotDataset:
    """Open a LeRobotDataset folder (v3.0 or v2.1); one-line errors for anything else."""
    root = Path(root)
    info_path = root / INFO_PATH
    if not info_path.is_file():
        raise LeRobotFormatError(f"{root}: not a LeRobotDataset (no {INFO_PATH})")
    try:
        info = json.loads(info_path.read_text())
    except (OSError, ValueError) as err:
        raise LeRobotFormatError(f"{info_path}: unreadable ({err})") from err
    version = info.get("codebase_version")
    if version not in READABLE_VERSIONS:
        raise LeRobotFormatError(
            f"{root}: LeRobotDataset {version or 'of unknown version'} is not supported (this "
            f"reads {' and '.join(READABLE_VERSIONS)}; convert it with LeRobot's "
            "convert_dataset_v21_to_v30 script first)"
        )
    for key in ("fps", "features"):
        if key not in info:
            raise LeRobotFormatError(f"{info_path}: no {key!r} entry")
    if version == "v3.0":
        tasks, episodes = _v3_tasks(root), _v3_episodes(root)
    else:
        tasks, episodes = _v21_tasks(root), _v21_episodes(root)
    return LeRobotDataset(root, info, tasks, episodes)


def _read_table(path: Path):
    pq = need("pyarrow.parquet")
    if not path.is_file():
        raise LeRobotFormatError(f"missing file {path}")
    try:
        return pq.read_table(path)
    except Exception as err:  # pyarrow raises several types for a damaged file
        raise LeRobotFormatError(f"{path}: not a readable parquet file ({err})") from err


def _v3_tasks(root: Path) -> list[str]:
    table = _read_table(root / TASKS_PATH)
    names = table.column_names
    # LeRobot writes a pandas frame whose index (the task strings) is a column of the file
    meta = json.loads((table.schema.metadata or {}).get(b"pandas", b"{}") or b"{}")
    index = [c for c in meta.get("index_columns", []) if isinstance(c, str) and c in names]
    column = "task" if "task" in names else (index[0] if index else None)
    if column is None or "task_index" not in names:
        raise LeRobotFormatError(f"{root / TASKS_PATH}: expected task strings and task_index")
    tasks = dict(zip(table["task_index"].to_pylist(), table[column].to_pylist(), strict=True))
    return [tasks.get(i, "") for i in range(max(tasks, default=-1) + 1)]


def _v3_episodes(root: Path) -> list[dict]:
    files = sorted((root / "meta" / "episodes").glob("chunk-*/file-*.parquet"))
    if not files:
        raise LeRobotFormatError(f"{root}: no meta/episodes/chunk-*/file-*.parquet")
    rows: list[dict] = []
    for path in files:
        table = _read_table(path)
        keep = [c for c in table.column_names if not c.startswith("stats/")]
        rows += table.select(keep).to_pylist()
    return sorted(rows, key=lambda r: r["episode_index"])


def _jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        raise LeRobotFormatError(f"missing file {path}")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _v21_tasks(root: Path) -> list[str]:
    tasks = {int(t["task_index"]): t["task"] for t in _jsonl(root / "meta" / "tasks.jsonl")}
    return [tasks.get(i, "") for i in range(max(tasks, default=-1) + 1)]


def _v21_episodes(root: Path) -> list[dict]:
    return sorted(_jsonl(root / "meta" / "episodes.jsonl"), key=lambda r: r["episode_index"])


def _data_path(dataset: LeRobotDataset, episode: dict) -> Path:
    index = int(episode["episode_index"])
    if dataset.version == "v2.1":
        chunk = index // int(dataset.info.get("chunks_size", CHUNKS_SIZE))
        relative = dataset.info["data_path"].format(episode_chunk=chunk, episode_index=index)
    else:
        relative = dataset.info.get("data_path", DATA_PATH).format(
            chunk_index=int(episode["data/chunk_index"]),
            file_index=int(episode["data/file_index"]),
        )
    return dataset.root / relative


def _video_path(dataset: LeRobotDataset, episode: dict, key: str) -> tuple[Path, float]:
    """The MP4 that holds ``key`` for ``episode``, and the episode's start time in it."""
    index = int(episode["episode_index"])
    if dataset.version == "v2.1":
        chunk = index // int(dataset.info.get("chunks_size", CHUNKS_SIZE))
        relative = dataset.info["video_path"].format(
            episode_chunk=chunk, episode_index=index, video_key=key
        )
        return dataset.root / relative, 0.0
    relative = dataset.info.get("video_path", VIDEO_PATH).format(
        video_key=key,
        chunk_index=int(episode[f"videos/{key}/chunk_index"]),
        file_index=int(episode[f"videos/{key}/file_index"]),
    )
    return dataset.root / relative, float(episode[f"videos/{key}/from_timestamp"])


def column_array(table, name: str) -> np.ndarray:
    """A parquet column as (N, *inner) numpy: scalars, (fixed-size) lists, lists of lists."""
    pa = need("pyarrow")
    column = table[name].combine_chunks()
    rows = outer = len(column)
    inner = []
    while pa.types.is_list(column.type) or pa.types.is_fixed_size_list(column.type):
        column = column.flatten()
        inner.append(len(column) // outer if outer else 0)
        outer = len(column)
    values = column.to_numpy(zero_copy_only=False)
    return np.asarray(values).reshape(rows, *inner)


_FRAME_COLUMNS = ("next.reward", "next.done", "next.success")


def _episode_frames(dataset, episode, keys, image_transform) -> FrameEpisode:
    pc = need("pyarrow.compute")
    table = _read_table(_data_path(dataset, episode))
    index = int(episode["episode_index"])
    if "episode_index" in table.column_names:
        table = table.filter(pc.equal(table["episode_index"], index))
    if "frame_index" in table.column_names:
        table = table.sort_by("frame_index")
    if table.num_rows == 0:
        raise LeRobotFormatError(f"{dataset.root}: episode {index} has no frames")
    wanted = [*keys, *(c for c in (*INDEX_FEATURES, *_FRAME_COLUMNS) if c not in keys)]
    values: dict[str, np.ndarray] = {}
    for key in wanted:
        feature = dataset.features.get(key, {})
        if feature.get("dtype") == "video":
            stamps = column_array(table, "timestamp").reshape(-1).astype(np.float64)
            path, start = _video_path(dataset, episode, key)
            values[key] = decode_frames(path, start + stamps, dataset.fps, image_transform)
        elif feature.get("dtype") == "image":
            values[key] = _png_frames(table, key, image_transform)
        elif key in table.column_names:
            values[key] = column_array(table, key)
    task_index = int(values["task_index"].reshape(-1)[0]) if "task_index" in values else 0
    task = dataset.tasks[task_index] if task_index < len(dataset.tasks) else ""
    return FrameEpisode(values, task=task, index=index)


def _png_frames(table, key: str, image_transform) -> np.ndarray:
    import io

    from PIL import Image

    frames = []
    for cell in table[key].to_pylist():
        data = cell.get("bytes") if isinstance(cell, dict) else cell
        image = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        frames.append(image_transform(image) if image_transform else image)
    return np.stack(frames)


# ---------------------------------------------------------------------------------------------
# video (decoding)


def decode_frames(
    path: Path,
    timestamps: np.ndarray,
    fps: float,
    image_transform: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """The frames of an MP4 at ``timestamps`` (s), each the decoded frame nearest in time and
    within half a frame period, as (N, H, W, 3) uint8 (after ``image_transform``)."""
    av = need("av")
    if not path.is_file():
        raise LeRobotFormatError(f"missing video {path}")
    tolerance = 0.5 / fps
    wanted = np.asarray(timestamps, np.float64)
    order = np.argsort(wanted)
    out: list[np.ndarray | None] = [None] * len(wanted)
    best = np.full(len(wanted), np.inf)
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            first = float(wanted[order[0]])
            if first > 1.0 and stream.time_base:
                container.seek(int(max(first - 1.0, 0) / stream.time_base), stream=stream)
            cursor = 0
            for frame in container.decode(stream):
                if frame.time is None:
                    continue
                t = float(frame.time)
                if t > wanted[order[-1]] + tolerance:
                    break
                while cursor < len(order) and wanted[order[cursor]] < t - tolerance:
                    cursor += 1
                k = cursor
                image = None
                while k < len(order) and abs(wanted[order[k]] - t) <= tolerance:
                    i = order[k]
                    if abs(wanted[i] - t) < best[i]:
                        if image is None:
                            image = frame.to_ndarray(format="rgb24")
                            image = image_transform(image) if image_transform else image
                        out[i], best[i] = image, abs(wanted[i] - t)
                    k += 1
    except av.error.FFmpegError as err:
        raise LeRobotFormatError(f"{path}: cannot decode ({err})") from err
    missing = [float(wanted[i]) for i in range(len(out)) if out[i] is None]
    if missing:
        raise LeRobotFormatError(
            f"{path}: no frame within {tolerance * 1000:.0f} ms of t = {missing[0]:.3f} s "
            f"({len(missing)} timestamps without a frame)"
        )
    return np.stack(out)  # type: ignore[arg-type]


def iter_episodes(
    dataset: LeRobotDataset,
    keys: list[str],
    image_transform: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Iterator[FrameEpisode]:
    for episode in dataset.episodes:
        yield dataset.frames(episode, keys, image_transform)
