"""A data-parallel update over several devices equals the single-device update (to the order of
floating-point sums). Runs in a subprocess: the CPU device count is fixed when JAX starts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    import jax
    import numpy as np
    sys.path.insert(0, {tests!r})
    from agent_fixtures import action_space, pixel_space, random_batch, state_space
    from robot_rl.agents.config import AgentConfig
    from robot_rl.agents.data_parallel import DataParallel
    from robot_rl.agents.sac import SACAgent

    assert len(jax.devices()) == 4, jax.devices()
    for space, config in [
        (state_space(6), AgentConfig(hidden_dims=(32, 32), num_critics=4, critic_subsample=2)),
        (pixel_space(32), AgentConfig(hidden_dims=(32, 32), num_critics=2, drq_pad=2,
                                      encoder="conv")),
    ]:
        agent = SACAgent.create(0, space, action_space(3), config)
        batch = random_batch(space, 3, 3 * 32, seed=1, gripper=False)
        single, single_info = agent.update(batch, utd_ratio=3)
        parallel = DataParallel()
        spread, spread_info = parallel.place_agent(agent).update(batch, utd_ratio=3,
                                                                   parallel=parallel)
        leaf = jax.tree.leaves(spread.critic.params)[0]
        assert len(leaf.sharding.device_set) == 4, leaf.sharding
        for a, b in zip(jax.tree.leaves(single), jax.tree.leaves(spread)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-5)
        for key in single_info:
            np.testing.assert_allclose(single_info[key], spread_info[key], rtol=2e-4, atol=2e-5)
        try:
            parallel.place_agent(agent).update(random_batch(space, 3, 3 * 30), utd_ratio=3,
                                                parallel=parallel)
        except ValueError as error:
            assert "does not split over 4 devices" in str(error), error
        else:
            raise AssertionError("a batch of 30 was split over 4 devices")
    print("equal")
""")


def test_a_sharded_update_equals_the_single_device_update():
    tests = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
           "JAX_PLATFORMS": "cpu"}
    result = subprocess.run([sys.executable, "-c", SCRIPT.format(tests=tests)], env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0 and "equal" in result.stdout, result.stdout + result.stderr
