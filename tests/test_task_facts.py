"""What a task owns besides its loop (class attributes on the task, not dicts keyed by its
name elsewhere): its twin scene and the objects in it, its teleop axes, its recipe, its
backward task. Each one checked against what reads it."""

from __future__ import annotations

import pytest

from robot_rl.envs.task import TASKS, make_task, task_class
from robot_rl.runtime.recipes import FALLBACK, resolve


def _all_tasks():
    import robot_rl.tasks  # noqa: F401  (registers them)

    return sorted(TASKS)


@pytest.mark.parametrize("name", _all_tasks())
def test_an_arm_task_names_a_scene_that_holds_the_objects_it_reads(name):
    from robot_rl.sim.arm_scenes import SCENES, build_scene  # MJCF text; no MuJoCo import

    task = make_task(name)
    if task.robot == "so101":  # its twin's one scene: the table and the cube
        assert task.scene is None and task.twin_objects == ("cube",)
        return
    if task.robot != "arm":
        assert task.scene is None and task.twin_objects == ()
        return
    assert task.scene in SCENES
    scene = build_scene(task.scene)
    placed = set(scene.free_objects) | set(scene.mocap_objects) | set(scene.object_sites)
    assert set(task.twin_objects) == placed


@pytest.mark.parametrize("name", _all_tasks())
def test_recipe_and_backward_task_are_well_formed(name):
    cls = task_class(name)
    if cls.recipe is not None:
        assert set(cls.recipe) == set(FALLBACK)
    if cls.backward_task is not None:
        backward = task_class(cls.backward_task)
        assert (backward.robot, backward.scene) == (cls.robot, cls.scene)
        assert backward.backward_task is None  # the pair, not a chain


def test_the_owners_say_what_the_dicts_said():
    assert task_class("pick_cube").backward_task == "put_down_cube"
    # put_down_cube shares pick_cube's scene and axes, not its recipe
    assert task_class("put_down_cube").scene == task_class("pick_cube").scene
    assert task_class("put_down_cube").recipe is None
    assert task_class("car_lap").teleop_axes == ("linear.x", "angular.z")


def test_the_ros_backend_reads_the_tasks_twin_objects_only_where_the_twin_is_read():
    pytest.importorskip("rclpy")
    from robot_rl.ros.backend import _privileged_objects

    assert _privileged_objects(make_task("peg_insert")) == ("board", "peg", "hole")
    blind = make_task("pick_cube", privileged_state=False, ground_truth=False)
    assert _privileged_objects(blind) == ()


def test_one_resolver_for_train_and_the_learner():
    from robot_rl.runtime.learner import LearnerConfig
    from robot_rl.runtime.train_loop import TrainConfig

    recipe = task_class("peg_insert").recipe
    learner = resolve(LearnerConfig(task="peg_insert"), recorded_demos=True)
    train = resolve(TrainConfig(task="peg_insert"))
    for cfg in (learner, train):
        assert (cfg.total_steps, cfg.demos, cfg.start_steps) == (
            recipe["total_steps"],
            recipe["demos"],
            recipe["start_steps"],
        )
    # the learner's rule: recorded demonstrations, or a robot, mean no scripted ones
    assert resolve(LearnerConfig(demo_path="d.mcap"), recorded_demos=True).demos == 0
    assert resolve(LearnerConfig(robot_mode=True), recorded_demos=True).demos == 0
    assert resolve(LearnerConfig(robot_mode=True, demos=3), recorded_demos=True).demos == 3
    assert resolve(LearnerConfig(task="put_down_cube")).total_steps == FALLBACK["total_steps"]
    # the learner has no pixel recipe: its batch stays its own
    assert resolve(LearnerConfig(cameras=("front",))).batch_size == LearnerConfig().batch_size
