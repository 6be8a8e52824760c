"""The arm drivers' configs: each a dataclass whose fields are its node's ROS 2 parameters
(``robot_rl.drivers.config``), each registered by device type with ``register_device``. No ROS 2
and no device library here."""

from __future__ import annotations

from dataclasses import dataclass

from robot_rl.drivers.config import length, non_negative, param, positive, register_device

six_positive = (lambda v: len(v) == 6 and all(x > 0 for x in v), "must be 6 values, all > 0")
unit_interval = (lambda v: 0.0 < v < 1.0, "must lie in (0, 1)")
at_least_100 = (lambda v: v >= 100.0, "must be >= 100 (the topic contract's minimum rate)")


@register_device(
    "franka",
    kind="arm",
    executable="robot-rl-franka",
    node="robot_rl.drivers.arms.franka:FrankaDriver",
    summary="Franka FR3/Panda over libfranka (franky): Cartesian impedance, watchdog",
)
@dataclass(frozen=True)
class FrankaConfig:
    robot_ip: str = param("172.16.0.2", "address of the robot's control box (FCI)")
    gripper: bool = param(True, "connect to the Franka Hand and serve cmd/gripper")
    connect_timeout: float = param(
        5.0, "configure fails when the robot has not answered within this many seconds", positive
    )
    reconnect_period: float = param(
        1.0, "seconds between reconnection attempts after the connection is lost", positive
    )
    state_hz: float = param(200.0, "rate of the state topics (Hz)", at_least_100)
    diagnostics_hz: float = param(1.0, "/diagnostics rate (Hz)", positive)
    command_max_age: float = param(
        0.2, "refuse a command whose stamp is older than this (s)", positive
    )
    watchdog_timeout: float = param(
        0.3,
        "hold the arm where it is when no valid pose command arrived within this many seconds",
        positive,
    )
    workspace_min: tuple = param(
        [0.25, -0.4, 0.05], "lower corner of the box the target stays in (base frame, m)", length(3)
    )
    workspace_max: tuple = param(
        [0.8, 0.4, 0.7], "upper corner of the box the target stays in (base frame, m)", length(3)
    )
    max_step_translation: float = param(
        0.03,
        "a command moves the target at most this far from the measured TCP position (m)",
        positive,
    )
    max_step_rotation: float = param(
        0.2,
        "a command turns the target at most this far from the measured TCP orientation (rad)",
        positive,
    )
    cartesian_impedance: tuple = param(
        [2000.0, 2000.0, 2000.0, 150.0, 150.0, 150.0],
        "stiffness of the Cartesian impedance controller, "
        "critically damped: x, y, z (N/m), roll, pitch, yaw "
        "(Nm/rad)",
        six_positive,
    )
    translational_error_clip: float = param(
        0.01,
        "the controller sees at most this position error per axis (m): bounds force and speed",
        positive,
    )
    rotational_error_clip: float = param(
        0.05, "the controller sees at most this orientation error per axis (rad)", positive
    )
    torque_threshold: float = param(
        20.0, "collision reflex threshold on joint torques (Nm)", positive
    )
    force_threshold: float = param(
        30.0, "collision reflex threshold on the Cartesian force (N)", positive
    )
    reset_pose: tuple = param(
        [0.55, 0.0, 0.5, 0.0, 1.0, 0.0, 0.0],
        "pose the reset service moves to: x, y, z (m), quaternion w, x, y, z",
        length(7),
    )
    reset_speed: float = param(0.1, "speed of the reset motion's reference (m/s)", positive)
    reset_timeout: float = param(
        15.0,
        "the reset service fails when the pose is not reached within this many seconds",
        positive,
    )
    home_joints: tuple = param(
        [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785],
        "joint configuration (rad) a joint reset moves to, before the reset pose: the arm's "
        "ready pose, high above the table",
        length(7),
    )
    joint_reset_drift: float = param(
        0.3,
        "at the reset pose, joints farther than this (rad) from where the last joint reset "
        "left them there have drifted in the null space: the arm goes to home_joints and the "
        "reset runs again (0: no joint moves; franka_joint_reset)",
        non_negative,
    )
    joint_reset_speed: float = param(
        0.1, "a joint reset's speed, as a share of the arm's joint limits", unit_interval
    )
    nullspace_stiffness: float = param(
        10.0,
        "joint stiffness (Nm/rad) that pulls the arm's posture towards home_joints in the "
        "Cartesian controller's null space (franky's PostureTask; 10 is franka_ros's Cartesian "
        "impedance example's default): the elbow stays put between resets, so the cameras see "
        "the same arm; the TCP task is unchanged to first order (0: none, the elbow drifts)",
        non_negative,
    )
    gripper_threshold: float = param(
        0.5, "cmd/gripper at or above this closes the hand (grasp), below opens it", unit_interval
    )
    gripper_speed: float = param(0.1, "finger speed (m/s)", positive)
    gripper_force: float = param(40.0, "grasping force (N)", positive)


