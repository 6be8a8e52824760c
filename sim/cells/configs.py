"""The simulated cells' parts as devices: each part's config dataclass, whose fields are its
node's ROS 2 parameters (``robot_rl.drivers.config``), registered by device type
with ``register_device``. A cell is one console script; ``part`` picks the node. No ROS 2 and no
MuJoCo here."""

from __future__ import annotations

from dataclasses import dataclass

from robot_rl.drivers.config import length, one_of, param, positive, register_device

FR3_CELL, CAR_CELL = "robot-rl-fr3-sim-cell", "robot-rl-car-sim-cell"
SO101_CELL = "robot-rl-so101-sim-cell"
PARTS = ("world", "camera", "human")
"""A cell's parts, each a process of its own (the ``part`` parameter)."""
FR3_OPERATOR_MODES = ("correct", "demonstrate", "label")
CAR_OPERATOR_MODES = ("drive", "demonstrate", "watch")
"""What a cell's operator is doing (its ``mode`` parameter): its node's module docstring."""

_share = (lambda v: 0.0 <= v <= 1.0, "must lie in [0, 1]")
_gain = (lambda v: 0.0 < v <= 1.0, "must lie in (0, 1]")
_at_least_one = (lambda v: v >= 1, "must be >= 1")
_not_negative = (lambda v: v >= 0.0, "must be >= 0")
_size = (lambda v: 8 <= v <= 1024, "must be an integer in [8, 1024]")


def _part(default: str):
    return param(
        default, f"which part of the cell this process is: {', '.join(PARTS)}", one_of(*PARTS)
    )


def _camera_rate():
    return param(10.0, "frames per wall second (at most one per world state)", positive)


def _image_size(default: int, what: str):
    return param(default, f"image {what} (px)", _size)


def _camera_frame():
    return param("", "frame of the images (default: the camera name)")


@register_device(
    "fr3_sim_cell",
    kind="arm",
    executable=FR3_CELL,
    node="robot_rl.sim.cells.fr3_cell:CellWorldNode",
    summary="simulated FR3 cell's world: franky-sim (libfranka protocol on loopback)",
    lifecycle=False,
)
@dataclass(frozen=True)
class CellWorldConfig:
    part: str = _part("world")
    host: str = param(
        "127.13.0.1",
        "loopback address franky-sim serves the Franka protocol on (the Franka node's robot_ip)",
    )
    task: str = param("pick_cube", "task whose scene the cell holds")
    seed: int = param(0, "seed of the cube's placements")
    realtime: bool = param(True, "pace the physics to wall time (false: as fast as it goes)")
    state_rate: float = param(30.0, "rate of the ground truth and state topics (wall Hz)", positive)
    linger: float = param(
        10.0,
        "on stop, keep serving until the Franka node has disconnected, "
        "at most this many seconds (a robot stays on while its driver stops)",
        positive,
    )
    manage: str = param(
        "",
        "lifecycle nodes (comma-separated, e.g. /arm/franka_driver, started "
        "with autostart false) to configure and activate once franky-sim "
        "serves: the robot is on before its driver connects",
    )


@register_device(
    "fr3_sim_camera",
    kind="camera",
    executable=FR3_CELL,
    node="robot_rl.sim.cells.cell_camera:CellCameraNode",
    summary="a camera of the simulated FR3 cell",
    lifecycle=False,
)
@dataclass(frozen=True)
class CellCameraConfig:
    part: str = _part("camera")
    task: str = param("pick_cube", "task whose scene the cell holds")
    camera: str = param("front", "camera of the cell: front or wrist")
    rate: float = _camera_rate()
    width: int = _image_size(64, "width")
    height: int = _image_size(64, "height")
    frame_id: str = _camera_frame()


