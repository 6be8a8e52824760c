"""LeRobotDataset export and import: the v3.0 layout read back by `datasets`/pyarrow as LeRobot's
loader reads it (the `lerobot` package itself pins another torch, so it is not installed here),
and export -> import giving the same transitions (images within the codec's tolerance)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow", reason="needs the lerobot extra: pip install -e '.[lerobot]'")
pytest.importorskip("av", reason="needs the lerobot extra: pip install -e '.[lerobot]'")

import pyarrow.parquet as pq  # noqa: E402

from robot_rl.cli import main  # noqa: E402
from robot_rl.data import lerobot_format, lerobot_write  # noqa: E402
from robot_rl.data.mcap_demos import (  # noqa: E402
    DemoEpisode,
    load_demos,
    read_episode,
    write_episode,
)
from robot_rl.envs.task import make_task  # noqa: E402

SIZE = 32
IMAGE_TOLERANCE = 4.0
"""Mean absolute error (grey levels) of a camera frame after H.264 (crf 18, yuv420p)."""
OBSERVE = ["--task", "pick_cube", "--cameras", "front", "--image-size", str(SIZE), "--robot-mode"]


def _task():
    return make_task("pick_cube", cameras=("front",), image_size=SIZE, privileged_state=False)


def _image(k: int, size: int = SIZE) -> np.ndarray:
    y, x = np.mgrid[0:size, 0:size]
    return np.stack(
        [(x * 6 + k * 9) % 256, (y * 6) % 256, np.full_like(x, (k * 15) % 256)], -1
    ).astype(np.uint8)


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    """Two recorded episodes (one terminated, one truncated) in our MCAP format."""
    root = tmp_path_factory.mktemp("demos")
    task, rng = _task(), np.random.default_rng(0)
    for number, (steps, terminated) in enumerate([(4, True), (6, False)]):
        last = np.arange(steps) == steps - 1
        episode = DemoEpisode(
            observations=[
                {"state": rng.normal(size=7).astype(np.float32), "front": _image(k)}
                for k in range(steps + 1)
            ],
            actions=rng.uniform(-1, 1, (steps, 4)).astype(np.float32),
            rewards=rng.normal(size=steps).astype(np.float32),
            terminated=last if terminated else np.zeros(steps, bool),
            truncated=np.zeros(steps, bool) if terminated else last,
            info={"task": "pick_cube"},
        )
        write_episode(
            root / f"episode_{number:03d}.mcap",
            episode,
            task.observation_space(),
            task.action_space(),
            control_hz=task.control_hz,
        )
    return root


@pytest.fixture(scope="module")
def exported(demos, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "lerobot"
    assert main(["export-demos", "--to", "lerobot", str(out), "--demo-path", str(demos)]) == 0
    return out


def test_export_has_the_v3_layout_that_lerobot_reads(exported):
    info = json.loads((exported / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0"
    assert info["fps"] == 10 and info["total_episodes"] == 2 and info["total_frames"] == 5 + 7
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    features = info["features"]
    assert features["observation.state"] == {"dtype": "float32", "shape": [7], "names": None}
    assert features["action"]["shape"] == [4]
    video = features["observation.images.front"]
    assert video["dtype"] == "video" and video["shape"] == [SIZE, SIZE, 3]
    assert video["info"]["video.codec"] == "h264" and video["info"]["video.fps"] == 10
    for key in ("timestamp", "frame_index", "episode_index", "index", "task_index"):
        assert key in features
    stats = json.loads((exported / "meta/stats.json").read_text())
    assert np.array(stats["observation.images.front"]["mean"]).shape == (3, 1, 1)
    assert (exported / "videos/observation.images.front/chunk-000/file-000.mp4").is_file()

    # the frames, as LeRobot's loader reads them: `datasets` over the data parquet files
    datasets = pytest.importorskip("datasets")
    frames = datasets.load_dataset(
        "parquet", data_files=str(exported / "data/*/*.parquet"), split="train"
    )
    assert frames.num_rows == 12
    assert frames.features["observation.state"].length == 7
    assert frames["episode_index"] == [0] * 5 + [1] * 7
    assert frames["index"] == list(range(12))
    assert frames["frame_index"][5:] == list(range(7))
    assert frames["next.done"][4] and frames["next.done"][11]
    np.testing.assert_allclose(frames["timestamp"][:5], np.arange(5) / 10, atol=1e-6)

    episodes = pq.read_table(exported / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert [e["length"] for e in episodes] == [5, 7]
    assert [e["dataset_from_index"] for e in episodes] == [0, 5]
    assert [e["dataset_to_index"] for e in episodes] == [5, 12]
    assert episodes[1]["videos/observation.images.front/from_timestamp"] == pytest.approx(0.5)
    assert episodes[1]["videos/observation.images.front/to_timestamp"] == pytest.approx(1.2)
    assert episodes[0]["tasks"] == ["pick_cube"]
    pandas = pytest.importorskip("pandas")
    tasks = pandas.read_parquet(exported / "meta/tasks.parquet")  # the strings are its index
    assert list(tasks.index) == ["pick_cube"] and list(tasks["task_index"]) == [0]


def test_export_then_import_gives_the_same_transitions(demos, exported, tmp_path):
    back = tmp_path / "back"
    code = main(["import-demos", "--from", "lerobot", str(exported), *OBSERVE, "--out", str(back)])
    assert code == 0
    originals = sorted(demos.glob("*.mcap"))
    imported = sorted(back.glob("*.mcap"))
    assert len(imported) == len(originals) == 2
    for original, again in zip(originals, imported, strict=True):
        a, b = read_episode(original).episode, read_episode(again).episode
        assert len(a) == len(b)
        for ta, tb in zip(a.transitions(), b.transitions(), strict=True):
            np.testing.assert_array_equal(ta[0]["state"], tb[0]["state"])
            np.testing.assert_array_equal(ta[1], tb[1])  # actions
            assert ta[2:5] == tb[2:5]  # reward, terminated, truncated
            np.testing.assert_array_equal(ta[5]["state"], tb[5]["state"])
            error = np.abs(ta[0]["front"].astype(int) - tb[0]["front"].astype(int)).mean()
            assert error <= IMAGE_TOLERANCE
    _, counts = load_demos(back)  # what --demo-path does
    assert counts == {"episodes": 2, "transitions": 10}


def _foreign_dataset(root, actions_scale=1.0, fps=10, image=48, with_outcome=False):
    """A dataset as LeRobot records one: other names, other image size, no next.reward."""
    rng = np.random.default_rng(1)
    episodes = []
    for n in (6, 8):
        values = {
            "observation.state": rng.normal(size=(n, 7)).astype(np.float32),
            "observation.images.cam_high": np.stack([_image(k, image) for k in range(n)]),
            "action": (rng.uniform(-1, 1, (n, 4)) * actions_scale).astype(np.float32),
        }
        if with_outcome:
            values["next.reward"] = np.zeros(n, np.float32)
            values["next.done"] = np.arange(n) == n - 1
        episodes.append(lerobot_format.FrameEpisode(values, task="pick the cube"))
    features = {
        "observation.state": lerobot_write.numeric_feature(episodes[0].values["observation.state"]),
        "observation.images.cam_high": lerobot_write.video_feature(image, image),
        "action": lerobot_write.numeric_feature(episodes[0].values["action"]),
    }
    if with_outcome:
        for key in ("next.reward", "next.done"):
            features[key] = lerobot_write.numeric_feature(episodes[0].values[key])
    lerobot_write.write_dataset(root, episodes, features, fps)
    return episodes


def test_import_maps_features_resizes_and_counts_every_episode_a_success(tmp_path):
    source = _foreign_dataset(tmp_path / "ds")
    mapping = tmp_path / "map.yaml"
    mapping.write_text("features:\n  observation.images.cam_high: front\n")
    out = tmp_path / "demos"
    args = ["import-demos", "--from", "lerobot", str(tmp_path / "ds"), *OBSERVE]
    assert main([*args, "--mapping", str(mapping), "--out", str(out)]) == 0
    files = sorted(out.glob("*.mcap"))
    assert len(files) == 2
    loaded = read_episode(files[1])
    episode = loaded.episode
    assert len(episode) == 7  # 8 frames: 7 transitions
    np.testing.assert_array_equal(episode.actions, source[1].values["action"][:7])
    assert episode.rewards.tolist() == [0.0] * 6 + [1.0]  # no next.reward: 'success'
    assert episode.terminated[-1] and not episode.truncated.any()
    assert episode.observations[0]["front"].shape == (SIZE, SIZE, 3)
    assert episode.info["source"].startswith("lerobot:")
    assert episode.info["lerobot_task"] == "pick the cube"


def test_mapping_errors_are_one_line_each(tmp_path, capsys):
    _foreign_dataset(tmp_path / "ds", actions_scale=3.0, fps=15)
    base = ["import-demos", "--from", "lerobot", str(tmp_path / "ds"), *OBSERVE]
    cases = [
        ([], "observation 'front' has no dataset feature"),
        (["--map", "observation.images.nope=front"], "the dataset has no feature"),
        (["--map", "observation.images.cam_high=rear"], "map to one of those or 'action'"),
        (["--map", "observation.images.cam_high=front", "action=state"], "does not fit"),
        (["--map", "observation.images.cam_high=front"], "only an integer multiple"),
    ]
    for extra, expected in cases:
        assert main([*base, *extra, "--out", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and expected in err, err
        assert "\n" not in err


def test_actions_outside_the_unit_box_need_bounds(tmp_path, capsys):
    _foreign_dataset(tmp_path / "ds", actions_scale=3.0)
    base = ["import-demos", "--from", "lerobot", str(tmp_path / "ds"), *OBSERVE]
    base += ["--map", "observation.images.cam_high=front"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 2
    assert "outside [-1, 1]" in capsys.readouterr().err
    bounds = ["--action-low", *["-3"] * 4, "--action-high", *["3"] * 4]
    assert main([*base, *bounds, "--out", str(tmp_path / "b")]) == 0
    actions = read_episode(sorted((tmp_path / "b").glob("*.mcap"))[0]).episode.actions
    assert np.abs(actions).max() <= 1.0 and np.abs(actions).max() > 0.5
    assert main([*base, "--action-bounds-from-data", "--out", str(tmp_path / "c")]) == 0
    actions = np.concatenate(
        [read_episode(f).episode.actions for f in sorted((tmp_path / "c").glob("*.mcap"))]
    )
    assert actions.min() >= -1.0 and actions.max() <= 1.0


def test_a_dataset_at_twice_the_rate_is_resampled(tmp_path):
    _foreign_dataset(tmp_path / "ds", fps=20, with_outcome=True)
    out = tmp_path / "demos"
    args = ["import-demos", "--from", "lerobot", str(tmp_path / "ds"), *OBSERVE]
    assert main([*args, "--map", "observation.images.cam_high=front", "--out", str(out)]) == 0
    episode = read_episode(sorted(out.glob("*.mcap"))[1]).episode
    assert len(episode) == 3  # frames 0, 2, 4, 6 of 8
    assert episode.truncated[-1] and not episode.terminated.any()  # outcome 'dataset'


def test_other_versions_are_refused_in_one_line(tmp_path):
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta/info.json").write_text(json.dumps({"codebase_version": "v2.0"}))
    with pytest.raises(lerobot_format.LeRobotFormatError, match=r"v2\.0 is not supported"):
        lerobot_format.read_dataset(tmp_path)


def test_reads_the_v21_layout(tmp_path):
    """One parquet per episode, meta/*.jsonl, video per episode from t = 0."""
    root = tmp_path / "v21"
    (root / "meta").mkdir(parents=True)
    rows = []
    for index, n in enumerate((3, 4)):
        table = pa.table(
            {
                "observation.state": pa.FixedSizeListArray.from_arrays(
                    pa.array(np.arange(n * 2, dtype=np.float32)), 2
                ),
                "timestamp": pa.array(np.arange(n) / 10, pa.float32()),
                "frame_index": pa.array(range(n), pa.int64()),
                "episode_index": pa.array([index] * n, pa.int64()),
                "task_index": pa.array([0] * n, pa.int64()),
            }
        )
        path = root / f"data/chunk-000/episode_{index:06d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        lerobot_write.encode_video(
            root / f"videos/chunk-000/cam/episode_{index:06d}.mp4",
            np.stack([_image(k, 16) for k in range(n)]),
            10,
        )
        rows.append({"episode_index": index, "tasks": ["t"], "length": n})
    info = {
        "codebase_version": "v2.1",
        "fps": 10,
        "chunks_size": 1000,
        "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
        "video_path": (
            "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
        ),
        "features": {
            "observation.state": {"dtype": "float32", "shape": [2]},
            "cam": lerobot_write.video_feature(16, 16),
        },
    }
    (root / "meta/info.json").write_text(json.dumps(info))
    (root / "meta/episodes.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (root / "meta/tasks.jsonl").write_text(json.dumps({"task_index": 0, "task": "t"}))
    dataset = lerobot_format.read_dataset(root)
    frames = dataset.frames(dataset.episodes[1], ["observation.state", "cam"])
    assert frames.values["observation.state"].shape == (4, 2)
    assert frames.values["cam"].shape == (4, 16, 16, 3) and frames.task == "t"


def test_hub_pull_and_push_go_through_huggingface_hub(tmp_path, monkeypatch, exported):
    hub = pytest.importorskip("huggingface_hub")
    calls = []

    def snapshot_download(repo_id, repo_type, revision=None):
        calls.append(("download", repo_id, repo_type))
        return str(exported)

    class FakeApi:
        def create_repo(self, repo_id, repo_type, private, exist_ok):
            calls.append(("create", repo_id, repo_type))
            return f"https://huggingface.co/datasets/{repo_id}"

        def upload_folder(self, repo_id, folder_path, repo_type):
            calls.append(("upload", repo_id, sorted(p.name for p in tmp_path.iterdir())))

        def create_tag(self, repo_id, tag, repo_type, exist_ok):
            calls.append(("tag", repo_id, tag))

    monkeypatch.setattr(hub, "snapshot_download", snapshot_download)
    monkeypatch.setattr(hub, "HfApi", FakeApi)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "from_hub"
    code = main(["import-demos", "--from", "lerobot", "someone/pick", *OBSERVE, "--out", str(out)])
    assert code == 0 and len(list(out.glob("*.mcap"))) == 2
    assert calls[0] == ("download", "someone/pick", "dataset")
    code = main(
        ["export-demos", "--to", "lerobot", "pushed", "--demo-path", str(out), "--push", "me/x"]
    )
    assert code == 0
    assert [c[0] for c in calls[1:]] == ["create", "upload", "tag"]
    assert calls[-1] == ("tag", "me/x", "v3.0")
