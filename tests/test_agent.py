"""Behaviour of the SAC agent on state observations: updates, ratios, flags, actions."""

import jax
import numpy as np
import pytest
from agent_fixtures import action_space, random_batch, state_space

from robot_rl.agents.config import AgentConfig, rlpd_config
from robot_rl.agents.sac import SACAgent

SMALL = AgentConfig(hidden_dims=(32, 32), num_critics=4, critic_subsample=2)


def leaves_equal(a, b) -> bool:
    return all(
        np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


def test_update_runs_utd_critic_steps_in_one_call_and_changes_parameters():
    agent = SACAgent.create(0, state_space(), action_space(), SMALL)
    new, info = agent.update(random_batch(state_space(), 2, 5 * 8), utd_ratio=5)
    assert int(new.critic_steps) == 5
    assert int(new.critic.step) == 5
    assert not leaves_equal(new.critic.params, agent.critic.params)
    assert not leaves_equal(new.actor.params, agent.actor.params)
    assert all(np.isfinite(float(v)) for v in info.values())
    assert {"losses/critic", "losses/actor", "charts/temperature", "values/q"} <= set(info)


def test_actor_updates_once_per_k_critic_updates():
    cfg = SMALL.replace(critic_actor_ratio=4)
    agent = SACAgent.create(0, state_space(), action_space(), cfg)
    agent, _ = agent.update(random_batch(state_space(), 2, 8 * 8), utd_ratio=8)
    assert int(agent.critic.step) == 8 and int(agent.actor.step) == 2
    # The ratio carries across calls: 2 + 1 + 1 critic steps -> one more actor step.
    for seed in range(2):
        agent, _ = agent.update(random_batch(state_space(), 2, 2 * 8, seed), utd_ratio=2)
    assert int(agent.critic.step) == 12 and int(agent.actor.step) == 3
    assert int(agent.temperature.step) == 3


def test_batch_that_does_not_split_into_minibatches_is_refused():
    agent = SACAgent.create(0, state_space(), action_space(), SMALL)
    with pytest.raises(ValueError, match="utd_ratio"):
        agent.update(random_batch(state_space(), 2, 10), utd_ratio=3)


def test_truncation_bootstraps_and_termination_does_not():
    agent = SACAgent.create(0, state_space(), action_space(), SMALL)
    batch = random_batch(state_space(), 2, 16)
    batch["terminated"][:] = 0.0
    batch["rewards"][:] = 0.0
    truncated = dict(batch, truncated=np.ones(16, np.float32))
    not_truncated = dict(batch, truncated=np.zeros(16, np.float32))
    terminated = dict(batch, terminated=np.ones(16, np.float32))
    a, info_a = agent.update(truncated)
    b, info_b = agent.update(not_truncated)
    _c, info_c = agent.update(terminated)
    # Truncation is invisible to the critic target: same update either way.
    assert leaves_equal(a.critic.params, b.critic.params)
    assert float(info_a["values/target_q"]) == float(info_b["values/target_q"])
    # Termination with zero reward makes the target exactly zero.
    assert float(info_c["values/target_q"]) == 0.0
    assert float(info_a["values/target_q"]) != 0.0


def test_same_seed_same_updates():
    batch = random_batch(state_space(), 2, 32)
    a = SACAgent.create(3, state_space(), action_space(), SMALL).update(batch, 2)[0]
    b = SACAgent.create(3, state_space(), action_space(), SMALL).update(batch, 2)[0]
    assert leaves_equal(a, b)


def test_eval_actions_are_deterministic_and_sampled_actions_vary():
    agent = SACAgent.create(0, state_space(), action_space(), SMALL)
    obs = {"state": np.ones(6, np.float32)}
    np.testing.assert_array_equal(agent.eval_actions(obs), agent.eval_actions(obs))
    first, agent = agent.sample_actions(obs)
    second, agent = agent.sample_actions(obs)
    assert first.shape == (2,) and not np.array_equal(first, second)
    assert np.all(np.abs(first) <= 1.0)
    batched = agent.eval_actions({"state": np.ones((5, 6), np.float32)})
    assert batched.shape == (5, 2)


def test_gripper_critic_gives_discrete_last_action_and_learns_its_target():
    cfg = SMALL.replace(gripper=True, gripper_penalty=0.5)
    space, actions = state_space(), action_space(3)
    agent = SACAgent.create(0, space, actions, cfg)
    sampled, agent = agent.sample_actions({"state": np.zeros((64, 6), np.float32)})
    assert sampled.shape == (64, 3)
    assert set(np.unique(sampled[:, -1])) <= {-1.0, 0.0, 1.0}
    assert np.all(np.abs(sampled[:, :2]) <= 1.0)
    assert agent.eval_actions({"state": np.zeros(6, np.float32)})[-1] in (-1.0, 0.0, 1.0)
    # The arm actor sees only the continuous dimensions.
    assert agent.nets.arm_dim == 2
    batch = random_batch(space, 3, 64, gripper=True)
    new, info = agent.update(batch, utd_ratio=2)
    assert "losses/gripper" in info and np.isfinite(float(info["losses/gripper"]))
    assert not leaves_equal(new.gripper.params, agent.gripper.params)


def test_gripper_learns_to_prefer_the_rewarded_command():
    # Bandit: closing the gripper pays 1, anything else 0; episodes end at once.
    cfg = SMALL.replace(gripper=True, gripper_lr=3e-3)
    agent = SACAgent.create(0, state_space(), action_space(2), cfg)
    rng = np.random.default_rng(0)
    for _ in range(60):
        batch = random_batch(
            state_space(), 2, 4 * 32, seed=int(rng.integers(1 << 30)), gripper=True
        )
        batch["rewards"] = (batch["actions"][:, -1] == 1.0).astype(np.float32)
        batch["terminated"][:] = 1.0
        agent, _ = agent.update(batch, utd_ratio=4)
    greedy = agent.eval_actions(
        {"state": np.random.default_rng(1).normal(size=(20, 6)).astype(np.float32)}
    )
    assert np.all(greedy[:, -1] == 1.0)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(num_critics=0), "num_critics"),
        (dict(critic_subsample=5, num_critics=2), "critic_subsample"),
        (dict(critic_actor_ratio=0), "critic_actor_ratio"),
        (dict(pooling="max"), "pooling"),
    ],
)
def test_bad_config_is_refused_with_the_field_named(change, message):
    with pytest.raises(ValueError, match=message):
        SACAgent.create(0, state_space(), action_space(), SMALL.replace(**change))


