"""The ROS 2 robot backend: the ArmBackend / CarBackend contract over the driver topics.

It spins its own rclpy node (in a private context, so the host process may use rclpy too) on a
background thread. Incoming messages are converted to reading entries as they arrive; ``read``
assembles the newest of every required topic with approximate time sync and a staleness bound
(``robot_rl.ros.sync``) and raises ``StaleReadingError`` naming the topic at fault. With
``use_sim_time`` every age and period is in simulated seconds from ``/clock`` (the twin may run
faster than real time), and a silent ``/clock`` is itself stale.
"""

from __future__ import annotations

import threading
import time
from collections import deque

import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped, Twist, TwistStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.context import Context
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, Imu, JointState
from std_msgs.msg import Bool, Float64
from std_srvs.srv import SetBool, Trigger

from robot_rl.envs.backend import Command, Reading, StaleReadingError
from robot_rl.robot_kinds import resolve, robot_kind
from robot_rl.ros import convert
from robot_rl.ros.arm_contract import ARM_JOINTS, SO101_JOINTS
from robot_rl.ros.background_node import call_service
from robot_rl.ros.config import RosBackendConfig
from robot_rl.ros.executors import SpinThread, new_executor
from robot_rl.ros.qos import command_qos, sensor_qos
from robot_rl.ros.reading_entries import (
    arm_joint_entries,
    camera_entries,
    gripper_entries,
    pose_entries,
    twist_entries,
    wrench_entries,
)
from robot_rl.ros.settle import SETTLED, STALLED, SettleWatch
from robot_rl.ros.sync import TopicHistory, synchronise

FRAME_WINDOW = 0.1
"""On the robot a control tick waits for the next frames within this share of a period either
side of its schedule (``RosBackendConfig.frame_paced``): the control period stays within 1.1x
the task's, and the loop locks onto cameras that publish at its rate."""
COMMAND_AGE_HISTORY = 20_000
"""Policy commands whose newest frame's age is kept (``frame_to_command``)."""


