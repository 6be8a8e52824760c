"""`robot-rl record-lap` on a lap driven in the twin: the car twin's ROS 2 node publishes what a
car's drivers publish (odom, imu), a simulated person drives over /teleop, and record-lap sees
nothing else. Plus the checkpoints file and car_lap's --checkpoints option."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robot_rl.data.lap_checkpoints import (
    CheckpointsFileError,
    LapWatcher,
    load_checkpoints,
    write_checkpoints,
)
from robot_rl.runtime.observation_mode import ObservationMode


def test_a_lap_closes_only_back_at_the_start_after_most_of_the_track():
    watcher = LapWatcher(min_length=20.0, close_radius=0.8, leave_radius=2.0)
    angles = np.linspace(0, 2 * np.pi, 200)  # a circle of radius 4: 25.1 m
    closed_at = None
    for k, a in enumerate(angles):
        if watcher.add([4 * np.cos(a), 4 * np.sin(a), a + np.pi / 2]) and closed_at is None:
            closed_at = k
    assert closed_at is not None and watcher.length > 20.0
    assert closed_at > 180  # not while leaving the start
    # driving away and straight back is not a lap
    shuttle = LapWatcher(min_length=20.0)
    for x in [*np.linspace(0, 12, 60), *np.linspace(12, 0, 60)]:
        shuttle.add([x, 0.0, 0.0])
    assert shuttle.length > 20.0 and shuttle.left_start and shuttle.closed  # back at start...
    short = LapWatcher(min_length=30.0)
    for x in [*np.linspace(0, 12, 60), *np.linspace(12, 0, 60)]:
        short.add([x, 0.0, 0.0])
    assert not short.closed  # ...but min_length is what "most of the track" asks for


def test_the_checkpoints_file_round_trips_and_bad_files_are_one_line_errors(tmp_path):
    path = write_checkpoints(
        tmp_path / "lap.json",
        np.array([[1, 2], [3, 4], [5, 6.5]]),
        spacing=1.5,
        lap_length=9.0,
        start=[0, 0, 0],
        source="test",
    )
    assert load_checkpoints(path) == ((1.0, 2.0), (3.0, 4.0), (5.0, 6.5))
    assert json.loads(path.read_text())["source"] == "test"
    (tmp_path / "short.json").write_text(
        '{"format": "robot_rl.car_checkpoints/1", "points": [[0, 0], [1, 1]]}'
    )
    for name, match in (("missing.json", "not found"), ("short.json", "at least 3")):
        with pytest.raises(CheckpointsFileError, match=match) as error:
            load_checkpoints(tmp_path / name)
        assert "\n" not in str(error.value)


def test_car_lap_takes_a_checkpoints_file_through_the_shared_task_options(tmp_path):
    points = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    path = write_checkpoints(
        tmp_path / "c.json", points, spacing=1.4, lap_length=5.6, start=[0, -1, 0]
    )
    mode = ObservationMode(checkpoints=str(path))
    options = mode.task_options("car_lap")
    assert options["checkpoints"] == tuple(map(tuple, points))
    # checkpoints record it, and eval / --resume rebuild the same task from the record
    from robot_rl.runtime.observation_mode import observation_from_metadata

    meta = {"task": "car_lap", "observation": mode.metadata("car_lap")}
    assert observation_from_metadata(meta).task_options("car_lap") == options
    with pytest.raises(ValueError, match="takes no --checkpoints"):
        mode.task_options("pick_cube")
    # the default is the shipped file, recorded by record-lap on the twin
    from robot_rl.tasks.car_lap import DEFAULT_CHECKPOINTS, TWIN_TRACK_CHECKPOINTS

    assert load_checkpoints(TWIN_TRACK_CHECKPOINTS) == DEFAULT_CHECKPOINTS
    assert "record-lap" in json.loads(TWIN_TRACK_CHECKPOINTS.read_text())["how"]


@pytest.mark.timeout(240)
def test_record_lap_on_a_lap_driven_in_the_twin(tmp_path):
    pytest.importorskip("rclpy")
    pytest.importorskip("mujoco")
    from robot_rl.data.mcap_lap import read_lap_poses
    from robot_rl.sim.car_track import DEFAULT_TRACK, centreline
    from robot_rl.sim.experts.car_lap import record_twin_lap

    assert record_twin_lap(tmp_path / "lap", speedup=2.0) == 0
    document = json.loads((tmp_path / "lap" / "checkpoints.json").read_text())
    points = np.array(document["points"])
    line = centreline(DEFAULT_TRACK)
    assert 16 <= len(points) <= 19  # a 27 m lap every 1.5 m
    off_line = [np.linalg.norm(line.points[line.nearest(p)] - p) for p in points]
    assert max(off_line) < 0.4  # inside the corridor (half-width 0.7 m), along the lap
    assert document["lap_length"] > 0.8 * DEFAULT_TRACK.length
    # the MCAP has the odometry of the whole lap, from the start back to it
    poses = read_lap_poses(tmp_path / "lap" / "lap.mcap")
    assert len(poses) > 100
    assert np.linalg.norm(poses[-1, :2] - poses[0, :2]) < 0.8
    # a lap that never closes (nobody drives) is refused in one line, without checkpoints
    from robot_rl.commands.record_lap import LapNotClosedError

    with pytest.raises(LapNotClosedError, match="did not close") as error:
        record_twin_lap(tmp_path / "parked", speedup=2.0, max_seconds=3.0, drive=False)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "parked" / "checkpoints.json").exists()
    assert (tmp_path / "parked" / "lap.mcap").is_file()  # the log of the attempt is kept
