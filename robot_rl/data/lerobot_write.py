"""Writing a v3.0 LeRobotDataset (the layout in ``robot_rl.data.lerobot_format``): features,
statistics, the data, episodes and tasks parquet files, and each camera's frames as one H.264
MP4, with ``pyarrow`` and PyAV (``av``); no ROS 2, torch or ``lerobot`` import."""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path

import numpy as np

from robot_rl.data.lerobot_format import (
    CHUNKS_SIZE,
    CODEBASE_VERSION,
    DATA_PATH,
    EPISODES_PATH,
    INDEX_FEATURES,
    INFO_PATH,
    STATS_PATH,
    TASKS_PATH,
    VIDEO_PATH,
    FrameEpisode,
    LeRobotFormatError,
    need,
)

VIDEO_CODEC = "libx264"
VIDEO_CRF = 18
"""x264's constant quality: 18 is visually lossless; yuv420p halves colour resolution, so a
round trip is exact to a few grey levels on smooth images, not bit for bit."""


def encode_video(path: Path, frames: np.ndarray, fps: float) -> dict:
    """Frames (N, H, W, 3) uint8 as an H.264 MP4 at ``fps`` (frame i at i / fps); returns the
    feature's ``info`` entries."""
    av = need("av")
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
    pa = need("pyarrow")
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
    pa = need("pyarrow")
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
    pa, pq = need("pyarrow"), need("pyarrow.parquet")
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
