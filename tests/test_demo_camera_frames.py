"""Demos carry what places their images in space (issue 29, point 2): each camera's camera_info,
the TCP on /tf and the cameras' mounts on /tf_static, decoded from the file's own schemas by
mcap_ros2 as another tool would; the demo reader and the learner's loading ignore them."""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
import pytest

from robot_rl.data.camera_model import CameraModel, fitted, from_camera_info, recorded_cameras
from robot_rl.data.image_fit import fit_image


def _decoded(path) -> dict[str, list]:
    """Per topic, (log time, decoded message) in the file's order."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    out: dict[str, list] = {}
    with open(path, "rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        for _, channel, message, decoded in reader.iter_decoded_messages():
            out.setdefault(channel.topic, []).append((message.log_time, decoded))
    return out


def _matrix(rotation) -> np.ndarray:
    """A geometry_msgs Quaternion (x y z w) as a rotation matrix."""
    x, y, z, w = rotation.x, rotation.y, rotation.z, rotation.w
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _pose(tf) -> tuple[np.ndarray, np.ndarray]:
    t = tf.transform.translation
    return _matrix(tf.transform.rotation), np.array([t.x, t.y, t.z])


def _pixel(info, point_in_optical: np.ndarray) -> np.ndarray:
    """Where a CameraInfo's K puts a point of the optical frame."""
    x, y, z = point_in_optical
    k = info.k
    return np.array([k[0] * x / z + k[2], k[4] * y / z + k[5]])


@pytest.mark.parametrize("width, height", [(64, 48), (48, 64)])
@pytest.mark.parametrize("size", [16, 20, 48, 64])
def test_fitted_intrinsics_follow_the_pixels_through_fit_image(width, height, size):
    """A point seen at source pixel (u, v) is, by the fitted intrinsics, where fit_image put that
    pixel: each source pixel's coordinates are painted into it and read back after the fit."""
    source = CameraModel(width, height, 41.0, 43.0, 30.2, 22.7, coefficients=(0.1, 0, 0, 0, 0))
    v, u = np.mgrid[0:height, 0:width]
    image = np.stack([u, v, np.zeros_like(u)], axis=-1).astype(np.uint8)
    out = fit_image(image, size)
    model = fitted(source, size)
    assert (model.width, model.height) == (size, size) == out.shape[1::-1]
    assert model.coefficients == source.coefficients
    side = min(width, height)
    j, i = np.mgrid[0:size, 0:size]
    su, sv = out[..., 0].astype(float), out[..., 1].astype(float)
    # the ray through the source pixel, at depth 1, projected with the fitted intrinsics
    rays = np.stack([(su - source.cx) / source.fx, (sv - source.cy) / source.fy], axis=-1)
    projected = np.stack([model.fx * rays[..., 0] + model.cx, model.fy * rays[..., 1] + model.cy])
    bound = max(1.0, size / side)  # nearest resampling: within one source pixel
    assert np.abs(projected[0] - i).max() < bound and np.abs(projected[1] - j).max() < bound


def test_an_uncalibrated_camera_info_gives_no_intrinsics():
    info = SimpleNamespace(width=64, height=48, k=[0.0] * 9, d=[], distortion_model="")
    assert from_camera_info(info, 16) is None


