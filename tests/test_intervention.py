"""The intervention wrapper: who acts, what is flagged, what is stored (no MuJoCo, no ROS 2)."""

import numpy as np
import pytest
from fakes import TABLE_CUBE, FakeArm, ScriptedSource

from robot_rl.data.replay import ReplayBuffer
from robot_rl.data.transition import Transition, from_step
from robot_rl.envs.intervention import (
    INTERVENTION_RATE,
    INTERVENTION_SECONDS,
    InterventionConfig,
    InterventionWrapper,
    OperatorCommand,
    TeleopSource,
    quat_to_matrix,
    tool_to_base,
)
from robot_rl.envs.robot_env import RobotEnv
from robot_rl.runtime.learning_core import INTERVENTION_FIELDS, TakeoverPenalty, store_transition
from robot_rl.tasks.pick_cube import PickCubeTask

POLICY = np.array([0.5, 0.0, 0.0, 0.0], np.float32)
OPERATOR = np.array([0.0, -0.5, 0.25, 1.0], np.float32)


def make_env(script, config=None, clock=lambda: 0.0, backend=None, **task_options):
    task = PickCubeTask(reset_noise=0.0, **task_options)
    env = RobotEnv(task, backend or FakeArm(cube_pos=TABLE_CUBE))
    source = ScriptedSource(script, clock)
    return InterventionWrapper(env, source, config or InterventionConfig(), clock=clock), source


def run(env, steps, action=POLICY):
    infos = []
    for _ in range(steps):
        *_, info = env.step(action)
        infos.append(info)
    return infos


def test_operator_replaces_the_policy_and_the_step_is_flagged():
    env, source = make_env([None, (OPERATOR, True), None], InterventionConfig(mode="button"))
    env.reset(seed=0)
    assert source.resets == 1
    infos = run(env, 3)
    assert [i["intervened"] for i in infos] == [False, True, False]
    np.testing.assert_allclose(infos[0]["applied_action"], POLICY)
    np.testing.assert_allclose(infos[1]["applied_action"], OPERATOR)
    np.testing.assert_allclose(infos[1]["policy_action"], POLICY)
    assert isinstance(source, TeleopSource)


def test_button_mode_ignores_motion_without_the_button():
    env, _ = make_env([(OPERATOR, False), (np.zeros(4), True)], InterventionConfig(mode="button"))
    env.reset(seed=0)
    infos = run(env, 2)
    assert [i["intervened"] for i in infos] == [False, True]
    # the button alone makes the operator's (resting) action the one executed
    np.testing.assert_allclose(infos[1]["applied_action"], np.zeros(4))


def test_motion_above_the_deadband_with_hold_over():
    still = np.array([0.01, -0.02, 0.0, 0.0])
    move = np.array([0.0, 0.3, 0.0, 0.0])
    config = InterventionConfig(mode="motion", deadband=0.05, hold_over_steps=2)
    script = [(still, False), (move, False), (still, False), None, (still, False), None]
    env, _ = make_env(script, config)
    env.reset(seed=0)
    infos = run(env, 6)
    assert [i["intervened"] for i in infos] == [False, True, True, True, False, False]
    np.testing.assert_allclose(infos[1]["applied_action"], move)
    np.testing.assert_allclose(infos[2]["applied_action"], still)  # the operator's own hand
    np.testing.assert_allclose(infos[3]["applied_action"], np.zeros(4))  # no command: hold still
    np.testing.assert_allclose(infos[4]["applied_action"], POLICY)


def test_stale_commands_count_as_no_operator():
    now = [10.0]
    env, source = make_env([(OPERATOR, True)] * 2, InterventionConfig(max_age_s=0.5))
    env.gate.clock = lambda: now[0]
    source.clock = lambda: 9.0  # produced a second ago
    env.reset(seed=0)
    assert run(env, 1)[0]["intervened"] is False
    source.clock = lambda: 9.8
    assert run(env, 1)[0]["intervened"] is True


