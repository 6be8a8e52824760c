"""The twin's simulated human: steps in when the policy is stuck or leaving the box, corrects
for a bounded time, keeps to its budget, hands back; and says success once per success seen."""

import numpy as np
import pytest

from robot_rl.sim.simulated_human import SimulatedHuman, SimulatedHumanConfig, SuccessPress
from robot_rl.tasks.pick_cube import PickCubeTask

TASK = PickCubeTask()
EXPERT_ACTION = np.array([0.1, 0.2, -0.3, -1.0], np.float32)


class ConstantExpert:
    def __init__(self):
        self.resets = 0

    def reset(self, rng):
        self.resets += 1

    def act(self, reading):
        return EXPERT_ACTION


def reading(tcp=(0.5, 0.0, 0.15), vel=(0.0, 0.0, 0.0), cube=(0.55, 0.05, 0.025)):
    return {
        "tcp_pos": np.asarray(tcp, float),
        "tcp_vel": np.array([*vel, 0.0, 0.0, 0.0]),
        "gripper_pos": np.zeros(1),
        "object/cube_pos": np.asarray(cube, float),
    }


def human(**config):
    defaults = {"stuck_window": 5, "takeover_steps": 4, "episode_share": 1.0, "total_share": 1.0}
    expert = ConstantExpert()
    sim = SimulatedHuman(TASK, expert, SimulatedHumanConfig(**{**defaults, **config}))
    return sim, expert


def poll_many(sim, n, make=reading):
    return [sim.poll(make()) for _ in range(n)]


def test_takes_over_when_stuck_for_a_bounded_time_then_hands_back():
    sim, expert = human()
    commands = poll_many(sim, 12)
    active = [c is not None for c in commands]
    # 5-step window: the sixth reading without progress starts a 4-step correction
    assert active == [False] * 5 + [True] * 4 + [False] * 3
    assert expert.resets == 1 and sim.takeovers == 1
    first = commands[5]
    assert first.button and np.array_equal(first.action, EXPERT_ACTION)
    # after handing back the policy gets a fresh window before the next correction
    assert [c is not None for c in poll_many(sim, 3)] == [False, False, True]


def test_progress_keeps_the_human_out():
    sim, _ = human()
    tcps = [(0.5, 0.0, 0.15 - 0.01 * i) for i in range(12)]  # closing in on the cube
    assert all(sim.poll(reading(tcp=t)) is None for t in tcps)


def test_heading_out_of_the_safety_box_triggers_at_once():
    sim, _ = human()
    leaving = reading(tcp=(0.69, 0.0, 0.15), vel=(0.2, 0.0, 0.0))  # 2 cm past x_max next period
    assert sim.poll(leaving) is not None
    sim, _ = human()
    inside = reading(tcp=(0.69, 0.0, 0.15), vel=(0.05, 0.0, 0.0))
    assert sim.poll(inside) is None


def test_respects_the_per_episode_budget():
    sim, _ = human(episode_share=0.1, takeover_steps=50)  # 10 of 100 steps
    commands = poll_many(sim, 100)
    assert sum(c is not None for c in commands) == 10 == sim.episode_intervened
    sim.reset()
    assert sum(c is not None for c in poll_many(sim, 100)) == 10


def test_respects_the_total_budget():
    sim, _ = human(total_share=0.1, takeover_steps=4)
    for _ in range(10):
        sim.reset()
        poll_many(sim, 100)
    assert sim.total_steps == 1000
    # the share is checked when a correction starts: at most one correction beyond it
    assert sim.total_intervened <= 0.1 * 1000 + 4
    assert sim.total_intervened >= 0.1 * 1000 - 4


def test_budget_decays_to_zero():
    sim, _ = human(episode_share=0.5, decay_steps=200)
    assert sim.episode_budget() == 50
    poll_many(sim, 100)
    assert sim.episode_budget() == 25
    sim.reset()
    poll_many(sim, 100)
    sim.reset()
    assert sim.episode_budget() == 0
    assert all(c is None for c in poll_many(sim, 100))


