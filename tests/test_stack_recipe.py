"""`robot-rl up` picks a pixel recipe its learner's device keeps up with (issue 26, point 5)."""

from __future__ import annotations

import pytest

from robot_rl.commands.up import UpConfig, planned_processes

ROBOT = {"hardware": "hardware/fr3_sim.yaml", "cameras": ("front", "wrist"), "operator": "joy"}


@pytest.mark.parametrize(
    ("backend", "sizes", "line"),
    [
        ("cpu", (32, 64), "recipe: pixels for a CPU learner (32 px, batch 64"),
        ("gpu", (64, 256), "recipe: pixels for a GPU learner (64 px, batch 256"),
    ],
)
def test_the_pixel_recipe_fits_the_learner_device(backend, sizes, line):
    cfg, said = UpConfig("robot", **ROBOT).with_recipe(backend)
    assert (cfg.image_size, cfg.batch_size) == sizes
    assert said.startswith(line)


def test_a_value_the_user_gave_wins_over_the_recipe():
    cfg, said = UpConfig("robot", **ROBOT, batch_size=128).with_recipe("cpu")
    assert (cfg.image_size, cfg.batch_size) == (32, 128) and "the rest as given" in said
    cfg, said = UpConfig("robot", **ROBOT, batch_size=128, image_size=48).with_recipe("gpu")
    assert (cfg.image_size, cfg.batch_size) == (48, 128) and said.startswith("recipe: as given")


def test_a_cpu_pixel_recipe_says_what_missing_onednn_costs(monkeypatch, tmp_path):
    from robot_rl.agents import onednn_prerequisites

    monkeypatch.setenv("ROBOT_RL_ONEDNN_CONV", "0")  # switched off: as good as missing
    _, said = UpConfig("robot", **ROBOT).with_recipe("cpu")
    assert said.splitlines()[1] == (
        "oneDNN convolutions unavailable (ROBOT_RL_ONEDNN_CONV=0): the pixel learner's "
        "convolutions run in XLA at about half the speed; pip install 'robot-rl[cpu-fast]' and "
        "a C++ compiler (g++) for the fast path"
    )
    assert len(UpConfig("robot", **ROBOT).with_recipe("gpu")[1].splitlines()) == 1
    monkeypatch.delenv("ROBOT_RL_ONEDNN_CONV")
    monkeypatch.setattr(onednn_prerequisites, "prefix", lambda: tmp_path)  # no wheel here
    _, said = UpConfig("robot", **ROBOT).with_recipe("cpu")
    assert f"no libdnnl.so under {tmp_path}/lib" in said


def test_state_runs_keep_the_learner_batch():
    cfg, said = UpConfig("sim").with_recipe("cpu")
    assert cfg.batch_size == 256 and said.startswith("recipe: state")


def test_the_processes_get_the_recipe(tmp_path):
    cfg = UpConfig("robot", **ROBOT, image_size=32, batch_size=64)
    processes = {p.name: p for p in planned_processes(cfg, tmp_path, "tcp://127.0.0.1:5998")}
    learner, actor = processes["learner"].config, processes["actor"].config
    assert (learner.batch_size, learner.image_size, actor.image_size) == (64, 32, 32)
    # the actor's staleness bounds follow the cell's 10 Hz cameras
    assert actor.ros.max_age == pytest.approx(0.3) and actor.ros.slop == pytest.approx(0.1)
