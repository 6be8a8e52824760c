"""PyTorch ResNet-10 weights load into ResNet10Trunk and give the same features."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import jax  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402

from robot_rl.agents.encoders import ResNet10Trunk  # noqa: E402
from robot_rl.agents.encoders.torch_import import (  # noqa: E402
    WeightImportError,
    load_resnet10_state_dict,
)
from robot_rl.agents.encoders.torch_resnet10 import (  # noqa: E402
    TorchResNet10,
    randomize_batch_norms,
)


@pytest.fixture(scope="module")
def torch_model():
    torch.manual_seed(0)
    model = TorchResNet10()
    randomize_batch_norms(model, torch.Generator().manual_seed(1))
    return model.eval()


@pytest.fixture(scope="module")
def state_dict(torch_model):
    return {name: tensor.clone() for name, tensor in torch_model.state_dict().items()}


def _max_abs_error(torch_model, variables, size: int) -> float:
    images = np.random.default_rng(size).integers(0, 256, (2, size, size, 3), dtype=np.uint8)
    with torch.no_grad():
        expected = torch_model(torch.from_numpy(images).permute(0, 3, 1, 2)).numpy()
    got = np.asarray(ResNet10Trunk().apply(variables, images))
    expected = expected.transpose(0, 2, 3, 1)  # NCHW -> NHWC
    assert got.shape == expected.shape == (2, size // 32, size // 32, 512)
    assert np.mean(expected > 0) > 0.1  # a mostly dead map would hide mismatches
    return float(np.max(np.abs(got - expected)))


def test_pt_file_matches_pytorch(torch_model, state_dict, tmp_path):
    path = tmp_path / "resnet10.pt"
    torch.save(state_dict, path)
    variables = load_resnet10_state_dict(path)
    for size in (64, 128):
        error = _max_abs_error(torch_model, variables, size)
        print(f"max abs error at {size}x{size}: {error:.2e}")
        assert error < 1e-4


def test_loaded_tree_matches_the_module(state_dict):
    variables = load_resnet10_state_dict(state_dict)
    initial = jax.eval_shape(
        ResNet10Trunk().init, jax.random.key(0), np.zeros((1, 64, 64, 3), np.uint8)
    )
    shapes = jax.tree.map(lambda leaf: leaf.shape, variables)
    assert shapes == jax.tree.map(lambda leaf: leaf.shape, dict(initial))
    assert all(leaf.dtype == np.float32 for leaf in jax.tree.leaves(variables))


def test_safetensors_file_gives_the_same_variables(state_dict, tmp_path):
    path = tmp_path / "resnet10.safetensors"
    save_file({name: tensor.numpy() for name, tensor in state_dict.items()}, str(path))
    from_safetensors = load_resnet10_state_dict(path)
    from_torch = load_resnet10_state_dict(state_dict)
    jax.tree.map(np.testing.assert_array_equal, from_safetensors, from_torch)


@pytest.mark.parametrize("prefix", ["module.", "module.encoder.", "backbone."])
def test_known_prefixes_are_found(state_dict, prefix):
    wrapped = {prefix + name: tensor for name, tensor in state_dict.items()}
    variables = load_resnet10_state_dict(wrapped)
    np.testing.assert_array_equal(
        variables["batch_stats"]["layer3_0"]["bn2"]["var"],
        state_dict["layer3.0.bn2.running_var"].numpy(),
    )


def test_explicit_prefix_selects_the_encoder_in_an_agent(state_dict):
    agent = {"agent.encoder." + name: tensor for name, tensor in state_dict.items()}
    agent["agent.critic.weight"] = torch.zeros(3, 3)
    with pytest.raises(WeightImportError, match=r"conv1.weight.*prefix="):
        load_resnet10_state_dict(agent)
    variables = load_resnet10_state_dict(agent, prefix="agent.encoder")
    assert variables["params"]["conv1"]["kernel"].shape == (7, 7, 3, 64)


def test_missing_tensor_is_named(state_dict):
    broken = dict(state_dict)
    del broken["layer3.0.bn2.running_var"]
    with pytest.raises(WeightImportError, match=r"missing tensor 'layer3.0.bn2.running_var'.*256"):
        load_resnet10_state_dict(broken)


def test_wrong_shape_is_named(state_dict):
    broken = dict(state_dict)
    broken["layer2.0.conv1.weight"] = torch.zeros(128, 64, 5, 5)
    with pytest.raises(WeightImportError) as caught:
        load_resnet10_state_dict(broken)
    message = str(caught.value)
    assert "'layer2.0.conv1.weight' has shape (128, 64, 5, 5), expected (128, 64, 3, 3)" in message


def test_extra_tensor_is_named_and_resnet18_is_recognised(state_dict, tmp_path):
    deeper = dict(state_dict)
    deeper["layer1.1.conv1.weight"] = torch.zeros(64, 64, 3, 3)
    path = tmp_path / "resnet18ish.pth"
    torch.save(deeper, path)
    with pytest.raises(WeightImportError, match=r"unexpected tensor 'layer1.1.conv1.weight'.*18"):
        load_resnet10_state_dict(path)


def test_first_problem_in_resnet_order_is_reported_first(state_dict):
    broken = dict(state_dict)
    del broken["layer4.0.conv2.weight"]
    del broken["bn1.bias"]
    broken["zzz.weight"] = torch.zeros(1)
    with pytest.raises(WeightImportError, match=r"'bn1.bias'.*and 2 more problems"):
        load_resnet10_state_dict(broken)


def test_files_that_are_not_state_dicts_are_refused(torch_model, tmp_path):
    listing = tmp_path / "list.pt"
    torch.save([torch.zeros(2)], listing)
    with pytest.raises(WeightImportError, match="does not hold a state dict"):
        load_resnet10_state_dict(listing)

    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a torch file at all")
    with pytest.raises(WeightImportError, match="could not read"):
        load_resnet10_state_dict(garbage)

    whole_model = tmp_path / "model.pt"
    torch.save(torch_model, whole_model)  # pickled module: refused by weights_only
    with pytest.raises(WeightImportError, match="state_dict"):
        load_resnet10_state_dict(whole_model)

    with pytest.raises(FileNotFoundError):
        load_resnet10_state_dict(tmp_path / "absent.pt")


def test_unrelated_state_dict_reports_the_stem(tmp_path):
    path = tmp_path / "mlp.safetensors"
    save_file({"linear.weight": np.zeros((4, 4), np.float32)}, str(path))
    with pytest.raises(WeightImportError, match=r"missing tensor 'conv1.weight'"):
        load_resnet10_state_dict(path)
