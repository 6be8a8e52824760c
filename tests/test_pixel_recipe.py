"""Which recipe `robot-rl train` takes: the pixel recipe whenever cameras are given on the twin."""

from __future__ import annotations

import tyro

from robot_rl.envs.task import task_class
from robot_rl.runtime.recipes import PIXEL_RECIPE, resolve
from robot_rl.runtime.train_loop import TrainConfig


def parsed(*args: str) -> TrainConfig:
    """The resolved config of `robot-rl train ARGS` (the same parser the command uses)."""
    return resolve(tyro.cli(TrainConfig, args=list(args)))


def test_cameras_take_the_pixel_recipe_on_top_of_the_tasks():
    cfg = parsed("--task", "pick_cube", "--cameras", "front", "wrist")
    assert (cfg.image_size, cfg.batch_size) == (
        PIXEL_RECIPE["image_size"],
        PIXEL_RECIPE["batch_size"],
    )
    assert (cfg.image_size, cfg.batch_size) == (32, 64)
    assert cfg.total_steps == task_class("pick_cube").recipe["total_steps"]
    assert cfg.demos == task_class("pick_cube").recipe["demos"]
    assert cfg.resolved_privileged_state() is False  # pixels only


def test_state_runs_keep_the_defaults():
    cfg = parsed("--task", "pick_cube")
    default = TrainConfig()
    assert (cfg.image_size, cfg.batch_size) == (default.image_size, default.batch_size)
    gym = parsed("--backend", "gym", "--cameras", "front")
    assert (gym.image_size, gym.batch_size) == (default.image_size, default.batch_size)


def test_a_value_the_user_gives_wins_over_the_pixel_recipe():
    cfg = parsed(
        "--cameras", "front", "--image-size", "48", "--batch-size", "128", "--total-steps", "3000"
    )
    assert (cfg.image_size, cfg.batch_size, cfg.total_steps) == (48, 128, 3000)
    only_size = parsed("--cameras", "front", "--image-size", "96")
    assert (only_size.image_size, only_size.batch_size) == (96, PIXEL_RECIPE["batch_size"])


def test_a_typed_value_equal_to_the_default_still_wins():
    """A sentinel, not equality with the default: `--batch-size 256 --image-size 64` with a
    camera trains at 256 and 64, not at the pixel recipe's 64 and 32."""
    cfg = parsed("--task", "pick_cube", "--cameras", "front", "--batch-size", "256",
                 "--image-size", "64")  # fmt: skip
    assert (cfg.image_size, cfg.batch_size) == (64, 256)
    assert cfg.total_steps == task_class("pick_cube").recipe["total_steps"]  # still unset


def test_the_pixel_recipe_can_be_turned_off():
    cfg = parsed("--cameras", "front", "--no-pixel-recipe")
    default = TrainConfig()
    assert (cfg.image_size, cfg.batch_size) == (default.image_size, default.batch_size)


def test_resolving_twice_changes_nothing():
    once = parsed("--cameras", "front")
    assert resolve(once) == once