@register_device(
    "fr3_sim_human",
    kind="teleop",
    executable=FR3_CELL,
    node="robot_rl.sim.cells.cell_human:CellHumanNode",
    summary="the simulated FR3 cell's operator, on the SpaceMouse's topics",
    lifecycle=False,
)
@dataclass(frozen=True)
class CellHumanConfig:
    part: str = _part("human")
    task: str = param("pick_cube", "task the operator knows how to do")
    seed: int = param(0, "seed of the operator's choices")
    arm_namespace: str = param("/arm", "namespace of the arm's driver")
    rate_hz: float = param(50.0, "publishing rate of /teleop/twist and /teleop/joy (Hz)", positive)
    max_age: float = param(
        0.5, "the operator acts only on readings younger than this (s, by arrival)", positive
    )
    stuck_window: int = param(
        15, "control periods without progress after which the policy counts as stuck", _at_least_one
    )
    takeover_steps: int = param(15, "control periods of one correction", _at_least_one)
    episode_share: float = param(0.3, "most corrected periods per max_episode_steps", _share)
    total_share: float = param(0.2, "most corrected periods over the run, as a share", _share)
    decay_steps: int = param(
        0,
        "the per-episode share falls linearly to zero over this many control periods watched, "
        "as a person steps in less as the robot learns (0: never)",
        (lambda v: v >= 0, "must be >= 0"),
    )
    tidy: bool = param(
        True,
        "put the cube at a new random place when it was picked up and put "
        "down, or pushed out of reach",
    )
    place_each_episode: bool = param(
        False,
        "also put the cube at a new random place at every reset of the arm (seen as the arm "
        "driver's /diagnostics mode 'resetting'), as a person evaluating a policy does: each "
        "episode then starts from a fresh placement, not from where the last attempt left it",
    )
    say_success: bool = param(
        True,
        "press the success button (/teleop/joy button 3, the actor's --operator joy) once each "
        "time it sees the task done",
    )
    success_press_s: float = param(0.3, "how long one success press is held (s)", positive)
    answer_questions: bool = param(
        True,
        "answer the actor's questions on /operator/query (the classifier's success): reject "
        "when it sees the task not done, success when done, after answer_delay_min..max s",
    )
    answer_delay_min: float = param(0.5, "shortest reaction time to a question (s)", positive)
    answer_delay_max: float = param(2.0, "longest reaction time to a question (s)", positive)
    mode: str = param(
        "correct",
        "what the operator does: 'correct' (step in on trouble), 'demonstrate' (drive whole "
        "episodes, press success or reject: record-demos), 'label' (varied behaviours, success "
        "held while the task is done: record-labels); settable while it runs",
        one_of(*FR3_OPERATOR_MODES),
    )
    fail_share: float = param(0.15, "demonstrate: share of attempts it botches and rejects", _share)
    expert_gain: float = param(
        0.8,
        "share of the remaining distance to its goal it asks for per control period: a person "
        "who sees the arm late (cameras, network, the arm's own lag) asks for less, or "
        "overshoots and oscillates",
        _gain,
    )
    expert_integral: float = param(
        0.0,
        "share of its error summed over a phase that it asks for on top, as a person pushes "
        "on when the arm stops short of where they steer it (0: none)",
        _not_negative,
    )


@register_device(
    "so101_sim_cell",
    kind="arm",
    executable=SO101_CELL,
    node="robot_rl.sim.cells.so101_cell:So101WorldNode",
    summary="simulated SO-101 cell's world: the twin's arm behind a Feetech servo bus on a pty",
    lifecycle=False,
)
@dataclass(frozen=True)
class So101WorldConfig:
    part: str = _part("world")
    port: str = param(
        "/tmp/robot_rl_so101_sim/bus",
        "where the servo bus adapter's pty appears (a symlink): the SO-101 node's port",
    )
    task: str = param("so101_pick_cube", "task whose scene the cell holds")
    seed: int = param(0, "seed of the cube's placements")
    state_rate: float = param(30.0, "rate of the ground truth and state topics (wall Hz)", positive)
    linger: float = param(
        5.0,
        "on stop, keep the servos answering until the SO-101 node has been quiet for 0.5 s, "
        "at most this many seconds (servos stay powered while their driver stops)",
        positive,
    )
    manage: str = param(
        "",
        "lifecycle nodes (comma-separated, e.g. /arm/so101_driver, started with autostart "
        "false) to configure and activate once the bus is there",
    )


@register_device(
    "so101_sim_camera",
    kind="camera",
    executable=SO101_CELL,
    node="robot_rl.sim.cells.so101_cell:So101CameraNode",
    summary="a camera of the simulated SO-101 cell",
    lifecycle=False,
)
@dataclass(frozen=True)
class So101CameraConfig(CellCameraConfig):
    task: str = param("so101_pick_cube", "task whose scene the cell holds")


@register_device(
    "so101_sim_human",
    kind="teleop",
    executable=SO101_CELL,
    node="robot_rl.sim.cells.so101_cell:So101HumanNode",
    summary="the simulated SO-101 cell's operator, on the gamepad's topics",
    lifecycle=False,
)
@dataclass(frozen=True)
class So101HumanConfig(CellHumanConfig):
    task: str = param("so101_pick_cube", "task the operator knows how to do")
    expert_gain: float = param(
        0.4,
        "share of the remaining distance to its goal it asks for per control period (the "
        "SO-101's 1 cm steps and 2.5 cm cube: at 0.8 it overshot and oscillated around the cube "
        "in the cell, its view two to three control periods late)",
        _gain,
    )
    expert_integral: float = param(
        0.1,
        "share of its error summed over a phase that it asks for on top: at expert_gain 0.4 "
        "alone the SO-101 twin's arm stopped 6-7 mm short of the hover point in 24 of 30 "
        "placements, with 0.1 all 30 were picked",
        _not_negative,
    )
    takeover_steps: int = param(
        40,
        "control periods of one correction (an SO-101 pick at its 1 cm steps takes 14-34: a "
        "person who steps in finishes the pick)",
        _at_least_one,
    )
    episode_share: float = param(0.5, "most corrected periods per max_episode_steps", _share)


