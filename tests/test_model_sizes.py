"""Model sizes from the config (model_specs.SIZES): the config's `model` mapping, its checks,
the spec and PyTorch module at a size, the dataset file at a size, and the names files and
sweep points get."""

from __future__ import annotations

import math

import pytest
import torch

from conftest import SGD, small_config
from test_dataset import VALUES_SHA256, values_sha256
from torch_burn_parity.config.parity_config import semantic_problems
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.config.sweeps import point_name
from torch_burn_parity.io.parity_io import decode_dataset
from torch_burn_parity.models import model_specs, models
from torch_burn_parity.models.model_specs import ModelError, parse_tag, spec
from torch_burn_parity.training import make_data

SIZED = {"d_model": 12, "heads": 3, "layers": 2, "d_ff": 20}


@pytest.mark.parametrize("name", list(VALUES_SHA256))
def test_a_model_named_without_sizes_is_value_for_value_the_one_it_was(name):
    """The default models' arrays, each value bit for bit as written before sizes were
    configurable (test_dataset.VALUES_SHA256; cnn1d's are also the seed's)."""
    arrays = decode_dataset(make_data.dataset_bytes(name), name)
    assert {n: values_sha256(n, v) for n, (_, v) in arrays.items()} == VALUES_SHA256[name]
    assert spec(name) is model_specs.SPECS[name] and spec(name).tag == name


def test_a_transformer_stack_has_nn_transformer_encoders_names_and_a_stage_per_sublayer():
    s = spec("transformer", SIZED)
    assert s.tag == "transformer-d_model12-heads3-layers2-d_ff20"
    assert s.param_names[:3] == (
        "embed.weight",
        "embed.bias",
        "enc.layers.0.self_attn.in_proj_weight",
    )
    assert s.state_shapes["enc.layers.1.linear1.weight"] == [20, 12]
    assert s.state_shapes["fc.weight"] == [3, 16 * 12]
    assert s.layers == (
        "embed",
        *("attn.0", "norm1.0", "ff.0", "norm2.0"),
        *("attn.1", "norm1.1", "ff.1", "norm2.1"),
        "fc",
    )
    assert s.parts_of("enc.layers.1.self_attn.in_proj_bias") == 3
    d, f = 12, 20
    per_layer = 3 * d * d + 3 * d + d * d + d + f * d + f + d * f + d + 4 * d
    assert s.param_count == 2 * d + 2 * per_layer + 3 * 16 * d + 3


@pytest.mark.parametrize(
    "name, size",
    [("transformer", SIZED), ("cnn_bn", {"channels": 6, "kernel": 3}), ("cnn1d", {"kernel": 9})],
)
def test_the_pytorch_module_at_a_size_holds_the_specs_names_and_shapes_and_reads_it_back(
    name, size
):
    s = spec(name, size)
    arrays = decode_dataset(make_data.dataset_bytes(s), s.tag)
    module = models.build(name, arrays, torch.float64, size)
    state = models.state(module)
    assert list(state) == list(s.state_names)
    assert {k: list(t.shape) for k, t in state.items()} == s.state_shapes
    assert models.model_size(name, module) == s.size
    # The dataset's f32 values, widened exactly.
    for key, tensor in state.items():
        assert tensor.flatten().tolist() == arrays[key][1]
    # The stages chain to the model's output.
    x, _ = models.inputs(arrays, torch.float64)
    out, record = models.recorded_forward(module, x[:4])
    assert out.shape == (4, 3)
    out.sum().backward()
    assert record(1)["names"] == list(s.layers)


def test_the_stack_stages_are_nn_transformer_encoders_forward():
    s = spec("transformer", SIZED)
    arrays = decode_dataset(make_data.dataset_bytes(s), s.tag)
    module = models.build("transformer", arrays, torch.float64, SIZED)
    x, _ = models.inputs(arrays, torch.float64)
    h = module.embed(x[:8].transpose(1, 2))
    with torch.no_grad():
        staged = module(x[:8])
        # nn.TransformerEncoder's own forward (training mode: its regular path), then fc.
        whole = module.fc(module.enc(h).flatten(1))
    assert torch.equal(staged, whole)


def test_no_two_encoder_layers_start_alike():
    values = spec("transformer", SIZED).formulas()
    for suffix in ("self_attn.in_proj_weight", "linear1.bias", "norm2.weight"):
        first, second = (values[f"enc.layers.{i}.{suffix}"] for i in (0, 1))
        assert not (first == second).any()