class RosRobotBackend:
    """Topic plumbing, time, sync and services shared by the arm and the car backends."""

    is_simulated = False  # the scene is placed by the twin node's reset service, not from here

    def __init__(self, task, config: RosBackendConfig, default_namespace: str):
        self.task = task
        self.config = config
        self.control_hz = float(task.control_hz)
        self.camera_names = tuple(task.cameras)
        self.namespace = (config.namespace or default_namespace).rstrip("/")
        self._histories: list[TopicHistory] = []
        self._clock = threading.Condition()
        self._sim_now: float | None = None
        self._clock_wall: float | None = None
        self._last_tick: float | None = None
        self.reading_stamp: float | None = None
        """The stamp of the slowest sensor in the last reading (its age says how old the
        observation is)."""
        self.frame_stamp: float | None = None
        """The newest camera frame's stamp in the last reading (None without cameras)."""
        self.frame_to_command: deque[float] = deque(maxlen=COMMAND_AGE_HISTORY)
        """Per policy command: its stamp less ``frame_stamp`` (s), the newest frame's age."""
        self.frame_age_at_tick: deque[float] = deque(maxlen=COMMAND_AGE_HISTORY)
        """Per frame-paced tick: the newest frame's age when the tick came (s): what the
        cameras and the transport take, before the actor's own work."""
        self._arrivals = threading.Condition()
        self._camera_histories: list[TopicHistory] = []
        self.camera_info: dict[str, CameraInfo] = {}
        """Per camera, the driver's newest ``camera_info`` (what recordings say of the images)."""
        self._frames_at_tick: list[float | None] = []
        self._context = Context()
        # never the host's argv: only the ROS arguments meant for this node
        rclpy.init(context=self._context, args=list(config.ros_args))
        sim_time = config.use_sim_time
        overrides = [] if sim_time is None else [Parameter("use_sim_time", value=sim_time)]
        self.node = rclpy.create_node(
            config.node_name or f"robot_rl_backend_{task.robot}",
            context=self._context,
            parameter_overrides=overrides,
        )
        self.use_sim_time = bool(self.node.get_parameter("use_sim_time").value)
        if self.use_sim_time:
            self.node.create_subscription(Clock, "/clock", self._on_clock, sensor_qos(1))
        for camera in self.camera_names:
            ns = config.camera_namespaces.get(camera, f"/{camera}_cam").rstrip("/")
            self._camera_histories.append(
                self.subscribe(f"{ns}/image_raw", Image, self._image_extractor(camera), True)
            )
            keep = lambda msg, camera=camera: self.camera_info.__setitem__(camera, msg)
            self.node.create_subscription(CameraInfo, f"{ns}/camera_info", keep, sensor_qos())
        self._clients: dict[str, object] = {}
        executor = new_executor(self._context)
        executor.add_node(self.node)
        self._spinner = SpinThread(executor, self._context, "ros-backend")

    def topic(self, relative: str) -> str:
        return f"{self.namespace}/{relative}"

    def subscribe(self, topic: str, msg_type, extract, notify: bool = False) -> TopicHistory:
        """Keep a history of ``extract(msg)`` (reading entries) stamped by the header;
        ``notify``: wake a control tick waiting for frames (``advance``)."""
        # reach back past the staleness bound: the slowest sensor's newest sample may be that old
        history = TopicHistory(topic, window=max(1.0, 2 * (self.config.max_age + self.config.slop)))
        logger = self.node.get_logger()

        def callback(msg) -> None:
            try:
                entries = extract(msg)
            except (ValueError, KeyError) as error:  # malformed data never becomes a reading
                logger.warning(f"{topic}: dropped a message: {error}", throttle_duration_sec=5.0)
                return
            history.add(convert.from_stamp(msg.header.stamp), entries)
            if notify:
                with self._arrivals:
                    self._arrivals.notify_all()

        self.node.create_subscription(msg_type, topic, callback, sensor_qos())
        self._histories.append(history)
        return history

    def _image_extractor(self, camera: str):
        return camera_entries(camera, self.task.image_size)

    def _on_clock(self, msg: Clock) -> None:
        with self._clock:
            self._sim_now = convert.from_stamp(msg.clock)
            self._clock_wall = time.monotonic()
            self._clock.notify_all()

    def now(self) -> float:
        """Seconds on the clock that stamps the sensors (simulated or wall time)."""
        if not self.use_sim_time:
            return time.time()
        with self._clock:
            return -np.inf if self._sim_now is None else self._sim_now

    def _check_clock(self) -> None:
        if not self.use_sim_time:
            return
        with self._clock:
            wall = self._clock_wall
        if wall is None:
            raise StaleReadingError("/clock: no simulated time received yet")
        silent = time.monotonic() - wall
        if silent > self.config.clock_timeout:
            raise StaleReadingError(f"/clock: silent for {silent:.2f} s (physics stopped?)")

    def _wait_until(self, target: float) -> None:
        if not self.use_sim_time:
            time.sleep(max(0.0, target - time.time()))
            return
        # bounded on the wall clock: a stopped simulation must not hang the control loop
        wall_deadline = time.monotonic() + self.config.clock_timeout
        with self._clock:
            while self._sim_now is None or self._sim_now < target:
                left = wall_deadline - time.monotonic()
                if left <= 0:
                    return
                self._clock.wait(left)

    def read(self) -> Reading:
        self._check_clock()
        stamps: dict[str, float] = {}
        reading, self.reading_stamp = synchronise(
            self._histories, self.now(), self.config.max_age, self.config.slop, stamps
        )
        cameras = [stamps[h.topic] for h in self._camera_histories]
        self.frame_stamp = max(cameras) if cameras else None
        return self.complete(reading)

    def _note_command(self, stamp: float) -> None:
        """A policy command stamped ``stamp`` left: how old the newest frame it saw was."""
        if self.frame_stamp is not None:
            self.frame_to_command.append(stamp - self.frame_stamp)

    def complete(self, reading: Reading) -> Reading:
        """Derived entries a subclass adds to a synchronised reading."""
        return reading

    def advance(self) -> None:
        """Return one control period after the previous return; a late caller is not made to
        catch up (the schedule restarts from now)."""
        period = 1.0 / self.control_hz
        now = self.now()
        target = now + period if self._last_tick is None else max(now, self._last_tick + period)
        if self.use_sim_time or not self.config.frame_paced or not self._camera_histories:
            self._wait_until(target)
            self._last_tick = target
            return
        # on the robot: tick on the next set of frames near the schedule (frame_paced)
        self._wait_until(target - FRAME_WINDOW * period)
        deadline = target + FRAME_WINDOW * period
        with self._arrivals:
            while not self._new_frames() and time.time() < deadline:
                self._arrivals.wait(max(0.0, deadline - time.time()))
        self._frames_at_tick = [h.newest() for h in self._camera_histories]
        self._last_tick = time.time()
        if None not in self._frames_at_tick:
            self.frame_age_at_tick.append(self._last_tick - max(self._frames_at_tick))

    def _new_frames(self) -> bool:
        """Every camera has a frame newer than it had at the previous tick."""
        before = self._frames_at_tick or [None] * len(self._camera_histories)
        for history, then in zip(self._camera_histories, before, strict=True):
            newest = history.newest()
            if newest is None or (then is not None and newest <= then):
                return False
        return True

    def wait_until_ready(self, timeout: float | None = None) -> Reading:
        """Poll ``read`` until it succeeds; re-raise the last staleness after ``timeout``."""
        deadline = time.monotonic() + (timeout or self.config.ready_timeout)
        while True:
            try:
                return self.read()
            except StaleReadingError as error:
                if time.monotonic() > deadline:
                    raise StaleReadingError(f"not ready after waiting: {error}") from error
            time.sleep(0.02)

    def _call(self, srv_type, name: str, request):
        topic = self.topic(name)
        client = self._clients.get(topic)
        if client is None:
            client = self._clients[topic] = self.node.create_client(srv_type, topic)
        timeout = self.config.service_timeout
        if not client.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(f"service {topic} not available after {timeout} s")
        response = call_service(client, request, timeout)
        if response is None:
            raise TimeoutError(f"service {topic} did not answer within {timeout} s")
        return response

    def reset_robot(self) -> str:
        """The driver's reset: to its reset pose (the twin also randomises its scene). An
        engaged e-stop pauses it (up to ``ready_timeout``) until the operator releases it, and
        so does a driver still on its way to active (its services answer from configure on,
        and a loaded machine may take a while from there)."""
        deadline = time.monotonic() + self.config.ready_timeout
        while True:
            response = self._call(Trigger, "reset", Trigger.Request())
            if response.success:
                break
            waiting = any(
                reason in response.message for reason in ("e-stop", "not configured", "not active")
            )
            if not waiting or time.monotonic() > deadline:
                raise RuntimeError(f"{self.topic('reset')} refused: {response.message}")
            time.sleep(0.1)
        self._last_tick = None
        return response.message

    def estop(self, engaged: bool = True) -> str:
        return self._call(SetBool, "estop", SetBool.Request(data=bool(engaged))).message

    def clear_error(self) -> str:
        return self._call(Trigger, "clear_error", Trigger.Request()).message

    def pause_simulation(self, paused: bool) -> str:
        """The twin node's ``pause`` service (a twin only): its simulated time stands still."""
        return self._call(SetBool, "pause", SetBool.Request(data=bool(paused))).message

    def close(self) -> None:
        self._spinner.close(self.node)


