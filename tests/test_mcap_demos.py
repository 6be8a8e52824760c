"""Demonstrations as MCAP files: exact round trip into the demo buffer, readable by plain tools."""

import importlib.util

import gymnasium as gym
import numpy as np
import pytest
from rich.console import Console

from robot_rl.data.mcap_demos import (
    DemoEpisode,
    DemoFormatError,
    load_demos,
    read_episode,
    write_episode,
)
from robot_rl.data.replay import ReplayBuffer

OBS_SPACE = gym.spaces.Dict(
    {
        "state": gym.spaces.Box(-np.inf, np.inf, (10,), np.float32),
        "front": gym.spaces.Box(0, 255, (16, 16, 3), np.uint8),
    }
)
ACTION_SPACE = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)


def random_episode(rng, steps, ends_terminated=True):
    observations = [
        {
            "state": rng.normal(size=10).astype(np.float32),
            "front": rng.integers(0, 256, (16, 16, 3), dtype=np.uint8),
        }
        for _ in range(steps + 1)
    ]
    readings = [
        {
            "tcp_pos": rng.normal(size=3),
            "tcp_quat": np.array([0.0, 1.0, 0.0, 0.0]),
            "tcp_vel": rng.normal(size=6),
            "joint_pos": rng.normal(size=7),
            "joint_vel": rng.normal(size=7),
            "gripper_pos": rng.uniform(size=1),
            "wrench": rng.normal(size=6),
        }
        for _ in range(steps + 1)
    ]
    last = np.zeros(steps, bool)
    last[-1] = True
    return DemoEpisode(
        observations=observations,
        actions=rng.uniform(-1, 1, (steps, 4)).astype(np.float32),
        rewards=rng.normal(size=steps).astype(np.float32),  # arbitrary float32 bit patterns
        terminated=last if ends_terminated else np.zeros(steps, bool),
        truncated=np.zeros(steps, bool) if ends_terminated else last,
        readings=readings,
        info={"task": "synthetic"},
    )


def all_transitions(buffer):
    return buffer.gather(np.arange(len(buffer)))


def test_round_trip_gives_back_exactly_the_recorded_transitions(tmp_path):
    rng = np.random.default_rng(0)
    episodes = [random_episode(rng, 7), random_episode(rng, 5, ends_terminated=False)]
    direct = ReplayBuffer(OBS_SPACE, ACTION_SPACE, 100)
    for i, episode in enumerate(episodes):
        write_episode(
            tmp_path / f"episode_{i:03d}.mcap", episode, OBS_SPACE, ACTION_SPACE, control_hz=10.0
        )
        for transition in episode.transitions():
            direct.add(*transition)

    loaded, counts = load_demos(tmp_path)
    assert counts == {"episodes": 2, "transitions": 12}
    expected, got = all_transitions(direct), all_transitions(loaded)
    for key in ("actions", "rewards", "terminated", "truncated"):
        assert got[key].dtype == expected[key].dtype
        np.testing.assert_array_equal(got[key], expected[key])
    for side in ("observations", "next_observations"):
        for key in OBS_SPACE.spaces:
            assert got[side][key].dtype == expected[side][key].dtype
            np.testing.assert_array_equal(got[side][key], expected[side][key])

    # into an existing buffer (the training run's demo buffer, with an extra field) as well
    demo_buffer = ReplayBuffer(OBS_SPACE, ACTION_SPACE, 50, extra_fields={"intervened": ((), bool)})
    load_demos(tmp_path / "episode_001.mcap", demo_buffer)
    assert len(demo_buffer) == 5

    again = read_episode(tmp_path / "episode_000.mcap")
    assert again.control_hz == 10.0 and again.episode.info == {"task": "synthetic"}


