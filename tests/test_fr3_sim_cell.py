"""The simulated FR3 cell posing as hardware (``hardware/fr3_sim.yaml``): its processes are
started from the hardware file itself (on a loopback address of this run's own) and met only as
a robot is met: the real Franka node connects to franky-sim over the libfranka protocol, the
test reads the camera contract topics and the teleop topics, and builds the actor's ROS backend
as ``up robot`` would. Waits are long and bounded: on a loaded machine franky-sim runs slower
than real time (its real-time factor is on /diagnostics and in ``benchmarks/fr3_sim_cell.py``).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

pytest.importorskip("franky")
pytest.importorskip("franky_sim")
pytest.importorskip("mujoco")
pytest.importorskip("rclpy")

from process_helpers import CellProcesses, wait_for
from ros_helpers import Watcher

from robot_rl.sim.cells.franka_harness import ArmClient, cell_hardware, loopback_host


def _image(msg) -> np.ndarray:
    from robot_rl.ros.convert import image_to_rgb

    return image_to_rgb(msg)


@pytest.fixture(scope="module")
def cell(tmp_path_factory):
    """Every node of the hardware file (the world, the Franka node, both cameras, the operator)
    and a client for the arm. Nothing here acts on the operator's topics."""
    logs = tmp_path_factory.mktemp("fr3_cell")
    host = loopback_host(17)
    hardware = cell_hardware(host, logs)
    processes = CellProcesses(hardware, logs)
    arm = ArmClient("/arm")
    try:
        wait_for(arm.pose, 180.0, "the Franka node's first ee_pose from the cell")
        wait_for(
            lambda: arm.driver_status("/arm/franka_driver").get("motion_enabled") == "True",
            120.0,
            "the Franka node to become active",
        )
        yield processes, arm, hardware, logs
    finally:
        arm.close()
        codes = processes.stop()
        for name in processes.started:
            print(f"--- {name} ({codes.get(name)})\n{processes.output(name)[-2000:]}")


def test_the_franka_node_drives_the_cells_arm_over_libfranka(cell):
    processes, arm, _, _ = cell
    start = arm.position()
    target = np.array([0.5, 0.05, 0.25])
    reached = arm.track(target, tolerance=0.01, timeout=180.0)
    assert np.linalg.norm(reached - target) < 0.01
    assert np.linalg.norm(reached - start) > 0.1
    assert "connected to the Franka at" in processes.output("franka_driver")


def test_the_cameras_render_the_same_world_and_change_when_the_arm_moves(cell):
    from sensor_msgs.msg import CameraInfo, Image

    _, arm, _, _ = cell
    topics = {
        "/front_cam/image_raw": Image,
        "/wrist_cam/image_raw": Image,
        "/front_cam/camera_info": CameraInfo,
        "/wrist_cam/camera_info": CameraInfo,
    }
    watcher = Watcher(topics)
    try:
        wait_for(lambda: all(watcher.get(t) for t in topics), 120.0, "both cameras' frames")
        for camera in ("front", "wrist"):
            msg = watcher.get(f"/{camera}_cam/image_raw")
            assert (msg.encoding, msg.width, msg.height) == ("rgb8", 64, 64)
            assert msg.header.frame_id == camera
            assert abs(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9 - time.time()) < 30
            info = watcher.get(f"/{camera}_cam/camera_info")
            assert (info.width, info.height) == (64, 64) and info.k[0] > 0
        arm.track([0.45, -0.1, 0.28], tolerance=0.01, timeout=180.0)
        time.sleep(1.0)
        before = {c: _image(watcher.get(f"/{c}_cam/image_raw")) for c in ("front", "wrist")}
        arm.track([0.6, 0.1, 0.12], tolerance=0.01, timeout=180.0)
        arm.wait_still(timeout=120.0)
        time.sleep(1.0)
        for camera in ("front", "wrist"):
            after = _image(watcher.get(f"/{camera}_cam/image_raw"))
            changed = np.abs(after.astype(int) - before[camera].astype(int)).max(axis=2) > 20
            assert changed.mean() > 0.02, f"the {camera} camera did not see the arm move"
    finally:
        watcher.close()


