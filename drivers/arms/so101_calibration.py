"""The SO-101's calibration: per motor its servo id, direction and range of ticks, in LeRobot's
file layout, so an arm calibrated with ``lerobot-calibrate`` works here unchanged:

    {"shoulder_pan": {"id": 1, "drive_mode": 0, "homing_offset": -1470,
                      "range_min": 758, "range_max": 3292}, ..., "gripper": {...}}

(``~/.cache/huggingface/lerobot/calibration/robots/so101_follower/<name>.json``). The middle of
each range is the joint's zero (the arm model's zero); ``drive_mode`` 1 turns the direction.
``homing_offset`` is what LeRobot wrote into the servo's own offset register: the ticks read
back already include it, so it is carried, not applied. Without a file, ``default`` centres every
range on the servo's middle tick, as the simulated cell's servos are.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from robot_rl.drivers.arms import feetech_protocol as sts
from robot_rl.drivers.arms import so101_kinematics as kin

MOTORS = (*kin.JOINTS, kin.GRIPPER)
"""LeRobot's motor names, in servo-id order (1-6)."""
FIELDS = ("id", "drive_mode", "homing_offset", "range_min", "range_max")


class CalibrationError(ValueError):
    """A calibration file that cannot be used, in one line."""


@dataclass(frozen=True)
class MotorCalibration:
    id: int
    drive_mode: int
    homing_offset: int
    range_min: int
    range_max: int

    @property
    def middle(self) -> float:
        return (self.range_min + self.range_max) / 2.0

    @property
    def sign(self) -> int:
        return -1 if self.drive_mode else 1

    def to_radians(self, ticks: float) -> float:
        return self.sign * sts.ticks_to_radians(ticks, self.middle)

    def to_ticks(self, radians: float) -> int:
        """The goal in ticks for an angle, kept inside the calibrated range."""
        ticks = sts.radians_to_ticks(self.sign * radians, self.middle)
        return max(self.range_min, min(self.range_max, ticks))


def default() -> dict[str, MotorCalibration]:
    """Ranges centred on the middle tick, as wide as the model's joint limits."""
    limits = [*kin.LIMITS.tolist(), list(kin.GRIPPER_LIMITS)]
    out = {}
    for number, (name, (low, high)) in enumerate(zip(MOTORS, limits, strict=True), start=1):
        half = math.ceil(max(abs(low), abs(high)) * sts.TICKS_PER_TURN / (2.0 * math.pi))
        out[name] = MotorCalibration(
            number, 0, 0, sts.CENTRE_TICK - half, min(sts.CENTRE_TICK + half, 4095)
        )
    return out


def load(path: str | Path) -> dict[str, MotorCalibration]:
    """A LeRobot calibration file, checked motor by motor."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except OSError as err:
        raise CalibrationError(f"{path}: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise CalibrationError(f"{path}: not JSON ({err.msg}, line {err.lineno})") from None
    if not isinstance(raw, dict):
        raise CalibrationError(f"{path}: expected an object of motors, got {type(raw).__name__}")
    missing = [m for m in MOTORS if m not in raw]
    if missing:
        raise CalibrationError(f"{path}: no calibration for {', '.join(missing)}")
    out = {name: _motor(path, name, raw[name]) for name in MOTORS}
    ids = [m.id for m in out.values()]
    if len(set(ids)) != len(ids):
        raise CalibrationError(f"{path}: two motors share a servo id ({ids})")
    return out


def _motor(path: Path, name: str, entry) -> MotorCalibration:
    if not isinstance(entry, dict) or any(f not in entry for f in FIELDS):
        raise CalibrationError(f"{path}: {name} needs {', '.join(FIELDS)}")
    values = {}
    for field in FIELDS:
        value = entry[field]
        if isinstance(value, bool) or not isinstance(value, int):
            raise CalibrationError(f"{path}: {name}.{field} must be an integer, got {value!r}")
        values[field] = value
    motor = MotorCalibration(**values)
    if not 0 <= motor.id <= 252 or motor.drive_mode not in (0, 1):
        raise CalibrationError(f"{path}: {name}: id must be 0-252 and drive_mode 0 or 1")
    if not 0 <= motor.range_min < motor.range_max < sts.TICKS_PER_TURN:
        raise CalibrationError(
            f"{path}: {name}: range {motor.range_min}-{motor.range_max} is not inside 0-4095"
        )
    return motor
