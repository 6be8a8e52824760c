"""The OpenCV/UVC camera node playing a video file that the test writes itself (lossless FFV1
through cv2.VideoWriter), read back through cv2.VideoCapture by the node: pixels after crop and
resize, camera_info from the given intrinsics, a stalled source (the file's end) reported in
/diagnostics with no frame republished, and clear errors for a missing file or device."""

from __future__ import annotations

import numpy as np
import pytest
from camera_helpers import CameraHarness, image_pixels, node_factory, stamp_seconds, wait_until
from process_helpers import Proc, node_command

cv2 = pytest.importorskip("cv2")
pytest.importorskip("rclpy")

FRAMES = 45  # 1.5 s at 30 Hz
CROP, RESIZE = [16, 0, 120, 120], [60, 60]  # 2x2 tiles shrunk 2:1
INTRINSICS = [200.0, 201.0, 79.5, 59.5]
DISTORTION = [0.1, -0.2, 0.0, 0.001, 0.05]


def _frame_bgr(marker: int) -> np.ndarray:
    """160x120 BGR: R = 2 * column tile, G = 2 * row tile (2x2 tiles), B = 5 * marker."""
    image = np.empty((120, 160, 3), np.uint8)
    image[..., 2] = ((np.arange(160) // 2) * 2)[None, :]
    image[..., 1] = ((np.arange(120) // 2) * 2)[:, None]
    image[..., 0] = (5 * marker) % 256
    return image


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    path = tmp_path_factory.mktemp("video") / "pattern.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"FFV1"), 30.0, (160, 120))
    assert writer.isOpened(), "this OpenCV cannot write FFV1"
    for marker in range(FRAMES):
        writer.write(_frame_bgr(marker))
    writer.release()
    return path


def _node_factory(source: str, autostart: bool = True, **params):
    from robot_rl.drivers.cameras.opencv_camera import OpenCVCameraNode

    values = {
        "source": source,
        "crop": CROP,
        "resize": RESIZE,
        "intrinsics": INTRINSICS,
        "distortion": DISTORTION,
        "autostart": False,
        "max_frame_age": 2.0,
        "stall_timeout": 1.0,
        "diagnostics_hz": 4.0,
        **params,
    }

    return node_factory(OpenCVCameraNode, values, autostart)


def _marker(msg) -> int:
    return round(int(image_pixels(msg)[0, 0, 2]) / 5)


def test_a_file_plays_cropped_resized_once_and_its_end_is_reported_stalled(video, harness_factory):
    harness = harness_factory(_node_factory(str(video)))
    status = harness.wait_for_status(
        lambda s: "end of the video file" in s.message, 120, "the end of the file in diagnostics"
    )
    assert status.level == b"\x02" and status.message.startswith("stalled")
    images = harness.get("image_raw")
    assert images, "no image arrived"
    image = images[-1]
    assert (image.encoding, image.width, image.height) == ("rgb8", 60, 60)
    rows, cols = np.mgrid[0:60, 0:60]
    pixels = image_pixels(image)
    assert np.array_equal(pixels[..., 0], (8 + cols) * 2)  # the crop starts at tile column 8
    assert np.array_equal(pixels[..., 1], rows * 2)

    # every frame of the file but the first, which configure reads before activate
    published = harness.node.published["color"]
    assert published in (FRAMES - 1, FRAMES)
    markers = [_marker(m) for m in images]
    assert markers == sorted(set(markers))  # in the file's order, none twice
    stamps = [stamp_seconds(m) for m in images]
    assert stamps == sorted(set(stamps))

    info = harness.get("camera_info")[-1]
    assert (info.width, info.height) == (60, 60)
    expected = [
        100.0,
        0.0,
        (79.5 - 16 + 0.5) / 2 - 0.5,
        0.0,
        100.5,
        (59.5 + 0.5) / 2 - 0.5,
        0.0,
        0.0,
        1.0,
    ]
    assert list(info.k) == pytest.approx(expected)
    assert list(info.d) == pytest.approx(DISTORTION)

    # stalled: the last frame is never published again
    count = len(harness.get("image_raw"))
    seen = len(harness.statuses())
    wait_until(lambda: len(harness.statuses()) >= seen + 4, 60, "four more statuses")
    assert len(harness.get("image_raw")) == count
    assert harness.node.published["color"] == published
    assert "end of the video file" in harness.statuses()[-1].message


def test_a_looping_file_plays_again(video, harness_factory):
    harness = harness_factory(_node_factory(str(video), loop=True, resize=[0, 0]))

    def markers():
        return [_marker(m) for m in harness.get("image_raw")]

    wait_until(
        lambda: FRAMES - 1 in markers() and markers()[-1] < FRAMES - 1,
        120,
        "the file to start again",
    )
    assert harness.get("image_raw")[-1].width == 120  # no resize: the crop's size
    stamps = [stamp_seconds(m) for m in harness.get("image_raw")]
    assert stamps == sorted(set(stamps))


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("/nonexistent/clip.avi", "no video file /nonexistent/clip.avi"),
        ("/dev/video77", "no video device /dev/video77 (video devices here: "),
        ("77", "no video device /dev/video77 (video devices here: "),
    ],
)
def test_a_missing_source_fails_configure_with_one_line(source, message):
    from robot_rl.drivers.cameras.driver_node import SourceMissing
    from robot_rl.drivers.cameras.opencv_camera import OpenCVCameraConfig, OpenCVSource

    with pytest.raises(SourceMissing) as error:
        OpenCVSource(OpenCVCameraConfig(source=source)).open()
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_a_gstreamer_pipeline_needs_an_opencv_built_with_gstreamer():
    from robot_rl.drivers.cameras.opencv_camera import OpenCVCameraConfig, OpenCVSource

    if cv2.videoio_registry.hasBackend(cv2.CAP_GSTREAMER):
        pytest.skip("this OpenCV has GStreamer")
    source = OpenCVSource(OpenCVCameraConfig(source="videotestsrc ! videoconvert ! appsink"))
    assert source.spec.kind == "gstreamer"
    with pytest.raises(ValueError, match="built without GStreamer"):
        source.open()


def test_a_crop_that_does_not_fit_fails_configure(video, harness_factory):
    from rclpy.lifecycle import TransitionCallbackReturn

    harness = harness_factory(_node_factory(str(video), autostart=False, crop=[100, 0, 120, 120]))
    assert harness.node.trigger_configure() == TransitionCallbackReturn.FAILURE
    assert harness.node._source is None


def test_the_console_script_plays_the_file_and_stops_on_sigint(video, tmp_path):
    """The real entry point as a process, heard by a probe in this one."""
    command = node_command(
        "robot_rl.drivers.cameras.opencv_camera",
        "/script_cam",
        source=video,
        loop="true",
        resize="[32,0]",
    )
    child = Proc(command, tmp_path / "camera.log")
    harness = None
    try:
        harness = CameraHarness(lambda context, ns: _idle_node(context), "/script_cam")
        wait_until(lambda: len(harness.get("image_raw")) >= 3, 120, "the script's images")
        image = harness.get("image_raw")[-1]
        assert (image.width, image.height) == (32, 24)
    finally:
        try:
            child.interrupt(30, group=False)  # it stops on SIGINT
        finally:
            child.stop()
        if harness is not None:
            harness.close()


def _idle_node(context):
    """A stand-in for the node under test when the node runs in another process."""
    import rclpy

    node = rclpy.create_node("idle", context=context)
    node.close_device = lambda: None
    return node


def test_discover_lists_this_machines_video_devices():
    from robot_rl.drivers.cameras import opencv_camera, realsense

    videos = opencv_camera.discover()
    assert [v["device"] for v in videos] == opencv_camera._video_devices()
    assert all(set(v) == {"kind", "device", "name"} for v in videos)
    cameras = realsense.discover()  # none on this machine; never raises
    assert isinstance(cameras, list)
    assert all(c["kind"] == "realsense" for c in cameras)