def test_only_the_sim_topics_carry_the_ground_truth_and_reset_places_the_cube(cell):
    from geometry_msgs.msg import PoseStamped
    from std_msgs.msg import Bool
    from std_srvs.srv import Trigger

    from robot_rl.ros.convert import msg_to_pose

    _, arm, _, _ = cell
    watcher = Watcher({"/sim/objects/cube/pose": PoseStamped, "/sim/success": Bool})
    try:
        wait_for(
            lambda: watcher.get("/sim/objects/cube/pose") and watcher.get("/sim/success"),
            60.0,
            "the cube's pose and the success flag",
        )
        assert watcher.get("/sim/success").data is False
        first = msg_to_pose(watcher.get("/sim/objects/cube/pose"))[0]
        assert 0.4 <= first[0] <= 0.6 and abs(first[1]) <= 0.1 and abs(first[2] - 0.025) < 0.005
        placed = []
        for _ in range(3):
            response = arm.call(Trigger, "/sim/reset_objects", Trigger.Request())
            assert response.success, response.message
            before = watcher.counts["/sim/objects/cube/pose"]
            wait_for(
                lambda b=before: watcher.counts["/sim/objects/cube/pose"] > b + 5,
                60.0,
                "the cube's pose after the reset",
            )
            placed.append(msg_to_pose(watcher.get("/sim/objects/cube/pose"))[0])
        placed = np.array(placed)
        assert np.ptp(placed[:, :2], axis=0).max() > 0.01  # a new random place each time
        assert np.all(np.abs(placed[:, :2] - [0.5, 0.0]) <= 0.076)
    finally:
        watcher.close()


def test_the_actor_of_up_robot_reads_the_cell_and_subscribes_to_no_sim_topic(cell, tmp_path):

    from robot_rl.envs.task import make_task
    from robot_rl.hardware import load_hardware
    from robot_rl.ros.actor_node import parse_actor_args, split_ros_args
    from robot_rl.ros.backend import make_ros_backend
    from robot_rl.stack import StackConfig, actor_process

    _, _, hardware_file, _ = cell
    stack = StackConfig(
        task="pick_cube",
        mode="robot",
        hardware=str(hardware_file),
        cameras=("front", "wrist"),
        run_dir=str(tmp_path),
    )
    actor = actor_process(stack, load_hardware(hardware_file))
    actor.write_config()  # what up and the launch files do before it starts
    own, _ = split_ros_args(list(actor.arguments))
    cfg = parse_actor_args(own)
    task = make_task(cfg.task, **cfg.task_options(cfg.task))
    # wall time, as the actor node's use_sim_time parameter says in a robot stack
    backend = make_ros_backend(task, dataclasses.replace(cfg.ros, use_sim_time=False))
    try:
        topics = sorted(s.topic_name for s in backend.node.subscriptions)
        assert [t for t in topics if t.startswith("/sim/")] == []
        assert {"/front_cam/image_raw", "/wrist_cam/image_raw", "/arm/ee_pose"} <= set(topics)
        reading = backend.wait_until_ready(120.0)
        observation = task.observe(reading)
        assert observation["state"].shape == (7,)
        assert observation["front"].shape == observation["wrist"].shape == (64, 64, 3)
        assert not any(key.startswith("object/") for key in reading)
    finally:
        backend.close()