class RosArmBackend(RosRobotBackend):
    """ArmBackend over ``joint_states``, ``ee_pose``, ``ee_twist``, ``ee_wrench``,
    ``gripper/joint_states`` (+ cameras, + twin-only object poses); commands on ``cmd/ee_pose``
    and ``cmd/gripper``."""

    joint_names = ARM_JOINTS
    """The arm's joints on ``joint_states`` (a reading's ``joint_pos``, in this order)."""
    force_sensor = True
    """The arm publishes ``ee_wrench`` (a reading's ``wrench``)."""

    def __init__(self, task, config: RosBackendConfig | None = None):
        config = config or RosBackendConfig()
        super().__init__(task, config, "/arm")
        t = self.topic
        # the conversions shared with ROS 2 bags (robot_rl.ros.reading_entries.ARM_TOPICS)
        self._pose = self.subscribe(t("ee_pose"), PoseStamped, pose_entries("tcp"))
        self.subscribe(t("joint_states"), JointState, arm_joint_entries(self.joint_names))
        self.subscribe(t("ee_twist"), TwistStamped, twist_entries)
        if self.force_sensor:
            self.subscribe(t("ee_wrench"), WrenchStamped, wrench_entries)
        self.subscribe(t("gripper/joint_states"), JointState, gripper_entries)
        objects = config.objects if config.objects is not None else _privileged_objects(task)
        for name in objects:
            self.subscribe(f"/sim/objects/{name}/pose", PoseStamped, pose_entries(f"object/{name}"))
        self._pose_pub = self.node.create_publisher(PoseStamped, t("cmd/ee_pose"), command_qos())
        self._gripper_pub = self.node.create_publisher(Float64, t("cmd/gripper"), command_qos())
        self._quat = np.array([0.0, 1.0, 0.0, 0.0])
        self._driver_reset_due = True

    def send(self, command: Command) -> None:
        self._note_command(self._publish(command))
        self._driver_reset_due = True  # the next move_to begins a new reset procedure

    def _publish(self, command: Command) -> float:
        """Publish the pose (and gripper) command; returns its stamp."""
        pos = np.asarray(command["tcp_pos"], np.float64)
        quat = np.asarray(command.get("tcp_quat", self._quat), np.float64)
        stamp = max(self.now(), 0.0)
        msg = convert.pose_to_msg(pos, quat, stamp, "base")  # refuses non-finite values
        gripper = command.get("gripper")
        if gripper is not None:
            value = float(np.asarray(gripper).reshape(-1)[0])
            if not np.isfinite(value):
                raise ValueError(f"non-finite gripper command refused: {gripper}")
            self._gripper_pub.publish(Float64(data=float(np.clip(value, 0.0, 1.0))))
        self._pose_pub.publish(msg)
        self._quat = quat
        return stamp

    def begin_reset(self) -> None:
        """The driver's ``reset`` service, once per reset procedure (the first ever, or the
        first after policy commands): the driver moves to its reset pose, and the twin node
        also randomises its scene; the task's own sequence then runs from there."""
        if self._driver_reset_due:
            self.reset_robot()
            self._driver_reset_due = False

    def move_to(self, tcp_pos: np.ndarray, tcp_quat: np.ndarray, gripper: float) -> None:
        """Stream the pose until the TCP settles there, then wait until every sensor is fresh.
        A procedure that did not call ``begin_reset`` gets the driver's reset here, first."""
        self.begin_reset()
        start = self.now()
        target = np.asarray(tcp_pos, np.float64)
        command = {"tcp_pos": target, "tcp_quat": np.asarray(tcp_quat), "gripper": [gripper]}
        config = self.config
        watch = SettleWatch(target, config.settle_tolerance, config.settle_stall)
        deadline = time.monotonic() + config.ready_timeout
        over, seen = None, start
        while over is None and time.monotonic() < deadline:
            self._publish(command)
            self.advance()
            entries = self._pose.snapshot()
            if entries and entries[-1][0] > seen:  # a new reading, timed by its stamp
                seen = entries[-1][0]
                over = watch.update(entries[-1][1]["tcp_pos"], seen)
        if over != SETTLED:
            late = f"was still off after {config.ready_timeout} s,"
            why = "stood still" if over == STALLED else late
            self.node.get_logger().warning(
                f"move_to: the TCP {why} {watch.error:.3f} m from {target} "
                f"(tolerance {config.settle_tolerance} m); the reset goes on from there"
            )
        self.wait_until_ready()  # the episode starts only once every sensor is fresh

    def place_object(self, name: str, pos: np.ndarray, quat: np.ndarray) -> None:
        raise NotImplementedError(
            "the ROS backend cannot place objects; the twin node's reset service randomises "
            "the scene"
        )