def test_action_space_outside_unit_box_is_refused():
    import gymnasium as gym

    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        SACAgent.create(0, state_space(), gym.spaces.Box(-2, 2, (2,), np.float32), SMALL)


def test_rlpd_preset_is_ten_critics_min_over_two():
    cfg = rlpd_config()
    assert (cfg.num_critics, cfg.critic_subsample, cfg.critic_layer_norm) == (10, 2, True)
    agent = SACAgent.create(0, state_space(), action_space(), cfg.replace(hidden_dims=(16,)))
    qs = jax.tree.leaves(agent.critic.params["ensemble"])
    assert all(leaf.shape[0] == 10 for leaf in qs)


def test_the_actors_policy_acts_like_the_learner_and_keeps_no_optimiser_state():
    from robot_rl.agents.acting_policy import ActingPolicy, weights_bytes
    from robot_rl.agents.checkpoint import config_to_json

    config = AgentConfig(hidden_dims=(32, 32), num_critics=2, critic_subsample=2)
    learner = SACAgent.create(0, state_space(6), action_space(3), config)
    learner, _ = learner.update(random_batch(state_space(6), 3, 2 * 16), utd_ratio=2)
    welcome = {"agent_config": config_to_json(config), "seed": 0, "frozen_trunk": None}
    policy = ActingPolicy(welcome, state_space(6), action_space(3))
    policy.load(1, weights_bytes(learner))
    obs = {"state": np.linspace(-1, 1, 6).astype(np.float32)}
    expected = learner.eval_actions({"state": obs["state"][None]})[0]
    np.testing.assert_allclose(policy(obs, deterministic=True), expected, rtol=1e-5, atol=1e-6)
    # its template was built without Adam's moments: nothing of the size of the parameters
    template = SACAgent.create(0, state_space(6), action_space(3), config, optimisers=False)
    assert not jax.tree.leaves(template.critic.opt_state)
    assert not jax.tree.leaves(template.actor.opt_state)
