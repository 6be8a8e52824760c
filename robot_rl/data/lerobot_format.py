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
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
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
VIDEO_CODEC = "libx264"
VIDEO_CRF = 18
"""x264's constant quality: 18 is visually lossless; yuv420p halves colour resolution, so a
round trip is exact to a few grey levels on smooth images, not bit for bit."""
EXTRA = "pip install -e '.[lerobot]'"


class LeRobotFormatError(UserError):
    """A folder that is not a LeRobotDataset this module reads, or a write that cannot be done."""


def _need(module: str):
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
    pq = _need("pyarrow.parquet")
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
    pa = _need("pyarrow")
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
    pc = _need("pyarrow.compute")
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
# video


def encode_video(path: Path, frames: np.ndarray, fps: float) -> dict:
    """Frames (N, H, W, 3) uint8 as an H.264 MP4 at ``fps`` (frame i at i / fps); returns the
    feature's ``info`` entries."""
    av = _need("av")
    frames = np.asarray(frames, np.uint8)
    height, width = frames.shape[1:3]
    # yuv420p (what every player and LeRobot's decoders take) needs even sides
    pix_fmt = "yuv420p" if height % 2 == 0 and width % 2 == 0 else "yuv444p"
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as container:
        stream = container.add_stream(VIDEO_CODEC, rate=Fraction(fps).limit_denominator(100000))
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        stream.options = {"crf": str(VIDEO_CRF), "g": "2"}
        for image in frames:
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return {
        "video.height": int(height),
        "video.width": int(width),
        "video.codec": "h264",
        "video.pix_fmt": pix_fmt,
        "video.is_depth_map": False,
        "video.fps": float(fps),
        "video.channels": 3,
        "has_audio": False,
    }


def decode_frames(
    path: Path,
    timestamps: np.ndarray,
    fps: float,
    image_transform: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """The frames of an MP4 at ``timestamps`` (s), each the decoded frame nearest in time and
    within half a frame period, as (N, H, W, 3) uint8 (after ``image_transform``)."""
    av = _need("av")
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


# ---------------------------------------------------------------------------------------------
# writing


def numeric_feature(values: np.ndarray, names: list[str] | None = None) -> dict:
    shape = list(values.shape[1:]) or [1]
    dtype = {"b": "bool", "i": "int64", "u": "int64"}.get(values.dtype.kind, "float32")
    return {"dtype": dtype, "shape": shape, "names": names}


def video_feature(height: int, width: int) -> dict:
    return {
        "dtype": "video",
        "shape": [height, width, 3],
        "names": ["height", "width", "channels"],
        "info": None,
    }


def _arrow_column(values: np.ndarray, dtype: str):
    pa = _need("pyarrow")
    kind = {"float32": pa.float32(), "float64": pa.float64(), "int64": pa.int64()}
    arrow_type = pa.bool_() if dtype == "bool" else kind.get(dtype, pa.float32())
    np_type = {"bool": np.bool_, "int64": np.int64, "float64": np.float64}.get(dtype, np.float32)
    values = np.asarray(values, np_type)
    if values.ndim == 1 or values.shape[1:] == (1,):
        return pa.array(values.reshape(-1), arrow_type)
    flat = pa.array(values.reshape(len(values), -1).reshape(-1), arrow_type)
    return pa.FixedSizeListArray.from_arrays(flat, int(np.prod(values.shape[1:])))


def _stats(values: np.ndarray, image: bool) -> dict:
    values = np.asarray(values, np.float64)
    if image:  # per channel, in [0, 1], shaped (C, 1, 1) as LeRobot's image statistics
        flat = values.reshape(-1, values.shape[-1]) / 255.0
        reduce = lambda f: f(flat, axis=0).reshape(-1, 1, 1).tolist()
    else:
        flat = values.reshape(len(values), -1)
        reduce = lambda f: f(flat, axis=0).tolist()
    return {
        "min": reduce(np.min),
        "max": reduce(np.max),
        "mean": reduce(np.mean),
        "std": reduce(np.std),
        "count": [len(values)],
    }


def _tasks_table(tasks: list[str]):
    """meta/tasks.parquet as pandas writes LeRobot's frame: the strings are its index."""
    pa = _need("pyarrow")
    pandas_meta = {
        "index_columns": ["task"],
        "column_indexes": [],
        "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64",
             "numpy_type": "int64", "metadata": None},
            {"name": "task", "field_name": "task", "pandas_type": "unicode",
             "numpy_type": "object", "metadata": None},
        ],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.0",
    }  # fmt: skip
    table = pa.table(
        {"task_index": pa.array(range(len(tasks)), pa.int64()), "task": pa.array(tasks)}
    )
    return table.replace_schema_metadata({b"pandas": json.dumps(pandas_meta).encode()})