class RosCarBackend(RosRobotBackend):
    """CarBackend over ``odom`` and ``imu`` (+ cameras), enough for crash detection; commands on
    ``cmd_vel``. ``imu_accel_peak`` spans every IMU sample since the previous read (the IMU
    streams faster than the policy, so a spike between two reads still counts). ``collision``
    (``/sim/collision``, latched until the next read) only with ``twin_collision``: evaluation in
    the twin, never the car itself."""

    FLIP_UP_Z = 0.3

    def __init__(self, task, config: RosBackendConfig | None = None, twin_collision: bool = False):
        config = config or RosBackendConfig()
        super().__init__(task, config, "/car")
        self.subscribe(self.topic("odom"), Odometry, self._odom_entries)
        self.subscribe(self.topic("imu"), Imu, self._imu_entries)
        self._latch_lock = threading.Lock()
        self._accel_peak = np.zeros(3)
        self._collided: bool | None = None
        if twin_collision:
            self._collided = False
            self.node.create_subscription(Bool, "/sim/collision", self._on_collision, sensor_qos())
        self._cmd_pub = self.node.create_publisher(Twist, self.topic("cmd_vel"), command_qos())

    def _odom_entries(self, msg: Odometry) -> Reading:
        pos, quat, velocity = convert.odometry_to_arrays(msg)
        _, x, y, _ = quat
        up_z = 1 - 2 * (x * x + y * y)
        pose = np.array([pos[0], pos[1], convert.quat_to_yaw(quat)])
        return {
            "odom_pose": pose,
            "pose": pose.copy(),  # on a car the only pose there is: its odometry's
            "velocity": np.array([velocity[0], velocity[1], velocity[5]]),
            "flipped": np.array([float(up_z < self.FLIP_UP_Z)]),
        }

    def _imu_entries(self, msg: Imu) -> Reading:
        _, gyro, accel = convert.imu_to_arrays(msg)
        with self._latch_lock:
            if np.hypot(accel[0], accel[1]) >= np.hypot(*self._accel_peak[:2]):
                self._accel_peak = accel.copy()
        return {"imu_accel": accel, "imu_gyro": gyro}

    def _on_collision(self, msg: Bool) -> None:
        if msg.data:
            with self._latch_lock:
                self._collided = True

    def complete(self, reading: Reading) -> Reading:
        with self._latch_lock:
            peak, self._accel_peak = self._accel_peak, np.zeros(3)
            if np.hypot(*reading["imu_accel"][:2]) > np.hypot(*peak[:2]):
                peak = reading["imu_accel"].copy()
            reading["imu_accel_peak"] = peak
            if self._collided is not None:
                reading["collision"] = np.array([float(self._collided)])
                self._collided = False
        return reading

    def send(self, command: Command) -> None:
        speed = float(np.asarray(command["speed"]).reshape(-1)[0])
        steering = float(np.asarray(command["steering"]).reshape(-1)[0])
        yaw_rate = speed * np.tan(steering) / self.config.wheelbase
        self._cmd_pub.publish(convert.array_to_twist([speed, 0, 0, 0, 0, yaw_rate]))
        self._note_command(self.now())

    def place_car(self, x: float, y: float, yaw: float) -> None:
        raise NotImplementedError(
            "the ROS backend cannot place the car; call reset_robot() (the twin node's reset "
            "service runs the task's reset procedure)"
        )


class RosSo101Backend(RosArmBackend):
    """The arm contract of an SO-100/SO-101: its five joints, no ``ee_wrench`` (the arm has no
    force sensor)."""

    joint_names = SO101_JOINTS
    force_sensor = False


def _privileged_objects(task) -> tuple[str, ...]:
    """The twin objects a task's privileged state or scoring reads (none in robot mode:
    ``Task.reads_twin``); the task names them (``Task.twin_objects``)."""
    return tuple(task.twin_objects) if task.reads_twin() else ()


def make_ros_backend(task, config: RosBackendConfig | None = None) -> RosRobotBackend:
    return resolve(robot_kind(task.robot).ros_backend)(task, config)
