"""--backend gym with Dict observations (issue 29 point 3): state entries flattened, image entries
(nested dicts included) as the run's cameras at its image size, --env-kwargs for gym.make,
success from ``is_success``/``success``/``succeed``, one-line errors, and train then
``eval --video`` from the command line on a small registered env; gym_hil when installed."""

from __future__ import annotations

import json
import re
from typing import ClassVar

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.cli import main
from robot_rl.envs.gym_adapter import make_gym_env, parse_env_kwargs
from robot_rl.errors import UserError

ENV_ID = "robot_rl_test/ReachDict-v0"


class ReachDictEnv(gym.Env):
    """A point reaching a target: ``agent_pos``, ``target``, optionally ``extra`` zeros and
    ``pixels: {front, wrist}``; success when within ``radius``, under ``success_key``."""

    metadata: ClassVar[dict] = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, image_obs=False, extra=0, radius=0.15, success_key="is_success",
                 render_mode=None):  # fmt: skip
        self.image_obs, self.extra, self.radius = image_obs, extra, radius
        self.success_key, self.render_mode = success_key, render_mode
        box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        spaces = {"agent_pos": box, "target": box}
        if extra:
            spaces["extra"] = gym.spaces.Box(-1.0, 1.0, (extra,), np.float32)
        if image_obs:
            spaces["pixels"] = gym.spaces.Dict({
                "front": gym.spaces.Box(0, 255, (48, 48, 3), np.uint8),
                "wrist": gym.spaces.Box(0, 255, (3, 16, 16), np.uint8),  # CHW
            })  # fmt: skip
        self.observation_space = gym.spaces.Dict(spaces)
        self.action_space = gym.spaces.Box(-0.25, 0.25, (2,), np.float32)
        self.last_action = None

    def _obs(self):
        obs = {"agent_pos": self.pos.astype(np.float32), "target": self.target.astype(np.float32)}
        if self.extra:
            obs["extra"] = np.zeros(self.extra, np.float32)
        if self.image_obs:
            obs["pixels"] = {"front": np.full((48, 48, 3), 100, np.uint8),
                             "wrist": np.full((3, 16, 16), 200, np.uint8)}  # fmt: skip
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1, 1, 2)
        self.target = self.np_random.uniform(-0.5, 0.5, 2)
        return self._obs(), {}

    def step(self, action):
        self.last_action = np.asarray(action)
        self.pos = np.clip(self.pos + action, -1, 1)
        distance = float(np.linalg.norm(self.pos - self.target))
        success = distance < self.radius
        return self._obs(), -distance, success, False, {self.success_key: success}

    def render(self):
        return [np.full((32, 32, 3), 50, np.uint8), np.full((16, 24, 3), 150, np.uint8)]


gym.register(ENV_ID, entry_point=ReachDictEnv, max_episode_steps=20)


def test_env_kwargs_are_python_literals_and_bare_words_are_strings():
    parsed = parse_env_kwargs(
        ["image_obs=True", "n=3", "x=0.5", "flag=false", "kind=dense", "name='a b'", "t=(1, 2)"]
    )
    assert parsed == {"image_obs": True, "n": 3, "x": 0.5, "flag": False, "kind": "dense",
                      "name": "a b", "t": (1, 2)}  # fmt: skip
    for bad, says in [("image_obs", "key=value"), ("=3", "key=value"), ("a b=1", "key=value")]:
        with pytest.raises(UserError, match=says):
            parse_env_kwargs([bad])
    with pytest.raises(UserError, match="given twice"):
        parse_env_kwargs(["n=1", "n=2"])


def test_dict_state_entries_are_flattened_in_sorted_order_or_as_chosen():
    env = make_gym_env(ENV_ID, seed=0, env_kwargs={"extra": 3})
    assert set(env.observation_space.spaces) == {"state"}
    assert env.state_entries == ["agent_pos", "extra", "target"]
    obs, _ = env.reset(seed=1)
    inner = env.unwrapped
    expected = np.concatenate([inner.pos, np.zeros(3), inner.target]).astype(np.float32)
    np.testing.assert_allclose(obs["state"], expected, rtol=1e-6)
    assert obs["state"].dtype == np.float32 and env.observation_space["state"].shape == (7,)

    chosen = make_gym_env(ENV_ID, env_kwargs={"extra": 3}, state_keys=("target", "agent_pos"))
    obs, _ = chosen.reset(seed=1)
    np.testing.assert_allclose(obs["state"], np.concatenate([inner.target, inner.pos]), 1e-6)


def test_nested_images_become_the_named_cameras_at_the_image_size():
    env = make_gym_env(
        ENV_ID, env_kwargs={"image_obs": True}, cameras=("front", "pixels/wrist"), image_size=24
    )
    spaces = env.observation_space.spaces
    assert set(spaces) == {"front", "pixels/wrist", "state"}
    assert spaces["front"].shape == spaces["pixels/wrist"].shape == (24, 24, 3)
    assert env.state_entries == ["agent_pos", "target"]  # images are not state
    obs, _ = env.reset(seed=0)
    assert obs["front"].dtype == np.uint8 and obs["front"].shape == (24, 24, 3)
    assert np.all(obs["front"] == 100) and np.all(obs["pixels/wrist"] == 200)  # CHW -> HWC
    assert env.observation_space.contains(obs)