@register_device(
    "car_sim_cell",
    kind="car",
    executable=CAR_CELL,
    node="robot_rl.sim.cells.car_cell:CarWorldNode",
    summary="simulated car cell's world: the car twin answering as a VESC on a pty",
    lifecycle=False,
)
@dataclass(frozen=True)
class CarWorldConfig:
    part: str = _part("world")
    port: str = param(
        "/tmp/robot_rl_car_sim/vesc",
        "where the VESC's pty appears (a symlink): the VESC node's port",
    )
    start_pose: tuple = param(
        [0.0, -3.25, 0.0],
        "where the car starts: x, y (m), yaw (rad); the VESC node's initial_pose",
        length(3),
    )
    physics_hz: float = param(100.0, "physics steps per simulated second", positive)
    realtime: bool = param(True, "pace the physics to wall time (false: as fast as it goes)")
    state_rate: float = param(30.0, "rate of /sim/car/state and /sim/collision (wall Hz)", positive)
    wheel_radius: float = param(0.05, "calibration: wheel radius (m)", positive)
    gear_ratio: float = param(10.0, "calibration: motor turns per wheel turn", positive)
    motor_poles: int = param(4, "calibration: magnet poles of the motor", positive)
    servo_centre: float = param(0.5, "calibration: servo position that drives straight")
    servo_per_radian: float = param(-0.7, "calibration: servo position per radian")
    duty_per_mps: float = param(0.05, "calibration: duty cycle per m/s", positive)
    manage: str = param(
        "",
        "lifecycle nodes (comma-separated, e.g. /car/vesc, started with "
        "autostart false) to configure and activate once the port exists",
    )


@register_device(
    "car_sim_camera",
    kind="camera",
    executable=CAR_CELL,
    node="robot_rl.sim.cells.car_camera:CarCameraNode",
    summary="the simulated car's forward camera",
    lifecycle=False,
)
@dataclass(frozen=True)
class CarCameraConfig:
    part: str = _part("camera")
    camera: str = param("front", "camera of the car's model")
    rate: float = _camera_rate()
    width: int = _image_size(64, "width")
    height: int = _image_size(64, "height")
    frame_id: str = _camera_frame()


@register_device(
    "car_sim_human",
    kind="teleop",
    executable=CAR_CELL,
    node="robot_rl.sim.cells.car_human:CarHumanNode",
    summary="the simulated car cell's operator, on the gamepad's topics",
    lifecycle=False,
)
@dataclass(frozen=True)
class CarHumanConfig:
    part: str = _part("human")
    mode: str = param(
        "watch",
        "what the operator does: 'drive' (slow clean laps, RB held: record-lap), 'demonstrate' "
        "(driving, success pressed every demo_seconds: record-demos), 'watch' "
        "(hands off; corrections with correct_offset > 0: up robot, eval); settable while it runs",
        one_of(*CAR_OPERATOR_MODES),
    )
    speed: float = param(1.0, "drive: the slow lap's speed (m/s)", positive)
    max_speed: float = param(
        1.5,
        "drive: the speed (m/s) a full deflection of the speed stick means: record-lap's "
        "--max-speed",
        positive,
    )
    demo_speed: float = param(
        2.0,
        "demonstrate: the speed it drives demonstrations at (m/s; 0: as fast as it dares)",
        _not_negative,
    )
    demo_seconds: float = param(
        20.0, "demonstrate: seconds of clean driving before it presses success", positive
    )
    press_s: float = param(0.3, "how long one success press is held (s)", positive)
    rate_hz: float = param(50.0, "publishing rate of /teleop/twist and /teleop/joy (Hz)", positive)
    control_hz: float = param(10.0, "how often it decides (Hz): the task's control rate", positive)
    max_age: float = param(
        0.5, "the operator acts only on a world state younger than this (s, by arrival)", positive
    )
    correct_offset: float = param(
        0.0,
        "watch: step in when the car is this far (m) off the centreline (the corridor's "
        "half-width is 0.7); 0 = never (hands off)",
        _not_negative,
    )
    takeover_steps: int = param(20, "watch: most control periods of one correction", _at_least_one)
    total_share: float = param(
        0.2, "watch: most corrected periods over the run, as a share", _share
    )
