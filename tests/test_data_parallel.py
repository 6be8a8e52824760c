"""A data-parallel update over several devices equals the single-device update (to the order of
floating-point sums). Runs in a subprocess: the CPU device count is fixed when JAX starts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
from process_helpers import Processes

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
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
        "JAX_PLATFORMS": "cpu",
    }
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(tests=tests)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0 and "equal" in result.stdout, result.stdout + result.stderr


HOST_SCRIPT = textwrap.dedent("""
    import os, sys
    import jax
    import numpy as np
    sys.path.insert(0, {tests!r})
    from agent_fixtures import action_space, random_batch, state_space
    from robot_rl.agents.config import AgentConfig
    from robot_rl.agents.data_parallel import DataParallel, initialize_multi_host
    from robot_rl.agents.sac import SACAgent

    process_id = int(sys.argv[1])
    if process_id >= 0:
        initialize_multi_host({coordinator!r}, num_processes=2, process_id=process_id)
    config = AgentConfig(hidden_dims=(32, 32), num_critics=4, critic_subsample=2)
    agent = SACAgent.create(0, state_space(6), action_space(3), config)
    batch = random_batch(state_space(6), 3, 2 * 64, seed=1)
    if process_id < 0:  # the reference: one device, the whole batch
        agent, info = agent.update(batch, utd_ratio=2)
    else:  # each host holds its half of every minibatch: rows [utd, 64, ...] split in two
        def half(x):
            x = x.reshape(2, 64, *x.shape[1:])[:, 32 * process_id:32 * (process_id + 1)]
            return x.reshape(64, *x.shape[2:])
        local = jax.tree.map(half, {{k: v for k, v in batch.items() if k != "truncated"}})
        parallel = DataParallel()
        assert parallel.size == 4 and jax.process_count() == 2
        agent, info = parallel.place_agent(agent).update(local, utd_ratio=2, parallel=parallel)
    leaves = [np.asarray(x.addressable_data(0) if hasattr(x, "addressable_data") else x)
              for x in jax.tree.leaves(agent)]
    np.savez(sys.argv[2], *leaves)
    print("saved", flush=True)
""")


def test_two_processes_on_loopback_update_as_one_device(tmp_path):
    """Multi-host through jax.distributed: two learner processes with two CPU devices each."""
    tests = os.path.dirname(os.path.abspath(__file__))
    port = 20000 + os.getpid() % 20000
    script = HOST_SCRIPT.format(tests=tests, coordinator=f"127.0.0.1:{port}")
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
        "JAX_PLATFORMS": "cpu",
    }
    hosts = Processes(tmp_path)
    for i in (0, 1):
        command = [sys.executable, "-c", script, str(i), str(tmp_path / f"{i}.npz")]
        hosts.command(f"host{i}", command, env=env)
    try:
        reference = subprocess.run(
            [sys.executable, "-c", script, "-1", str(tmp_path / "ref.npz")],
            env={**env, "XLA_FLAGS": ""},
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert reference.returncode == 0, reference.stdout + reference.stderr
        for host in hosts.started.values():
            assert host.wait_exit(900) == 0, host.output()
    finally:
        hosts.close()
    expected = np.load(tmp_path / "ref.npz")
    for i in (0, 1):
        got = np.load(tmp_path / f"{i}.npz")
        for key in expected.files:
            np.testing.assert_allclose(got[key], expected[key], rtol=2e-4, atol=2e-5)