def test_actions_in_unit_range_reach_the_env_bounds_and_success_is_read():
    for key in ("is_success", "success", "succeed"):
        env = make_gym_env(ENV_ID, env_kwargs={"success_key": key, "radius": 10.0})
        env.reset(seed=0)
        assert not env.success_signal
        _, _, terminated, _, info = env.step(np.array([1.0, -1.0], np.float32))
        np.testing.assert_allclose(env.unwrapped.last_action, [0.25, -0.25])
        assert info["success"] is True and terminated and env.success_signal
    env = make_gym_env(ENV_ID, env_kwargs={"success_key": "other"})
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.zeros(2, np.float32))
    assert "success" not in info and not env.success_signal


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"env_kwargs": {"image_obs": True}}, "name the ones to learn from with --cameras"),
        ({"env_kwargs": {"image_obs": True}, "cameras": ("top",)}, "--cameras 'top' names none"),
        ({"env_kwargs": {"image_obs": True}, "cameras": ("target",)}, "not an image"),
        ({"state_keys": ("velocity",)}, "--state-keys 'velocity' names none"),
        ({"env_kwargs": {"no_such_arg": 1}}, "no_such_arg"),
    ],
)
def test_bad_names_and_arguments_are_one_line_errors(kwargs, says):
    with pytest.raises(UserError, match=says) as err:
        make_gym_env(ENV_ID, **kwargs)
    assert "\n" not in str(err.value)


def test_unsupported_spaces_and_unknown_modules_are_one_line_errors():
    class Discrete(ReachDictEnv):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.observation_space = gym.spaces.Dict({"mode": gym.spaces.Discrete(3)})

    gym.register("robot_rl_test/Discrete-v0", entry_point=Discrete)
    with pytest.raises(UserError, match="'mode' is a Discrete space"):
        make_gym_env("robot_rl_test/Discrete-v0")
    with pytest.raises(UserError, match="'no_such_env_module' does not import"):
        make_gym_env("no_such_env_module/Env-v0")


