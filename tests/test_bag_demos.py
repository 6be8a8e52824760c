"""A ROS 2 bag of the robot's topics (written here by the rosbag2-compatible `mcap_ros2` writer,
as `ros2 bag record` writes MCAP) becomes demonstrations by the stated episode rules."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="needs the ros extra: pip install -e '.[ros]'")

from mcap_ros2.writer import Writer

from robot_rl.cli import main
from robot_rl.data.camera_model import CameraModel
from robot_rl.data.mcap_demos import load_demos, read_episode
from robot_rl.data.mcap_topics import arm_messages, camera_info_message, header, image_message
from robot_rl.data.ros_schemas import message_definition
from robot_rl.envs.task import make_task

SIZE = 16
OBSERVE = ["--task", "pick_cube", "--cameras", "front", "--image-size", str(SIZE), "--robot-mode"]
SENSOR_HZ, CAMERA_HZ, TELEOP_HZ = 50, 10, 50
CAMERA = CameraModel(64, 48, 40.0, 41.0, 31.5, 23.5, coefficients=(0.02, 0.0, 0.0, 0.0, 0.0))
"""The bag's front camera: 64x48 frames (fitted to the task's size on import)."""


def _tcp_x(t: float) -> float:
    return 0.5 + 0.01 * t


def write_bag(path, *, end=6.0, gap=None, presses=((2.0, 3), (3.5, 4))):
    """Arm topics at 50 Hz, the front camera at 10 Hz (64x48: fitted to the task's size), the
    teleop twist at 50 Hz: x 0.5 during [1, 2), y -0.3 during [2.5, 3.5), z 0.2 during [4, 5);
    /teleop/joy with the buttons pressed at ``presses`` (time, button) for one message."""
    schemas = {}
    with open(path, "wb") as stream:
        writer = Writer(stream)

        def put(topic, type_name, message, t):
            if type_name not in schemas:
                schemas[type_name] = writer.register_msgdef(
                    type_name, message_definition(type_name)
                )
            stamp = round(t * 1e9)
            writer.write_message(topic, schemas[type_name], message, stamp, stamp)

        for i in range(int(end * SENSOR_HZ)):
            t = i / SENSOR_HZ
            if gap and gap[0] <= t < gap[1]:
                continue
            reading = {
                "tcp_pos": np.array([_tcp_x(t), 0.0, 0.15]),
                "tcp_quat": np.array([0.0, 1.0, 0.0, 0.0]),
                "tcp_vel": np.array([0.01, 0, 0, 0, 0, 0]),
                "joint_pos": np.zeros(7),
                "joint_vel": np.zeros(7),
                "gripper_pos": np.array([0.2]),
                "wrench": np.zeros(6),
            }
            for topic, type_name, message in arm_messages(reading, round(t * 1e9)):
                put(topic, type_name, message, t)
            if i % (SENSOR_HZ // CAMERA_HZ) == 0:
                image = np.full((48, 64, 3), int(t * 10) % 256, np.uint8)
                put("/front_cam/image_raw", "sensor_msgs/msg/Image",
                    image_message(image, round(t * 1e9), "front_cam"), t)  # fmt: skip
                info = camera_info_message(CAMERA, round(t * 1e9), "front_cam")
                put("/front_cam/camera_info", "sensor_msgs/msg/CameraInfo", info, t)
        for i in range(int(end * TELEOP_HZ)):
            t = i / TELEOP_HZ
            linear = [0.0, 0.0, 0.0]
            if 1.0 <= t < 2.0:
                linear[0] = 0.5
            elif 2.5 <= t < 3.5:
                linear[1] = -0.3
            elif 4.0 <= t < 5.0:
                linear[2] = 0.2
            twist = {
                "header": header(round(t * 1e9), "teleop"),
                "twist": {
                    "linear": dict(zip("xyz", linear, strict=True)),
                    "angular": {"x": 0.0, "y": 0.0, "z": 0.0},
                },
            }
            put("/teleop/twist", "geometry_msgs/msg/TwistStamped", twist, t)
            buttons = [0] * 5
            for when, button in presses:
                if abs(t - when) < 0.5 / TELEOP_HZ:
                    buttons[button] = 1
            joy = {"header": header(round(t * 1e9), "teleop"), "axes": [], "buttons": buttons}
            put("/teleop/joy", "sensor_msgs/msg/Joy", joy, t)
        writer.finish()
    return path


def test_operator_presses_keep_and_drop_episodes(tmp_path):
    bag = write_bag(tmp_path / "robot.mcap")
    out = tmp_path / "demos"
    assert main(["import-demos", "--from", "bag", str(bag), *OBSERVE, "--out", str(out)]) == 0
    files = sorted(out.glob("*.mcap"))
    # [1, 2) ends with success: kept; [2.5, 3.5) rejected; [4, 5) has no verdict: dropped
    assert len(files) == 1
    episode = read_episode(files[0]).episode
    assert 9 <= len(episode) <= 11  # one second at 10 Hz
    np.testing.assert_allclose(episode.actions[:, 0], 0.5)  # the teleop x, as applied
    np.testing.assert_allclose(episode.actions[:, 1:], 0.0)
    assert episode.rewards[-1] == 1.0 and episode.rewards[:-1].sum() == 0.0
    assert episode.terminated[-1] and not episode.truncated.any()
    task = make_task("pick_cube", cameras=("front",), image_size=SIZE, privileged_state=False)
    states = np.stack([o["state"] for o in episode.observations])
    # the task's own observation of the bag's readings: tcp x relative to the reset pose, in 10 cm
    first_t = 1.0  # the first tick with the operator moving
    expected = (_tcp_x(first_t) - task.reset_pos[0]) * 10
    assert states[0, 0] == pytest.approx(expected, abs=0.01 * 10 / SENSOR_HZ * 3)
    assert np.all(np.diff(states[:, 0]) > 0)
    np.testing.assert_allclose(states[:, 6], 0.2)  # gripper_pos
    assert episode.observations[0]["front"].shape == (SIZE, SIZE, 3)
    _, counts = load_demos(out)  # what --demo-path does
    assert counts["episodes"] == 1
    # the imported file says where its images are: the bag's camera_info, cropped to the
    # centred 48x48 square and scaled to 16 px, and the TCP on /tf each step
    infos, tcp = _decoded(files[0], "/front_cam/camera_info"), _decoded(files[0], "/tf")
    assert len(infos) == len(tcp) == len(episode) + 1
    scale = SIZE / 48
    assert (infos[0].width, infos[0].height) == (SIZE, SIZE)
    np.testing.assert_allclose(
        [infos[0].k[i] for i in (0, 2, 4, 5)],
        [40.0 * scale, (31.5 - 8) * scale, 41.0 * scale, 23.5 * scale],
    )
    assert list(infos[0].d) == [0.02, 0.0, 0.0, 0.0, 0.0]
    assert tcp[0].transforms[0].child_frame_id == "tcp"


def _decoded(path, topic: str) -> list:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with open(path, "rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        return [m for *_, m in reader.iter_decoded_messages(topics=[topic])]


def test_all_success_splits_at_gaps(tmp_path):
    bag = write_bag(tmp_path / "robot.mcap", gap=(3.0, 3.8), presses=())
    out = tmp_path / "demos"
    args = ["import-demos", "--from", "bag", str(bag), *OBSERVE, "--all-success"]
    assert main([*args, "--out", str(out)]) == 0
    files = sorted(out.glob("*.mcap"))
    assert len(files) == 2  # [1, 3) up to the gap, then from 4.0 to the bag's end
    first, second = (read_episode(f).episode for f in files)
    assert 19 <= len(first) <= 21 and first.terminated[-1]
    np.testing.assert_allclose(second.actions[0], [0, 0, 0.2, 0], atol=1e-6)


def test_a_bag_without_the_camera_or_verdicts_is_one_line(tmp_path, capsys):
    bag = write_bag(tmp_path / "robot.mcap", end=2.0)
    base = ["import-demos", "--from", "bag", str(bag), "--task", "pick_cube", "--robot-mode"]
    assert main([*base, "--cameras", "wrist", "--out", str(tmp_path / "a")]) == 2
    assert "/wrist_cam/image_raw" in capsys.readouterr().err
    args = [*base, "--success-topic", "/operator/done", "--out", str(tmp_path / "b")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "--all-success" in err and "\n" not in err