def write_dataset(
    root: str | os.PathLike,
    episodes: list[FrameEpisode],
    features: dict[str, dict],
    fps: float,
    *,
    robot_type: str | None = None,
) -> Path:
    """Write ``episodes`` as a v3.0 LeRobotDataset in ``root`` (which must not hold one).

    ``features``: feature -> {"dtype", "shape", "names"} for every key of the episodes' values
    (``video_feature`` for cameras); the index features are added here. One data file, one
    episodes file and one video file per camera (LeRobot starts a new file past 100 MB of data
    or 200 MB of video; readers follow the indices, so fewer, larger files read the same)."""
    pa, pq = _need("pyarrow"), _need("pyarrow.parquet")
    root = Path(root)
    if (root / INFO_PATH).exists():
        raise LeRobotFormatError(f"{root} already holds a LeRobotDataset; choose another folder")
    if not episodes:
        raise LeRobotFormatError("nothing to write: no episodes")
    features = {k: dict(v) for k, v in features.items()}
    video_keys = [k for k, f in features.items() if f["dtype"] == "video"]
    tasks = list(dict.fromkeys(e.task for e in episodes))
    columns: dict[str, list[np.ndarray]] = {k: [] for k in features if k not in video_keys}
    index_columns: dict[str, list[np.ndarray]] = {k: [] for k in INDEX_FEATURES}
    video_frames: dict[str, list[np.ndarray]] = {k: [] for k in video_keys}
    episode_rows, total = [], 0
    video_clock = dict.fromkeys(video_keys, 0.0)
    for number, episode in enumerate(episodes):
        n = len(episode)
        row = {
            "episode_index": number,
            "tasks": [episode.task],
            "length": n,
            "data/chunk_index": 0,
            "data/file_index": 0,
            "dataset_from_index": total,
            "dataset_to_index": total + n,
        }
        for key in video_keys:
            row[f"videos/{key}/chunk_index"] = 0
            row[f"videos/{key}/file_index"] = 0
            row[f"videos/{key}/from_timestamp"] = video_clock[key]
            row[f"videos/{key}/to_timestamp"] = video_clock[key] + n / fps
            video_clock[key] += n / fps
            video_frames[key].append(np.asarray(episode.values[key], np.uint8))
        row["meta/episodes/chunk_index"] = 0
        row["meta/episodes/file_index"] = 0
        episode_rows.append(row)
        for key in columns:
            values = np.asarray(episode.values[key])
            if len(values) != n:
                raise ValueError(f"episode {number}: {key} has {len(values)} frames, not {n}")
            columns[key].append(values)
        index_columns["timestamp"].append(np.arange(n) / fps)
        index_columns["frame_index"].append(np.arange(n))
        index_columns["episode_index"].append(np.full(n, number))
        index_columns["index"].append(np.arange(total, total + n))
        index_columns["task_index"].append(np.full(n, tasks.index(episode.task)))
        total += n
    features.update(
        timestamp={"dtype": "float32", "shape": [1], "names": None},
        frame_index={"dtype": "int64", "shape": [1], "names": None},
        episode_index={"dtype": "int64", "shape": [1], "names": None},
        index={"dtype": "int64", "shape": [1], "names": None},
        task_index={"dtype": "int64", "shape": [1], "names": None},
    )
    stats = {}
    for key in video_keys:
        frames = np.concatenate(video_frames[key])
        path = root / VIDEO_PATH.format(video_key=key, chunk_index=0, file_index=0)
        features[key]["info"] = encode_video(path, frames, fps)
        stats[key] = _stats(frames, image=True)
    arrays = {}
    for key, parts in {**columns, **index_columns}.items():
        values = np.concatenate(parts)
        arrays[key] = _arrow_column(values, features[key]["dtype"])
        stats[key] = _stats(values, image=False)
    data_path = root / DATA_PATH.format(chunk_index=0, file_index=0)
    data_path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(arrays), data_path)
    episodes_path = root / EPISODES_PATH.format(chunk_index=0, file_index=0)
    episodes_path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(episode_rows), episodes_path)
    pq.write_table(_tasks_table(tasks), root / TASKS_PATH)
    info = {
        "codebase_version": CODEBASE_VERSION,
        "robot_type": robot_type,
        "total_episodes": len(episodes),
        "total_frames": total,
        "total_tasks": len(tasks),
        "chunks_size": CHUNKS_SIZE,
        "data_files_size_in_mb": 100,
        "video_files_size_in_mb": 200,
        "fps": fps if not float(fps).is_integer() else int(fps),
        "splits": {"train": f"0:{len(episodes)}"},
        "data_path": DATA_PATH,
        "video_path": VIDEO_PATH if video_keys else None,
        "features": features,
    }
    (root / INFO_PATH).write_text(json.dumps(info, indent=4))
    (root / STATS_PATH).write_text(json.dumps(stats, indent=4))
    return root