def test_train_then_eval_with_video_from_the_command_line(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = main([
        "train", "--backend", "gym", "--env-id", ENV_ID, "--env-kwargs", "extra=2",
        "radius=0.3", "--total-steps", "1200", "--start-steps", "300", "--eval-every", "600",
        "--eval-episodes", "5", "--log-every", "600", "--agent.num-critics", "2",
        "--agent.hidden-dims", "32", "32", "--batch-size", "64", "--utd-ratio", "1",
        "--run-dir", str(run_dir),
    ])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.out[-3000:] + out.err[-3000:]
    assert re.search(r"eval @ 1200: return .*, success \d+%", out.out), out.out[-3000:]
    evals = [json.loads(line) for line in (run_dir / "eval.jsonl").read_text().splitlines()]
    assert all("success_signal" not in e for e in evals)  # the env said success: plotted as such
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["final_eval"]["step"] == 1200 and "success_rate" in summary["final_eval"]
    config = json.loads((run_dir / "config.json").read_text())
    assert config["env_kwargs"] == ["extra=2", "radius=0.3"] and config["task"] == ENV_ID

    video = tmp_path / "episodes.mp4"
    # the checkpoint's state has the 2 extra entries: eval rebuilds the env from config.json
    code = main(["eval", "--checkpoint", str(run_dir / "checkpoints"), "--episodes", "3",
                 "--video", str(video), "--video-size", "32", "--json-out"])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.out[-3000:] + out.err[-3000:]
    result = json.loads(out.out.strip().splitlines()[-1])
    assert result["success_source"] == "env-info" and result["episodes"] == 3
    assert video.stat().st_size > 1000


def test_malformed_env_kwargs_stop_train_in_one_line(tmp_path, capsys):
    code = main(["train", "--backend", "gym", "--env-id", ENV_ID, "--env-kwargs", "radius",
                 "--run-dir", str(tmp_path / "run")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "--env-kwargs" in err, err
    code = main(["train", "--env-kwargs", "a=1", "--run-dir", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "for --backend gym" in err, err


def _gym_hil():
    gym_hil = pytest.importorskip("gym_hil")
    import mujoco

    if not hasattr(mujoco.MjData, "qM"):  # gym-hil 0.1.x calls mj_fullM(m, M, d.qM)
        pytest.skip(f"gym_hil needs MuJoCo < 3.9, this is {mujoco.__version__}")
    return gym_hil


def test_gym_hil_pick_cube_state_and_images():
    _gym_hil()
    env = make_gym_env("gym_hil/PandaPickCubeBase-v0", seed=0)
    assert env.state_entries == ["agent_pos", "environment_state"]
    assert env.observation_space["state"].shape == (21,)
    env.reset(seed=0)
    *_, info = env.step(np.zeros(7, np.float32))
    assert info["success"] is False and env.success_signal
    env.close()
    env = make_gym_env(
        "gym_hil:gym_hil/PandaPickCubeBase-v0", env_kwargs={"image_obs": True},
        cameras=("front", "wrist"), image_size=32,
    )  # fmt: skip
    obs, _ = env.reset(seed=0)
    assert obs["front"].shape == obs["wrist"].shape == (32, 32, 3)
    assert obs["state"].shape == (18,) and obs["front"].std() > 0
    env.close()


REACH_EXPERT = """
import numpy as np


class Reach:
    '''Straight at the target, in the env's units (its bounds are +-0.25).'''

    resets = 0

    def __init__(self, env):
        self.env = env

    def reset(self):
        Reach.resets += 1

    def __call__(self, observation):
        return np.clip(observation["target"] - observation["agent_pos"], -0.25, 0.25)


def wrong_shape(env):
    return lambda observation: np.zeros(3)
"""


def test_an_expert_answers_in_the_envs_units_and_the_agent_gets_them_in_unit_range(tmp_path):
    from robot_rl.envs.gym_expert import make_gym_expert

    path = tmp_path / "reach_expert.py"
    path.write_text(REACH_EXPERT)
    env = make_gym_env(ENV_ID, env_kwargs={"radius": 0.05})
    expert = make_gym_expert(f"{path}:Reach", env)
    assert expert.policy.env is env.env  # the env as gym.make made it
    env.reset(seed=3)
    expert.reset(np.random.default_rng(0))
    raw = env.reading
    wanted = np.clip(raw["target"] - raw["agent_pos"], -0.25, 0.25)
    action = expert.act(raw)
    np.testing.assert_allclose(action, wanted / 0.25, atol=1e-6)
    env.step(action)
    np.testing.assert_allclose(env.unwrapped.last_action, wanted, atol=1e-6)  # back to its units
    with pytest.raises(UserError, match=r"shape \(3,\); the env takes \(2,\)"):
        make_gym_expert(f"{path}:wrong_shape", env).act(raw)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("no_colon", "expected module:name"),
        ("no_such_expert_module:Reach", "'no_such_expert_module' does not import"),
        ("{dir}/missing.py:Reach", "no file"),
        ("{dir}/reach_expert.py:Nothing", "no callable 'Nothing'"),
    ],
)
def test_a_wrongly_named_expert_is_a_one_line_error(tmp_path, spec, says):
    from robot_rl.envs.gym_expert import load_factory

    (tmp_path / "reach_expert.py").write_text(REACH_EXPERT)
    with pytest.raises(UserError, match=says) as err:
        load_factory(spec.format(dir=tmp_path))
    assert "\n" not in str(err.value)


def test_train_takes_an_experts_demos_on_a_gym_env(tmp_path, capsys):
    path = tmp_path / "reach_expert.py"
    path.write_text(REACH_EXPERT)
    common = ["train", "--backend", "gym", "--env-id", ENV_ID, "--env-kwargs", "radius=0.05"]
    code = main([
        *common, "--expert", f"{path}:Reach", "--demos", "4", "--total-steps", "300",
        "--start-steps", "100", "--eval-every", "300", "--eval-episodes", "2",
        "--agent.num-critics", "2", "--agent.hidden-dims", "32", "32", "--batch-size", "32",
        "--utd-ratio", "1", "--run-dir", str(tmp_path / "run"),
    ])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.out[-3000:] + out.err[-3000:]
    assert re.search(r"demos: 4 successful expert episodes \(\d+ attempts", out.out), out.out

    code = main([*common, "--demos", "4", "--run-dir", str(tmp_path / "other")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "needs --expert" in err and err.count("\n") == 0, err
    code = main(["train", "--expert", f"{path}:Reach", "--run-dir", str(tmp_path / "twin")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--expert is for --backend gym" in err, err


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("gym_hil/PandaPickCubeBase-v0", {}),
        ("gym_hil/PandaPickCube-v0", {"reset_delay_seconds": 0}),
        (
            "robot_rl.sim.gym_hil_env:robot_rl/PandaPickCubeScaled-v0",
            {"random_block_position": True},
        ),
    ],
)
def test_the_gym_hil_picker_picks_the_cube_in_either_envs_units(env_id, kwargs):
    _gym_hil()
    from robot_rl.sim.experts.gym_hil_pick import PickCubeExpert

    env = make_gym_env(env_id, seed=0, env_kwargs=kwargs)
    expert = PickCubeExpert(env.env)
    successes = 0
    for episode in range(3):
        env.reset(seed=episode)
        expert.reset()
        grips = []
        for _ in range(100):
            *_, terminated, truncated, info = env.step(env.to_unit(expert(env.reading)))
            grips.append(env.reading["agent_pos"][14])
            if terminated or truncated:
                break
        if "Scaled" in env_id:  # the gripper's command 0-255 as [0, 1]
            assert 0.5 < max(grips) <= 1.0
        successes += bool(info.get("success"))
    env.close()
    assert successes == 3
