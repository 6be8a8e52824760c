"""Agent checkpoints: exact resume, atomic layout, clear refusal of a mismatched agent."""

import jax
import numpy as np
import pytest
from agent_fixtures import action_space, random_batch, state_space

from robot_rl.agents.checkpoint import (
    CheckpointError,
    latest_checkpoint,
    list_checkpoints,
    read_config,
    restore_agent,
    save_checkpoint,
)
from robot_rl.agents.config import AgentConfig
from robot_rl.agents.sac import SACAgent

CFG = AgentConfig(hidden_dims=(32, 32), num_critics=4, critic_subsample=2, gripper=True)


def test_restore_then_update_equals_continuing(tmp_path):
    agent = SACAgent.create(0, state_space(), action_space(3), CFG)
    agent, _ = agent.update(random_batch(state_space(), 3, 64, seed=1, gripper=True), 2)
    save_checkpoint(tmp_path, 1, agent)

    batch = random_batch(state_space(), 3, 64, seed=2, gripper=True)
    continued, _ = agent.update(batch, 2)
    continued_action, _ = continued.sample_actions({"state": np.ones(6, np.float32)})

    fresh = SACAgent.create(123, state_space(), action_space(3), CFG)  # other seed on purpose
    restored = restore_agent(tmp_path, fresh)
    resumed, _ = restored.update(batch, 2)
    resumed_action, _ = resumed.sample_actions({"state": np.ones(6, np.float32)})

    for a, b in zip(jax.tree.leaves(continued), jax.tree.leaves(resumed), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(continued_action, resumed_action)


def test_checkpoint_files_are_plain_data_not_pickle(tmp_path):
    agent = SACAgent.create(0, state_space(), action_space(3), CFG)
    path = save_checkpoint(tmp_path, 7, agent)
    assert sorted(p.name for p in path.iterdir()) == ["agent.msgpack", "config.json", "meta.json"]
    assert b"\x80\x04" not in (path / "agent.msgpack").read_bytes()[:2]  # no pickle header
    assert read_config(path) == CFG


def test_keeps_the_newest_and_leaves_no_temporary_directories(tmp_path):
    agent = SACAgent.create(0, state_space(), action_space(3), CFG)
    for step in (1, 2, 3, 4):
        save_checkpoint(tmp_path, step, agent, keep=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_0000000003", "step_0000000004"]
    assert latest_checkpoint(tmp_path).name == "step_0000000004"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]


def test_restore_into_another_configuration_says_what_differs(tmp_path):
    save_checkpoint(tmp_path, 1, SACAgent.create(0, state_space(), action_space(3), CFG))
    other = SACAgent.create(0, state_space(), action_space(3), CFG.replace(num_critics=2))
    with pytest.raises(CheckpointError, match="num_critics: checkpoint has 4, this run has 2"):
        restore_agent(tmp_path, other)


def test_restore_into_another_observation_shape_names_the_tensor(tmp_path):
    save_checkpoint(tmp_path, 1, SACAgent.create(0, state_space(), action_space(3), CFG))
    other = SACAgent.create(0, state_space(9), action_space(3), CFG)
    with pytest.raises(CheckpointError, match="shape"):
        restore_agent(tmp_path, other)


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint"):
        restore_agent(tmp_path / "nothing", SACAgent.create(0, state_space(), action_space(3), CFG))