def iter_episodes(
    dataset: LeRobotDataset,
    keys: list[str],
    image_transform: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Iterator[FrameEpisode]:
    for episode in dataset.episodes:
        yield dataset.frames(episode, keys, image_transform)


# ---------------------------------------------------------------------------------------------
# the Hugging Face Hub


def _hub():
    try:
        import huggingface_hub
    except ImportError as err:
        raise LeRobotFormatError(f"the Hugging Face Hub needs huggingface_hub: {EXTRA}") from err
    return huggingface_hub


def looks_like_repo_id(text: str) -> bool:
    parts = str(text).split("/")
    return len(parts) == 2 and all(parts) and not str(text).startswith((".", "~"))


def resolve_dataset(repo_or_dir: str, revision: str | None = None) -> Path:
    """A local folder as it is (it wins over a Hub repository of the same name), else the Hub
    dataset ``user/name`` downloaded into the Hugging Face cache (``snapshot_download``)."""
    path = Path(repo_or_dir).expanduser()
    if path.exists() or not looks_like_repo_id(repo_or_dir):
        if not path.is_dir():
            raise LeRobotFormatError(f"no LeRobotDataset folder at {path}")
        return path
    hub = _hub()
    try:
        local = hub.snapshot_download(repo_or_dir, repo_type="dataset", revision=revision)
    except Exception as err:  # offline, unknown repository, no access: one line
        raise LeRobotFormatError(
            f"cannot download the Hub dataset {repo_or_dir}: {type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}"
        ) from err
    return Path(local)


def push_dataset(root: str | os.PathLike, repo_id: str, *, private: bool = False) -> str:
    """Upload a written dataset to the Hub dataset ``repo_id`` and tag it with the codebase
    version (LeRobot's loader picks the revision by that tag). Returns the repository's URL."""
    if not looks_like_repo_id(repo_id):
        raise LeRobotFormatError(f"--push wants a Hub dataset id user/name, got {repo_id!r}")
    hub = _hub()
    api = hub.HfApi()
    try:
        url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.upload_folder(repo_id=repo_id, folder_path=str(root), repo_type="dataset")
        api.create_tag(repo_id, tag=CODEBASE_VERSION, repo_type="dataset", exist_ok=True)
    except Exception as err:
        raise LeRobotFormatError(
            f"cannot push to the Hub dataset {repo_id}: {type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}"
        ) from err
    return str(url)
