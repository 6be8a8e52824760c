"""The SO-101's calibration files in LeRobot's layout (``drivers/arms/so101_calibration``)."""

from __future__ import annotations

import json
import math

import pytest

from robot_rl.drivers.arms import so101_calibration as cal

LEROBOT_FILE = {  # the layout lerobot-calibrate writes for an so101_follower
    "shoulder_pan": {"id": 1, "drive_mode": 0, "homing_offset": -1470, "range_min": 758,
                     "range_max": 3292},
    "shoulder_lift": {"id": 2, "drive_mode": 0, "homing_offset": 157, "range_min": 812,
                      "range_max": 3223},
    "elbow_flex": {"id": 3, "drive_mode": 0, "homing_offset": 1019, "range_min": 882,
                   "range_max": 3093},
    "wrist_flex": {"id": 4, "drive_mode": 0, "homing_offset": -1067, "range_min": 869,
                   "range_max": 3181},
    "wrist_roll": {"id": 5, "drive_mode": 0, "homing_offset": -1914, "range_min": 0,
                   "range_max": 4095},
    "gripper": {"id": 6, "drive_mode": 0, "homing_offset": 1352, "range_min": 2023,
                "range_max": 3545},
}  # fmt: skip


def _write(tmp_path, content) -> str:
    path = tmp_path / "my_arm.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def test_a_lerobot_calibration_file_loads_and_maps_ticks_to_the_models_angles(tmp_path):
    motors = cal.load(_write(tmp_path, LEROBOT_FILE))
    assert [m.id for m in motors.values()] == [1, 2, 3, 4, 5, 6]
    pan = motors["shoulder_pan"]
    assert pan.to_radians(pan.middle) == 0.0
    assert pan.to_radians(pan.middle + 1024) == pytest.approx(math.pi / 2)
    assert pan.to_ticks(pan.to_radians(2000)) == 2000
    assert pan.to_ticks(10.0) == pan.range_max and pan.to_ticks(-10.0) == pan.range_min


def test_drive_mode_turns_the_direction(tmp_path):
    flipped = {**LEROBOT_FILE, "elbow_flex": {**LEROBOT_FILE["elbow_flex"], "drive_mode": 1}}
    elbow = cal.load(_write(tmp_path, flipped))["elbow_flex"]
    ticks = round(elbow.middle) + 100
    assert elbow.to_radians(ticks) < 0.0
    assert elbow.to_ticks(elbow.to_radians(ticks)) == ticks


def test_the_default_calibration_is_centred_and_covers_the_model(tmp_path):
    motors = cal.default()
    assert all(m.middle == 2048 for m in list(motors.values())[:5])
    assert motors["shoulder_pan"].to_radians(motors["shoulder_pan"].range_max) >= 1.91986


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "expected an object of motors"),
        ({k: v for k, v in LEROBOT_FILE.items() if k != "gripper"}, "no calibration for gripper"),
        ({**LEROBOT_FILE, "gripper": {"id": 6}}, "gripper needs id, drive_mode"),
        ({**LEROBOT_FILE, "gripper": {**LEROBOT_FILE["gripper"], "range_min": 4000}},
         "range 4000-3545"),
        ({**LEROBOT_FILE, "gripper": {**LEROBOT_FILE["gripper"], "id": 1}}, "share a servo id"),
        ({**LEROBOT_FILE, "gripper": {**LEROBOT_FILE["gripper"], "id": "6"}},
         "gripper.id must be an integer"),
    ],
)  # fmt: skip
def test_a_bad_calibration_file_is_one_line(tmp_path, content, message):
    with pytest.raises(cal.CalibrationError, match=message) as caught:
        cal.load(
            _write(tmp_path, content if not isinstance(content, list) else json.dumps(content))
        )
    assert "\n" not in str(caught.value)


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(cal.CalibrationError, match="No such file"):
        cal.load(tmp_path / "absent.json")