def test_file_opens_with_a_plain_mcap_reader_and_decodes_as_ros2(tmp_path):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    episode = random_episode(np.random.default_rng(1), 4)
    path = write_episode(
        tmp_path / "e.mcap", episode, OBS_SPACE, ACTION_SPACE, control_hz=10.0, start_time_ns=5e9
    )
    with open(path, "rb") as stream:
        reader = make_reader(stream)
        assert reader.get_header().profile == "ros2"
        summary = reader.get_summary()
    topics = {c.topic: summary.schemas[c.schema_id] for c in summary.channels.values()}
    assert all(c.message_encoding == "cdr" for c in summary.channels.values())
    assert all(s.encoding == "ros2msg" for s in topics.values())
    assert topics["/front_cam/image_raw"].name == "sensor_msgs/msg/Image"
    assert topics["/arm/joint_states"].name == "sensor_msgs/msg/JointState"
    assert topics["/arm/ee_pose"].name == "geometry_msgs/msg/PoseStamped"
    assert topics["/tf"].name == "tf2_msgs/msg/TFMessage"
    assert topics["/robot_rl/action"].name == "std_msgs/msg/Float32MultiArray"
    assert topics["/robot_rl/reward"].name == "std_msgs/msg/Float32"
    counts = summary.statistics.channel_message_counts
    by_topic = {c.topic: counts[c.id] for c in summary.channels.values()}
    assert by_topic["/robot_rl/observation/state"] == 5 and by_topic["/robot_rl/action"] == 4

    stamps, tcp = [], []
    with open(path, "rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        for _, channel, message, decoded in reader.iter_decoded_messages(
            topics=["/arm/ee_pose", "/tf"]
        ):
            if channel.topic == "/tf":  # the TCP in the base frame, as ee_pose has it
                (tf,) = decoded.transforms
                assert (tf.header.frame_id, tf.child_frame_id) == ("base", "tcp")
                tcp.append([tf.transform.translation.x, tf.transform.rotation.x])
                continue
            stamp = decoded.header.stamp
            assert stamp.sec * 10**9 + stamp.nanosec == message.log_time
            stamps.append(message.log_time)
    assert np.diff(stamps).tolist() == [100_000_000] * 4  # the 10 Hz control rate
    expected = [[r["tcp_pos"][0], r["tcp_quat"][1]] for r in episode.readings]
    np.testing.assert_allclose(tcp, expected)  # w x y z readings -> x y z w on the wire

    # rclpy's own deserialiser reads the same bytes as the real message classes (those
    # installed: tf2_msgs has no wheel, the file's own schema decodes /tf above)
    serialization = pytest.importorskip("rclpy.serialization")
    checked = set()
    with open(path, "rb") as stream:
        for schema, _channel, message in make_reader(stream).iter_messages():
            package, _, name = schema.name.split("/")
            if importlib.util.find_spec(package) is None:
                continue
            cls = getattr(importlib.import_module(f"{package}.msg"), name)
            serialization.deserialize_message(message.data, cls)
            checked.add(schema.name)
    assert "sensor_msgs/msg/Image" in checked and "geometry_msgs/msg/PoseStamped" in checked


def test_bad_input_is_refused_with_a_clear_error(tmp_path):
    episode = random_episode(np.random.default_rng(2), 3)
    write_episode(tmp_path / "e.mcap", episode, OBS_SPACE, ACTION_SPACE, control_hz=10.0)
    other = gym.spaces.Dict({"state": gym.spaces.Box(-np.inf, np.inf, (7,), np.float32)})
    with pytest.raises(DemoFormatError, match="other spaces"):
        load_demos(tmp_path, ReplayBuffer(other, ACTION_SPACE, 10))
    with pytest.raises(FileNotFoundError, match="no demonstration file or directory"):
        load_demos(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"no \*.mcap"):
        load_demos(tmp_path / "empty")
    (tmp_path / "junk.mcap").write_bytes(b"not an mcap file")
    with pytest.raises(DemoFormatError, match=r"junk\.mcap"):
        read_episode(tmp_path / "junk.mcap")
    with pytest.raises(ValueError, match="T \\+ 1 observations"):
        DemoEpisode(
            episode.observations[:2],
            episode.actions,
            episode.rewards,
            episode.terminated,
            episode.truncated,
        )


def test_record_demos_then_train_from_them(tmp_path):
    pytest.importorskip("mujoco")
    from robot_rl.cli import main
    from robot_rl.runtime.train_loop import TrainConfig, train

    out = tmp_path / "demos"
    args = ["record-demos", "--task", "pick_cube", "--episodes", "2", "--out", str(out)]
    assert main(args) == 0
    files = sorted(out.glob("*.mcap"))
    assert [f.name for f in files] == ["episode_000.mcap", "episode_001.mcap"]
    recorded = read_episode(files[0])
    assert recorded.episode.info["source"] == "expert" and recorded.episode.terminated[-1]
    assert main(args) == 2  # refuses to mix into a directory that already holds demos

    # no updates (start_steps > total_steps): this checks the loading path, not learning
    console = Console(record=True, width=200)
    run_dir = tmp_path / "run"
    cfg = TrainConfig(
        task="pick_cube",
        demo_path=str(out),
        total_steps=20,
        start_steps=1_000,
        eval_every=20,
        eval_episodes=1,
        run_dir=str(run_dir),
    )
    train(cfg, console=console)
    assert "demos: 2 recorded episodes" in console.export_text()
    stored = ReplayBuffer.load(next((run_dir / "checkpoints").glob("step_*")) / "demos.npz")
    expected, _ = load_demos(out)
    got, want = all_transitions(stored), all_transitions(expected)
    np.testing.assert_array_equal(got["actions"], want["actions"])
    np.testing.assert_array_equal(got["observations"]["state"], want["observations"]["state"])