def test_the_operator_places_the_cube_anew_at_every_reset_of_the_arm(cell):
    """``place_each_episode`` (on in the cell's file): the operator sees the Franka node's reset
    begin on /diagnostics and, once the hand is clear, puts the cube somewhere new, so that
    episodes start from independent placements (evaluation's episodes are then independent)."""
    from geometry_msgs.msg import PoseStamped

    from robot_rl.ros.convert import msg_to_pose

    _, arm, _, _ = cell
    watcher = Watcher({"/sim/objects/cube/pose": PoseStamped})
    try:
        wait_for(lambda: watcher.get("/sim/objects/cube/pose"), 60.0, "the cube's pose")
        for away in ([0.45, 0.1, 0.22], [0.55, -0.1, 0.2]):
            arm.track(away, tolerance=0.01, timeout=180.0)  # an episode's motion, then reset
            before = msg_to_pose(watcher.get("/sim/objects/cube/pose"))[0]
            placed = int(arm.driver_status("/teleop/simulated_human").get("placements", "0"))
            assert arm.trigger("reset").success
            wait_for(
                lambda p=placed: (
                    int(arm.driver_status("/teleop/simulated_human").get("placements", "0")) > p
                ),
                60.0,
                "the operator's placement",
            )
            wait_for(
                lambda b=before: (
                    np.linalg.norm(
                        msg_to_pose(watcher.get("/sim/objects/cube/pose"))[0][:2] - b[:2]
                    )
                    > 0.002
                ),
                60.0,
                "the cube at its new place",
            )
    finally:
        watcher.close()


def test_the_simulated_operator_takes_over_a_stalled_arm_as_a_spacemouse_would(cell):
    """Nobody commands the arm: the policy has stalled. The operator steps in through the teleop
    topics, read by the actor's own ``RosTeleopSource``: the hold button and a deflection
    towards the cube (seen on /sim/), then hands back."""
    from geometry_msgs.msg import PoseStamped

    from robot_rl.ros.convert import msg_to_pose
    from robot_rl.ros.teleop import RosTeleopSource, TeleopMapping

    _, arm, _, _ = cell
    arm.wait_still(timeout=120.0)
    watcher = Watcher({"/sim/objects/cube/pose": PoseStamped})
    source = RosTeleopSource(TeleopMapping(), max_age_s=0.5)
    try:
        wait_for(lambda: watcher.get("/sim/objects/cube/pose"), 60.0, "the cube's pose")
        command = wait_for(
            lambda: (c := source.poll()) is not None and c.button and c,
            120.0,
            "the operator to take over",
        )
        cube = msg_to_pose(watcher.get("/sim/objects/cube/pose"))[0]
        towards = cube + np.array([0.0, 0.0, 0.05]) - arm.position()
        moving = np.abs(towards) > 0.03
        assert np.all(np.sign(command.action[:3][moving]) == np.sign(towards[moving]))
        released = wait_for(
            lambda: (c := source.poll()) is not None and not c.button and c,
            120.0,
            "the operator to hand back",
        )
        assert not np.any(released.action)
    finally:
        source.close()
        watcher.close()


def test_the_cameras_show_the_fr3_by_its_collision_meshes_where_its_visual_meshes_are():
    """The cameras render the arm's collision meshes (70x fewer triangles than its visual ones,
    which cost the cell's CPU a render of ~27 ms a frame): its silhouette stays where the
    visual meshes put it."""
    import mujoco

    from robot_rl.sim.cells.fr3_scene import CAMERA_GEOM_GROUPS, cell_model

    model = cell_model("pick_cube")
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    renderer = mujoco.Renderer(model, 64, 64)

    def render(groups, camera):
        option = mujoco.MjvOption()
        option.geomgroup[:] = [g in groups for g in range(6)]
        renderer.update_scene(data, camera=camera, scene_option=option)
        return renderer.render().astype(np.float64)

    assert 2 not in CAMERA_GEOM_GROUPS  # the visual meshes are what made the frames slow
    for camera in ("front", "wrist"):
        without_arm = render((0, 1), camera)
        visual = np.abs(render((0, 1, 2), camera) - without_arm).max(-1) > 30
        shown = np.abs(render(CAMERA_GEOM_GROUPS, camera) - without_arm).max(-1) > 30
        assert visual.sum() > 100, f"{camera}: the arm is in view"
        assert (visual & shown).sum() / (visual | shown).sum() > 0.7, camera
    renderer.close()