def test_a_million_parameters_initialise_without_a_python_loop_per_value():
    s = spec("transformer", {"d_model": 256, "heads": 4, "layers": 1, "d_ff": 1024})
    assert s.param_count == 802_563
    values = s.formulas()
    assert sum(v.size for v in values.values()) == s.param_count
    assert all(math.isfinite(v.max()) and abs(v).max() < 2 for v in values.values())


TRANSFORMER_KEYS = "(known: d_model, heads, layers, d_ff)"
MODELS = "(known: cnn1d, cnn_bn, transformer, lenet, gpt)"


@pytest.mark.parametrize(
    "model, problem",
    [
        ({"name": "transformer", "d_model": 12, "heads": 5},
         "model.heads: heads 5 does not divide d_model 12"),
        ({"name": "transformer", "d_model": 9},
         "model.d_model: heads 2 does not divide d_model 9"),
        ({"name": "transformer", "layerz": 2},
         f"model.layerz: unknown size key of transformer {TRANSFORMER_KEYS};"
         " did you mean 'layers'?"),
        ({"name": "cnn1d", "kernel": 17}, "model.kernel: 17 is longer than the input (16)"),
        ({"name": "cnn_bn", "channels": 0}, "model.channels: must be a positive integer, got 0"),
        ({"name": "cnn_bn", "channels": 2.5},
         "model.channels: must be a positive integer, got 2.5"),
        ({"name": "transformr"},
         f"model.name: unknown model 'transformr' {MODELS}; did you mean 'transformer'?"),
        ({"d_model": 12}, "model: a model given with sizes needs its `name`"),
        ("lenet5", f"model: unknown model 'lenet5' {MODELS}; did you mean 'lenet'?"),
        ({"name": "gpt", "vocab": 100},
         "model.vocab: set by the data (the text's vocabulary: 84)"),
    ],
)  # fmt: skip
def test_a_size_a_model_cannot_be_built_at_is_refused_naming_the_key(model, problem):
    config = small_config(e=SGD | {"model": model})
    assert [str(p) for p in semantic_problems(config)] == [f"experiments.e.{problem}"]


def test_the_resolved_spec_holds_every_size_key():
    config = small_config(e=SGD | {"model": {"name": "transformer", "layers": 3}})
    resolved = experiment_spec(config, "e")
    assert resolved.model == "transformer"
    assert resolved.model_size == {"d_model": 8, "heads": 2, "layers": 3, "d_ff": 16}
    assert experiment_spec(small_config(e=SGD), "e").model_size == {"channels": 4, "kernel": 5}


def test_a_group_glob_is_matched_against_the_sized_models_names():
    group = {"params": "enc.layers.*.linear?.weight", "weight_decay": 0.0}
    sized = {"name": "transformer", "layers": 2}
    ok = small_config(e=SGD | {"model": sized, "param_groups": [group]})
    assert semantic_problems(ok) == []
    one_layer = small_config(e=SGD | {"model": "transformer", "param_groups": [group]})
    assert "matches no parameter of transformer" in str(semantic_problems(one_layer)[0])


def test_a_model_tag_names_the_dataset_file_and_reads_back():
    s = spec("cnn_bn", {"channels": 6})
    assert s.tag == "cnn_bn-channels6-kernel5"
    assert parse_tag(s.tag) is s
    with pytest.raises(ModelError, match="'6x' is not a size key and value"):
        parse_tag("cnn_bn-6x")
    with pytest.raises(ModelError, match="unknown size key of cnn_bn"):
        parse_tag("cnn_bn-d_model6")


def test_a_sweep_point_over_models_is_named_by_the_sizes_it_gives():
    point = {"model": {"name": "transformer", "d_model": 64, "layers": 2}, "lr": 0.01}
    assert point_name("scale", point) == "scale__model_transformer_d_model64_layers2__lr_0p01"
    assert point_name("s", {"model": "cnn_bn"}) == "s__model_cnn_bn"


def test_the_shipped_scale_sweep_is_a_valid_config_over_three_sizes():
    import yaml

    from conftest import ROOT
    from torch_burn_parity.config.check_config import config_problems, load_schema
    from torch_burn_parity.config.parity_config import HYPERPARAMETERS
    from torch_burn_parity.config.sweeps import expand_all

    config = yaml.safe_load((ROOT / "sweeps/scale.yaml").read_text())
    assert config_problems(config, load_schema()) == []
    points = expand_all(config, HYPERPARAMETERS)["scale"]
    counts = [
        model_specs.spec_of_config(settings["model"]).param_count for _, settings, _ in points
    ]
    assert counts == [1_003, 10_147, 103_171]