@register_device(
    "so101",
    kind="arm",
    executable="robot-rl-so101",
    node="robot_rl.drivers.arms.so101:So101Driver",
    summary="SO-100/SO-101 arm on Feetech STS3215 bus servos: TCP pose through kinematics",
)
@dataclass(frozen=True)
class So101Config:
    port: str = param(
        "/dev/ttyACM0",
        "the servo bus adapter's serial port (a /dev/serial/by-id/... link survives a replug)",
    )
    baudrate: int = param(1_000_000, "the bus's baud rate", positive)
    calibration_file: str = param(
        "",
        "LeRobot's calibration file of this arm (lerobot-calibrate writes it under "
        "~/.cache/huggingface/lerobot/calibration/robots/so101_follower/); empty: every range "
        "centred on the servos' middle tick",
    )
    state_hz: float = param(50.0, "rate of the bus reads and the state topics (Hz)", positive)
    diagnostics_hz: float = param(1.0, "/diagnostics rate (Hz)", positive)
    reconnect_period: float = param(
        0.5, "seconds between reopening attempts after the bus failed", positive
    )
    command_max_age: float = param(
        0.3, "refuse a command whose stamp is older than this (s)", positive
    )
    watchdog_timeout: float = param(
        0.5, "hold where the arm is when no valid pose command arrived within (s)", positive
    )
    workspace_min: tuple = param(
        [0.1, -0.2, 0.01], "lower corner of the box the target stays in (base frame, m)", length(3)
    )
    workspace_max: tuple = param(
        [0.4, 0.2, 0.3], "upper corner of the box the target stays in (base frame, m)", length(3)
    )
    max_step_translation: float = param(
        0.02, "a command moves the target at most this far from the measured TCP (m)", positive
    )
    max_joint_step: float = param(
        0.15, "no joint's goal moves more than this per bus cycle (rad)", positive
    )
    hold_deadband: float = param(
        0.0015,
        "a pose target this near the target in force (m, the same orientation) keeps it: a "
        "task's zero action re-sends the measured TCP, and re-aiming position servos at their "
        "own reading each period walks the arm off (about 7 mm in 16 s at rest in the cell)",
        non_negative,
    )
    max_temperature: float = param(
        65.0, "a servo hotter than this (C) is a fault: torque off until clear_error", positive
    )
    reset_joints: tuple = param(
        [0.0, -0.6, 0.9, 0.4, 0.0],
        "joint angles the reset service moves to (rad; shoulder_pan, shoulder_lift, "
        "elbow_flex, wrist_flex, wrist_roll; zero: each joint's calibrated middle): a joint "
        "target, since a five-joint arm cannot reach every TCP pose",
        length(5),
    )
    reset_speed: float = param(0.5, "the reset's joint speed (rad/s)", positive)
    reset_timeout: float = param(
        10.0, "the reset service fails when the joints are not there within (s)", positive
    )
    gripper_threshold: float = param(
        0.5, "cmd/gripper at or above this closes the jaw, below opens it", unit_interval
    )
    gripper_open: float = param(
        0.3,
        "the jaw's angle an open command moves it to (rad; closed is its low limit, -0.17): "
        "gripper/joint_states reads 0 there",
        (lambda v: -0.17 < v <= 1.74, "must be above the closed limit -0.17 and at most 1.74"),
    )