def test_quaternion_rotation_by_number():
    np.testing.assert_allclose(quat_to_matrix([1, 0, 0, 0]), np.eye(3), atol=1e-12)
    # tool pointing down (pi about x): tool y and z are base -y and -z
    np.testing.assert_allclose(quat_to_matrix([0, 1, 0, 0]), np.diag([1, -1, -1]), atol=1e-12)
    c = np.cos(np.pi / 4)
    # 90 degrees about z, given unnormalised: tool x is base y
    np.testing.assert_allclose(
        quat_to_matrix([2 * c, 0, 0, 2 * c]) @ [1, 0, 0], [0, 1, 0], 1e-7, 1e-12
    )
    out = tool_to_base(np.array([0.5, 0.2, 0.3, 1.0]), [0, 1, 0, 0])
    np.testing.assert_allclose(out, [0.5, -0.2, -0.3, 1.0], atol=1e-6)
    # (1, 1) turned by 45 degrees is sqrt(2) along y: scaled back into the box, direction kept
    half = np.pi / 8
    out = tool_to_base(np.array([1.0, 1.0, 0.0, 0.0]), [np.cos(half), 0, 0, np.sin(half)])
    np.testing.assert_allclose(out, [0.0, 1.0, 0.0, 0.0], atol=1e-6)
    with pytest.raises(ValueError, match="quaternion"):
        quat_to_matrix([0, 0, 0, 0])


def test_tool_frame_operator_moves_along_the_rotated_axes():
    operator = np.array([0.5, 0.5, 0.5, 0.0])
    env, _ = make_env([(operator, True)], InterventionConfig(mode="button", frame="tool"))
    env.reset(seed=0)  # the task resets the tool to point down: R = diag(1, -1, -1)
    before = env.reading["tcp_pos"].copy()
    info = run(env, 1)[0]
    np.testing.assert_allclose(info["applied_action"], [0.5, -0.5, -0.5, 0.0], atol=1e-6)
    np.testing.assert_allclose(env.reading["tcp_pos"] - before, [0.01, -0.01, -0.01], atol=1e-9)


def test_applied_action_is_the_operator_action_after_safety_clipping():
    # 1 cm below the box's ceiling: the operator's full-speed +z (2 cm) is cut to half
    backend = FakeArm(cube_pos=TABLE_CUBE)
    env, _ = make_env(
        [(np.array([0.0, 0.0, 1.0, 1.0]), True)], InterventionConfig(), backend=backend
    )
    env.reset(seed=0)
    backend.tcp_pos = np.array([0.5, 0.0, 0.29])
    env.unwrapped._reading = backend.read()
    info = run(env, 1, action=np.array([0.0, 0.0, -1.0, -1.0], np.float32))[0]
    assert info["intervened"]
    np.testing.assert_allclose(info["applied_action"], [0.0, 0.0, 0.5, 1.0], atol=1e-5)
    np.testing.assert_allclose(info["policy_action"], [0.0, 0.0, -1.0, -1.0])


def test_episode_metrics_on_the_last_step():
    env, _ = make_env(
        [(OPERATOR, True)] * 3, InterventionConfig(mode="button"), max_episode_steps=10
    )
    env.reset(seed=0)
    infos = run(env, 10)
    assert all("intervention_metrics" not in i for i in infos[:-1])
    metrics = infos[-1]["intervention_metrics"]
    assert metrics == {INTERVENTION_RATE: 0.3, INTERVENTION_SECONDS: 0.3}
    env.reset(seed=1)
    assert run(env, 10)[-1]["intervention_metrics"][INTERVENTION_RATE] == 0.0


def test_bad_operator_input_is_refused_clearly():
    env, _ = make_env([(np.zeros(3), True)], InterventionConfig(mode="button"))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="operator action shape"):
        run(env, 1)
    env, _ = make_env([(np.array([np.nan, 0, 0, 0]), True)], InterventionConfig(mode="button"))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="non-finite operator action"):
        run(env, 1)
    with pytest.raises(ValueError, match="deadband"):
        InterventionConfig(deadband=1.5)
    with pytest.raises(TypeError, match="TeleopSource"):
        InterventionWrapper(RobotEnv(PickCubeTask(), FakeArm(cube_pos=TABLE_CUBE)), object())