@pytest.mark.timeout(300)
def test_a_twin_demo_places_its_images_in_space(tmp_path):
    """record-demos' recorder on the twin (two cameras, 64 px): the red cube's known position,
    carried through the file's /tf_static, /tf and camera_info, lands on the cube in the file's
    own images; the demo still loads into a demo buffer."""
    pytest.importorskip("mujoco")
    from robot_rl.commands.record_demos import ExpertSource, record_episode
    from robot_rl.data.mcap_demos import load_demos, read_episode, write_episode
    from robot_rl.runtime.environments import make_env

    env = make_env("twin", "pick_cube", "", 0, {"cameras": ("front", "wrist"), "image_size": 64})
    try:
        episode, success, _ = record_episode(env, ExpertSource(env), np.random.default_rng(0), 0)
        path = write_episode(
            tmp_path / "e.mcap", episode, env.observation_space, env.action_space, control_hz=10.0
        )
    finally:
        env.close()
    assert success
    steps = len(episode)
    topics = _decoded(path)

    # camera_info beside every image: same stamp, frame and size
    for camera in ("front", "wrist"):
        images = topics[f"/{camera}_cam/image_raw"]
        infos = topics[f"/{camera}_cam/camera_info"]
        assert len(infos) == len(images) == steps + 1
        for (t_image, image), (t_info, info) in zip(images, infos, strict=True):
            stamps = [(m.header.stamp.sec, m.header.stamp.nanosec) for m in (info, image)]
            assert t_info == t_image and stamps[0] == stamps[1]
            assert info.header.frame_id == image.header.frame_id == f"{camera}_cam"
            assert (info.width, info.height) == (image.width, image.height) == (64, 64)
            assert info.distortion_model == "plumb_bob" and list(info.d) == [0.0] * 5
    # the mounts once; the TCP every step
    (static,) = [m for _, m in topics["/tf_static"]]
    mounts = {tf.child_frame_id: tf for tf in static.transforms}
    assert {c: tf.header.frame_id for c, tf in mounts.items()} == {
        "front_cam": "base",
        "wrist_cam": "tcp",
    }
    tcp = [m.transforms[0] for _, m in topics["/tf"]]
    assert len(tcp) == steps + 1
    assert all((t.header.frame_id, t.child_frame_id) == ("base", "tcp") for t in tcp)

    for k in (0, steps):
        cube = episode.readings[k]["object/cube_pos"]  # the twin's truth, not in the file
        for camera, tolerance in (("front", 1.0), ("wrist", 2.0)):
            rotation, origin = _pose(mounts[f"{camera}_cam"])
            if camera == "wrist":
                if k != 0:
                    continue  # the fingers hide the cube once they close on it
                base_r, base_t = _pose(tcp[k])
                rotation, origin = base_r @ rotation, base_r @ origin + base_t
            info = topics[f"/{camera}_cam/camera_info"][k][1]
            pixel = _pixel(info, rotation.T @ (cube - origin))
            image = episode.observations[k][camera].astype(int)
            red = (image[..., 0] > image[..., 1] + 60) & (image[..., 0] > image[..., 2] + 60)
            rows, cols = np.nonzero(red)
            assert len(rows) > 20, f"{camera} at step {k} does not see the cube"
            centre = np.array([cols.mean(), rows.mean()])
            assert np.abs(pixel - centre).max() < tolerance, (camera, k, pixel, centre)

    loaded = read_episode(path)
    assert len(loaded.episode) == steps
    _, counts = load_demos(path)
    assert counts == {"episodes": 1, "transitions": steps}


@pytest.mark.timeout(120)
def test_the_ros_backend_keeps_each_cameras_newest_info_for_the_recording():
    """The driver's CameraInfo (64x48) reaches the recording fitted to the observation (16 px);
    the other camera, which publishes none, has no intrinsics."""
    pytest.importorskip("rclpy")
    import rclpy
    from ros_helpers import Spinner
    from sensor_msgs.msg import CameraInfo

    from robot_rl.envs.task import make_task
    from robot_rl.ros.backend import RosArmBackend, RosBackendConfig
    from robot_rl.ros.qos import sensor_qos

    task = make_task("pick_cube", cameras=("front", "wrist"), image_size=16)
    backend = RosArmBackend(task, RosBackendConfig(node_name="camera_info_test_backend"))
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("camera_info_test_driver", context=context)
    spinner = Spinner(node, context)
    publisher = node.create_publisher(CameraInfo, "/front_cam/camera_info", sensor_qos())
    info = CameraInfo(width=64, height=48, distortion_model="plumb_bob")
    info.k = [50.0, 0.0, 31.5, 0.0, 51.0, 23.5, 0.0, 0.0, 1.0]
    info.d = [0.01, 0.0, 0.0, 0.0, 0.0]
    env = SimpleNamespace(backend=backend, task=task, observation_space=task.observation_space())
    try:
        cameras = {}
        for _ in range(200):
            publisher.publish(info)
            cameras = recorded_cameras(env)
            if cameras:
                break
            time.sleep(0.05)
    finally:
        spinner.close()
        backend.close()
    expected = fitted(
        CameraModel(64, 48, 50.0, 51.0, 31.5, 23.5, coefficients=(0.01, 0, 0, 0, 0)), 16
    )
    assert cameras == {"front": expected}
    assert (expected.width, expected.height) == (16, 16)


def test_the_tf_message_definition_is_ours_only_where_none_is_installed(tmp_path, monkeypatch):
    from robot_rl.data import ros_schemas

    def definition() -> str:
        ros_schemas._msg_text.cache_clear()
        ros_schemas.message_definition.cache_clear()
        return ros_schemas.message_definition("tf2_msgs/msg/TFMessage")

    installed = [
        d for d in ros_schemas.share_dirs() if (d / "tf2_msgs/msg/TFMessage.msg").is_file()
    ]
    try:
        if not installed:  # as here: tf2_msgs has no wheel
            text = definition()
            assert text.startswith("geometry_msgs/TransformStamped[] transforms\n")
            assert "MSG: geometry_msgs/TransformStamped\n" in text
        package = tmp_path / "share" / "tf2_msgs" / "msg"
        package.mkdir(parents=True)
        (package / "TFMessage.msg").write_text("# installed\ngeometry_msgs/TransformStamped[] t\n")
        monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
        assert definition().startswith("# installed\n")
    finally:
        monkeypatch.undo()
        definition()
