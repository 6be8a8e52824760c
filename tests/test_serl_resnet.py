"""SERL / HIL-SERL's ResNet-10 in the RL agent (issue 17, point 4): the trunk variant, the
converter that never runs pickled code, and ``--agent.encoder-weights`` in train, the learner's
agent and the actor's copy of it.

The pickles are written here with SERL's structure (its ``resnetv1-10`` parameter tree:
``conv_init``, ``norm_init``, ``ResNetBlock_0..3`` with ``Conv_0``, ``MyGroupNorm_0``, ...).
"""

from __future__ import annotations

import json
import os
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from robot_rl.agents.encoders import SerlResNet10Trunk
from robot_rl.agents.encoders.serl_import import UnsafePickleError, safe_load
from robot_rl.agents.pretrained import (
    EncoderWeightsError,
    create_agent,
    load_trunk_weights,
    weights_sha256,
)
from robot_rl.cli import main

SERL_BLOCK = {"Conv_0", "MyGroupNorm_0", "Conv_1", "MyGroupNorm_1"}


def serl_parameters(seed: int) -> dict:
    """A parameter tree shaped like SERL's published resnet10_params.pkl: plain dicts of numpy
    arrays, no 'params' level, no flax types."""
    trunk = SerlResNet10Trunk()
    variables = trunk.init(jax.random.PRNGKey(seed), jnp.zeros((1, 128, 128, 3), jnp.uint8))
    tree = jax.tree.map(np.asarray, variables["params"])
    tree = jax.tree.map(lambda x: x + np.float32(0.01) * seed, tree)  # scales and biases differ
    return _to_numpy(tree)


def _to_numpy(tree):
    return {
        k: _to_numpy(v) if isinstance(v, dict) else np.asarray(v, np.float32)
        for k, v in dict(tree).items()
    }