def test_intervened_transitions_land_in_both_buffers():
    env, _ = make_env(
        [None, (OPERATOR, True), (OPERATOR, True), None], InterventionConfig("button")
    )
    spaces = (env.observation_space, env.action_space)
    replay = ReplayBuffer(*spaces, 100, extra_fields=INTERVENTION_FIELDS)
    demos = ReplayBuffer(*spaces, 100, extra_fields=INTERVENTION_FIELDS)
    obs, _ = env.reset(seed=0)
    for _ in range(4):
        transition = from_step(obs, POLICY, env.step(POLICY))
        store_transition(replay, demos, transition)
        obs = transition.next_obs
    online = replay.gather(np.arange(4))
    assert online["intervened"].tolist() == [False, True, True, False]
    stored = demos.gather(np.arange(len(demos)))
    assert len(demos) == 2 and stored["intervened"].all()
    np.testing.assert_allclose(stored["actions"], np.stack([OPERATOR, OPERATOR]))
    # the demo copies are the same transitions as in the online replay, frames included
    for key in ("observations", "next_observations"):
        np.testing.assert_array_equal(stored[key]["state"], online[key]["state"][1:3])


def test_the_policy_s_step_before_each_takeover_pays_the_penalty_per_stream():
    """Two streams interleaved: the policy's step right before a takeover (and only that one)
    loses the penalty; an episode's end or an operator's step in between means no takeover."""
    env, _ = make_env([], InterventionConfig("button"))
    replay = ReplayBuffer(
        env.observation_space, env.action_space, 100, extra_fields=INTERVENTION_FIELDS
    )
    demos = ReplayBuffer(
        env.observation_space, env.action_space, 100, extra_fields=INTERVENTION_FIELDS
    )
    obs, _ = env.reset(seed=0)
    penalty = TakeoverPenalty(0.5)

    def add(stream, intervened, ended=False, reward=0.0):
        t = Transition(obs, POLICY, reward, ended, False, obs, intervened)
        penalty.observe(replay, t, store_transition(replay, demos, t), stream)

    add(0, False)  # 0: policy, then stream 0 is taken over -> penalised
    add(1, False)  # 1: policy, stream 1 goes on by itself
    add(0, True)  # 2: the takeover
    add(0, True)  # 3: the operator goes on: no second penalty
    add(1, False)  # 4: policy
    add(1, False, ended=True, reward=1.0)  # 5: its episode ends (a success)
    add(1, True)  # 6: an operator's first step of the next episode: no step of its own before
    add(0, False)  # 7: handed back
    add(0, True)  # 8: taken over again -> 7 penalised
    rewards = replay.gather(np.arange(9))["rewards"]
    np.testing.assert_allclose(rewards, [-0.5, 0, 0, 0, 0, 1, 0, -0.5, 0])
    assert penalty.takeovers == 2
    with pytest.raises(ValueError, match="intervention_penalty"):
        TakeoverPenalty(-1.0)


def test_without_interventions_only_the_online_replay_is_written():
    env, _ = make_env([(OPERATOR, True)], InterventionConfig("button"))
    replay = ReplayBuffer(env.observation_space, env.action_space, 10)
    demos = ReplayBuffer(env.observation_space, env.action_space, 10)
    obs, _ = env.reset(seed=0)
    transition = from_step(obs, POLICY, env.step(POLICY))
    assert transition.intervened  # the operator acted, but this run keeps no interventions
    store_transition(replay, demos, transition)
    assert len(replay) == 1 and len(demos) == 0


def test_operator_command_carries_a_monotonic_stamp():
    command = OperatorCommand(np.zeros(4))
    assert command.button is False and command.stamp > 0