def test_success_hands_back_at_once():
    sim, _ = human()
    poll_many(sim, 6)  # correcting
    lifted = reading(tcp=(0.5, 0.0, 0.12), cube=(0.5, 0.0, 0.12))
    lifted["gripper_pos"] = np.array([0.5])
    assert TASK.success(lifted)
    assert sim.poll(lifted) is None


def test_the_operator_presses_success_once_per_success_it_sees():
    """The FR3 cell's simulated operator (sim/cells/cell_human.py) says success as a person at
    a gamepad would: one held press when it sees the cube lifted, none while it stays lifted,
    a new one only after the task stopped being done."""
    lifted = reading(tcp=(0.5, 0.0, 0.12), cube=(0.5, 0.0, 0.12))
    lifted["gripper_pos"] = np.array([0.5])
    on_table = reading()
    press = SuccessPress(press_s=0.3)
    seen = [(0.0, on_table), (0.1, lifted), (0.2, lifted), (0.5, lifted), (0.6, on_table)]
    down = []
    for now, what in seen:
        press.update(TASK.success(what), now)
        down.append(press.down(now))
    assert down == [False, True, True, False, False]  # held 0.3 s, not for as long as lifted
    assert press.presses == 1
    press.update(TASK.success(lifted), 1.0)  # lifted again after it was put down
    assert press.down(1.0) and press.presses == 2
    with pytest.raises(ValueError, match="press_s"):
        SuccessPress(press_s=0.0)


def test_bad_config_is_refused():
    with pytest.raises(ValueError, match="episode_share"):
        SimulatedHumanConfig(episode_share=1.5)
    with pytest.raises(ValueError, match="stuck_window"):
        SimulatedHumanConfig(stuck_window=0)


def test_on_the_twin_an_idle_policy_gets_corrected():
    pytest.importorskip("mujoco")
    from robot_rl.envs.task import make_task
    from robot_rl.sim import make_twin_env
    from robot_rl.sim.simulated_human import with_simulated_human

    env = with_simulated_human(make_twin_env(make_task("pick_cube"), seed=0), seed=0)
    env.reset(seed=0)
    flags = []
    while True:
        *_, terminated, truncated, info = env.step(np.zeros(4, np.float32))
        flags.append(info["intervened"])
        if info["intervened"]:
            assert np.any(info["applied_action"] != 0.0)  # the expert moves, the policy did not
        if terminated or truncated:
            break
    budget = env.source.episode_budget()
    assert 0 < sum(flags) <= budget
    assert not any(flags[: env.source.config.stuck_window])
    assert info["intervention_metrics"]["robot/intervention_rate"] == sum(flags) / len(flags)


def test_the_actor_tells_the_policy_s_own_successes_from_assisted_ones():
    """``recent_unaided_rate``: successes with no operator step in the episode."""
    import gymnasium as gym

    from robot_rl.runtime.episode_loop import EpisodeLoop

    class Scripted(gym.Env):
        """Two-step episodes; the script says which steps the operator took and which end in
        success."""

        observation_space = gym.spaces.Dict({"state": gym.spaces.Box(-1, 1, (1,), np.float32)})
        action_space = gym.spaces.Box(-1, 1, (1,), np.float32)
        script = iter([(True, False), (False, True), (False, False), (False, True)])

        def reset(self, *, seed=None, options=None):
            return {"state": np.zeros(1, np.float32)}, {}

        def step(self, action):
            intervened, success = next(self.script)
            info = {"intervened": intervened, "success": success}
            return {"state": np.zeros(1, np.float32)}, float(success), success, False, info

    loop = EpisodeLoop(Scripted(), lambda transition: None)
    loop.reset()
    for _ in range(4):
        loop.step(lambda obs: np.zeros(1, np.float32))
    # episode 1: operator stepped in, then success; episode 2: the policy's own success
    assert loop.recent_success_rate() == 1.0
    assert loop.recent_unaided_rate() == 0.5