def test_the_trunk_has_serl_resnetv1_10s_layout():
    params = serl_parameters(0)
    assert set(params) == {"conv_init", "norm_init", *(f"ResNetBlock_{i}" for i in range(4))}
    assert params["conv_init"]["kernel"].shape == (7, 7, 3, 64)
    assert set(params["norm_init"]) == {"scale", "bias"}
    assert set(params["ResNetBlock_0"]) == SERL_BLOCK  # 64 -> 64: no projection
    for i, width in ((1, 128), (2, 256), (3, 512)):
        assert set(params[f"ResNetBlock_{i}"]) == SERL_BLOCK | {"conv_proj", "norm_proj"}
        assert params[f"ResNetBlock_{i}"]["conv_proj"]["kernel"].shape == (1, 1, width // 2, width)
    features = SerlResNet10Trunk().apply({"params": params}, jnp.zeros((2, 128, 128, 3), jnp.uint8))
    assert features.shape == (2, 4, 4, 512)  # HIL-SERL's pre-pooling map at 128 px


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_convert_encoder_turns_a_serl_pickle_into_the_same_trunk(tmp_path, protocol, capsys):
    params = serl_parameters(1)
    src, dst = tmp_path / "resnet10_params.pkl", tmp_path / "resnet10.safetensors"
    src.write_bytes(pickle.dumps(params, protocol=protocol))
    assert main(["convert-encoder", str(src), str(dst)]) == 0
    assert "converted 4.9" in capsys.readouterr().out
    variables = load_trunk_weights(dst, "serl_resnet10")
    images = np.random.default_rng(0).integers(0, 256, (2, 64, 64, 3), np.uint8)
    want = SerlResNet10Trunk().apply({"params": params}, images)
    got = SerlResNet10Trunk().apply(variables, images)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert main(["convert-encoder", str(src), str(dst)]) == 2  # no silent overwrite


def test_a_flax_frozen_dict_pickle_is_read_as_plain_dicts(tmp_path):
    from flax.core import freeze

    blob = pickle.dumps(freeze({"params": serl_parameters(0)}))
    tree = safe_load(blob)
    assert type(tree) is dict and type(tree["params"]["conv_init"]) is dict


class Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_that_would_run_code_is_refused_without_running_it(tmp_path, capsys):
    marker = tmp_path / "pwned"
    src = tmp_path / "resnet10_params.pkl"
    params = serl_parameters(0)
    params["conv_init"]["kernel"] = Exploit(marker)  # hidden deep inside a real-looking tree
    src.write_bytes(pickle.dumps(params))
    assert main(["convert-encoder", str(src), str(tmp_path / "out.safetensors")]) == 2
    out = capsys.readouterr().err  # robot_rl.cli prints a UserError on stderr
    assert f"{os.system.__module__}.system" in out and "refused, nothing in it was run" in out
    assert len(out.strip().splitlines()) == 1
    assert not marker.exists() and not (tmp_path / "out.safetensors").exists()
    for evil in (pickle.dumps(Exploit), b"cbuiltins\neval\n(S'1+1'\ntR."):
        with pytest.raises(UnsafePickleError, match="not plain data"):
            safe_load(evil)


def test_a_file_that_is_not_this_trunk_is_refused_naming_the_tensor(tmp_path, capsys):
    params = serl_parameters(0)
    params["ResNetBlock_2"]["Conv_1"]["kernel"] = np.zeros((3, 3, 256, 128), np.float32)
    src = tmp_path / "wrong.pkl"
    src.write_bytes(pickle.dumps(params))
    assert main(["convert-encoder", str(src), str(tmp_path / "x.safetensors")]) == 2
    assert "params/ResNetBlock_2/Conv_1/kernel' has shape (3, 3, 256, 128)" in (
        capsys.readouterr().err
    )
    with pytest.raises(EncoderWeightsError, match="convert it first"):
        load_trunk_weights(src, "serl_resnet10")


@pytest.fixture(scope="module")
def two_weight_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("weights")
    paths = []
    for seed in (1, 2):
        src, dst = folder / f"p{seed}.pkl", folder / f"w{seed}.safetensors"
        src.write_bytes(pickle.dumps(serl_parameters(seed)))
        assert main(["convert-encoder", str(src), str(dst)]) == 0
        paths.append(dst)
    return paths


def _agent_config(weights):
    from robot_rl.agents.config import AgentConfig

    return AgentConfig(
        hidden_dims=(16, 16),
        num_critics=2,
        critic_subsample=2,
        encoder="serl_resnet10",
        encoder_frozen=True,
        encoder_weights=str(weights),
        pooling="spatial_learned",
        bottleneck_dim=16,
        drq_pad=0,
    )


def test_the_learner_and_the_actor_build_the_same_pretrained_trunk(two_weight_files):
    from robot_rl.agents.acting_policy import ActingPolicy, frozen_trunk_fingerprint
    from robot_rl.envs.task import make_task

    task = make_task("pick_cube", cameras=("front",), image_size=32, privileged_state=False)
    spaces = task.observation_space(), task.action_space()
    config = _agent_config(two_weight_files[0])
    learner = create_agent(0, *spaces, config)
    expected = load_trunk_weights(two_weight_files[0], "serl_resnet10")
    np.testing.assert_array_equal(
        np.asarray(learner.frozen_trunk["params"]["conv_init"]["kernel"]),
        expected["params"]["conv_init"]["kernel"],
    )
    from robot_rl.agents.checkpoint import config_to_json

    welcome = {
        "agent_config": config_to_json(config),
        "seed": 0,
        "frozen_trunk": frozen_trunk_fingerprint(learner),
    }
    ActingPolicy(welcome, *spaces)  # reads the same file: the fingerprints agree
    other = {
        **welcome,
        "agent_config": config_to_json(config.replace(encoder_weights=str(two_weight_files[1]))),
    }
    with pytest.raises(ValueError, match="frozen image trunk differs"):
        ActingPolicy(other, *spaces)
    missing = {
        **welcome,
        "agent_config": config_to_json(config.replace(encoder_weights="/nowhere/w.safetensors")),
    }
    with pytest.raises(ValueError, match=r"pretrained: --agent\.encoder-weights: no file"):
        ActingPolicy(missing, *spaces)
    with pytest.raises(ValueError, match=r"add --agent\.encoder-frozen"):
        config.replace(encoder_frozen=False).validate()


def test_train_with_encoder_weights_records_the_encoder_and_eval_rebuilds_it(
    two_weight_files, tmp_path, capsys
):
    pytest.importorskip("mujoco")
    from robot_rl.agents.checkpoint import latest_checkpoint, read_metadata

    weights = two_weight_files[0]
    args = [
        "train",
        "--task",
        "pick_cube",
        "--cameras",
        "front",
        "--image-size",
        "32",
        "--total-steps",
        "30",
        "--start-steps",
        "15",
        "--demos",
        "0",
        "--batch-size",
        "8",
        "--utd-ratio",
        "1",
        "--eval-every",
        "30",
        "--eval-episodes",
        "1",
        "--checkpoint-every",
        "30",
        "--log-every",
        "30",
        "--run-dir",
        str(tmp_path / "run"),
        "--agent.hidden-dims",
        "16",
        "16",
        "--agent.num-critics",
        "2",
        "--agent.encoder",
        "serl_resnet10",
        "--agent.encoder-frozen",
        "--agent.encoder-weights",
        str(weights),
        "--agent.pooling",
        "spatial_learned",
        "--agent.bottleneck-dim",
        "16",
    ]
    assert main(args) in (0, 1)  # 1: trained, no success (30 steps)
    checkpoint = latest_checkpoint(tmp_path / "run" / "checkpoints")
    meta = read_metadata(checkpoint)
    assert meta["encoder"] == {
        "trunk": "serl_resnet10",
        "frozen": True,
        "weights": str(weights),
        "weights_sha256": weights_sha256(weights),
    }
    assert meta["observation"]["privileged_state"] is False  # cameras given
    # eval needs no weight file: the trunk is in the checkpoint
    moved = weights.with_suffix(".moved")
    weights.rename(moved)
    try:
        capsys.readouterr()
        assert main(["eval", "--checkpoint", str(checkpoint), "--episodes", "1", "--json-out"]) == 0
    finally:
        moved.rename(weights)
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["episodes"] == 1


def test_up_hands_the_encoder_weights_to_the_learner(tmp_path):
    from robot_rl.commands.up import TWO_CRITIC_AGENT, UpConfig, planned_processes
    from robot_rl.config_file import parse_args
    from robot_rl.runtime.learner import LearnerConfig

    agent = TWO_CRITIC_AGENT.replace(
        encoder="serl_resnet10",
        encoder_frozen=True,
        encoder_weights=str(tmp_path / "w.safetensors"),
    )
    up = UpConfig("sim", cameras=("front",), agent=agent)
    learner = planned_processes(up, tmp_path, "tcp://127.0.0.1:5999")[-1]
    learner.write_config()  # as up does before it starts the learner
    parsed = parse_args(LearnerConfig, list(learner.arguments[1:]))  # as robot-rl learner
    assert parsed.agent == agent and parsed.cameras == ("front",)
