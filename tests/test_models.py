"""The model registry (model_specs.py, models.py, model_cnn1d.py, model_cnn_bn.py,
model_transformer.py) and what the PyTorch trainer records with it: buffers, the layer
record, the eval-mode final."""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

import conftest
from conftest import ADAM, SGD, small_config
from torch_burn_parity.analysis import probe
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.io.parity_io import (
    decode_dataset,
    encode_dataset,
    write_atomic,
    write_run,
)
from torch_burn_parity.models import (
    model_cnn1d,
    model_cnn_bn,
    model_specs,
    model_transformer,
    models,
)
from torch_burn_parity.models.model_specs import ModelError
from torch_burn_parity.training import make_data, train_torch

CNN_BN_SHAPES = {
    "conv.weight": [4, 1, 5], "bn.weight": [4], "bn.bias": [4],
    "ln.weight": [12], "ln.bias": [12], "fc.weight": [3, 48], "fc.bias": [3],
    "bn.running_mean": [4], "bn.running_var": [4],
}  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    torch.set_num_threads(1)


def arrays_of(model: str) -> dict:
    return decode_dataset(make_data.dataset_bytes(model), model)


def spec_of(model: str, exp: dict, steps: int = 4, probe_steps=(1,)) -> dict:
    spec = experiment_spec(small_config(steps, e=exp), "e")
    sizes = model_specs.SIZES[model]
    return replace(spec, model=model, model_size=sizes, probe_steps=list(probe_steps))


# --- the registry ---------------------------------------------------------------------------


def test_the_registry_holds_every_model_under_its_name():
    assert list(models.MODELS) == list(model_specs.SPECS)  # the same models, in one order
    assert all(name == module.SPEC.name for name, module in models.MODELS.items())
    assert models.MODELS["cnn1d"] is model_cnn1d and models.MODELS["cnn_bn"] is model_cnn_bn
    assert models.MODELS["transformer"] is model_transformer
    known = ", ".join(model_specs.SPECS)
    with pytest.raises(ModelError, match=rf"unknown model 'resnet' \(known: {known}\)"):
        models.build("resnet", arrays_of("cnn1d"), torch.float64)
    with pytest.raises(ModelError, match="unknown model 'resnet'"):
        model_specs.spec("resnet")


@pytest.mark.parametrize("name", list(model_specs.SPECS))
def test_each_module_declares_what_its_pytorch_module_holds(name):
    module = models.MODELS[name]
    model = module.new()
    assert name == module.SPEC.name
    assert tuple(n for n, _ in model.named_parameters()) == module.SPEC.param_names
    assert tuple(models.state(model))[len(module.SPEC.param_names) :] == module.SPEC.buffer_names
    assert tuple(n for n, _ in model.stages()) == module.SPEC.layers
    shapes = {n: list(t.shape) for n, t in models.state(model).items()}
    assert shapes == {n: s for n, (s, _) in module.SPEC.initial_arrays().items()}


def test_the_models_names_and_layers():
    assert model_cnn1d.SPEC.param_names == ("conv.weight", "conv.bias", "fc.weight", "fc.bias")
    assert model_cnn1d.SPEC.buffer_names == () and model_cnn1d.SPEC.layers == ("conv", "relu", "fc")
    assert model_specs.CNN_BN.shapes() == CNN_BN_SHAPES
    assert list(model_specs.CNN_BN.shapes()) == list(CNN_BN_SHAPES)  # the model's order
    assert model_cnn_bn.SPEC.layers == ("conv", "bn", "gelu", "ln", "fc")


def test_cnn_bn_initial_values_by_formula():
    init = model_cnn_bn.SPEC.initial_arrays()
    seed = model_cnn1d.SPEC.initial_arrays()
    for name in ("conv.weight", "fc.weight", "fc.bias"):
        assert init[name][0] == seed[name][0]  # as cnn1d
        assert init[name][1].tolist() == seed[name][1].tolist()
    assert "conv.bias" not in init  # no bias before the BatchNorm
    assert init["bn.weight"][1].tolist() == [1 + 0.1 * math.sin(i + 1) for i in range(4)]
    assert init["bn.bias"][1].tolist() == [0.05 * math.cos(i + 1) for i in range(4)]
    assert init["ln.weight"][1].tolist() == [1 + 0.05 * math.cos(i + 1) for i in range(12)]
    assert init["ln.bias"][1].tolist() == [0.02 * math.sin(i + 1) for i in range(12)]
    assert init["bn.running_mean"][1].tolist() == [0.0] * 4
    assert init["bn.running_var"][1].tolist() == [1.0] * 4


def test_layer_hyperparameters_are_passed_and_read_back():
    model = models.build("cnn_bn", arrays_of("cnn_bn"), torch.float64)
    assert (model.bn.momentum, model.bn.eps, model.ln.eps) == (0.1, 1e-5, 1e-5)
    assert model.gelu.approximate == "none" and model.ln.elementwise_affine
    assert models.layer_hyperparameters("cnn_bn", model) == {
        "bn.momentum": 0.1, "bn.eps": 1e-05, "ln.eps": 1e-05, "gelu.approximate": "none",
        "gelu.backward": "none", "bn.running_var_estimator": "unbiased",
    }  # fmt: skip
    model.bn.momentum = 0.25  # read back from the module, not from the spec
    assert models.layer_hyperparameters("cnn_bn", model)["bn.momentum"] == 0.25
    cnn1d = models.build("cnn1d", arrays_of("cnn1d"), torch.float64)
    assert models.layer_hyperparameters("cnn1d", cnn1d) == {}


# --- building from a dataset ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_build_loads_every_parameter_and_buffer_exactly(dtype):
    arrays = arrays_of("cnn_bn")
    model = models.build("cnn_bn", arrays, dtype)
    for name, tensor in models.state(model).items():
        assert tensor.dtype == dtype
        assert tensor.flatten().tolist() == arrays[name][1]  # f32 values, widened exactly
    assert model.bn.running_var.tolist() == [1.0] * 4


def refusal(model: str, arrays: dict) -> str:
    with pytest.raises(ModelError) as info:
        models.build(model, arrays, torch.float64)
    return str(info.value)


def test_a_missing_array_is_refused_by_name():
    arrays = arrays_of("cnn_bn")
    del arrays["bn.weight"]
    assert refusal("cnn_bn", arrays) == (
        "model cnn_bn: the dataset has no array 'bn.weight' (the PyTorch module needs it,"
        " shape [4])"
    )
    # A cnn1d dataset lacks every norm array: the first is named.
    assert "no array 'bn.weight'" in refusal("cnn_bn", arrays_of("cnn1d"))


def test_a_misshaped_array_is_refused_with_both_shapes():
    arrays = arrays_of("cnn_bn")
    arrays["ln.weight"] = ([16], [1.0] * 16)
    assert refusal("cnn_bn", arrays) == (
        "model cnn_bn: array 'ln.weight' has shape [16] in the dataset, the PyTorch module's"
        " is [12]"
    )
    arrays = arrays_of("cnn1d")
    arrays["fc.weight"] = ([48, 3], arrays["fc.weight"][1])
    assert "array 'fc.weight' has shape [48, 3] in the dataset" in refusal("cnn1d", arrays)


def test_an_extra_array_is_refused():
    arrays = arrays_of("cnn_bn")
    arrays["norm.weight"] = ([4], [1.0] * 4)
    assert refusal("cnn_bn", arrays) == (
        "model cnn_bn: the dataset holds 'norm.weight', which the PyTorch module does not have"
    )
    assert "no array 'conv.bias'" in refusal("cnn1d", arrays_of("cnn_bn"))
    # num_batches_tracked is not state: a dataset that holds it is refused too.
    arrays = arrays_of("cnn_bn")
    arrays["bn.num_batches_tracked"] = ([], [0.0])
    assert "holds 'bn.num_batches_tracked'" in refusal("cnn_bn", arrays)


def test_train_torch_refuses_a_dataset_of_another_model(tmp_path, write_config):
    data = tmp_path / "cnn1d.safetensors"
    write_atomic(data, make_data.dataset_bytes("cnn1d"))
    config = write_config(small_config(2, e=dict(SGD, model="cnn_bn")))
    out = tmp_path / "run.json"
    argv = ["--spec", str(conftest.spec_of(config, "e")), "--dtype", "f32",
            "--data", str(data), "--out", str(out)]  # fmt: skip
    with pytest.raises(SystemExit) as info:
        train_torch.main(argv)
    assert str(info.value) == (
        "train_torch: model cnn_bn: the dataset has no array 'bn.weight' (the PyTorch module"
        " needs it, shape [4])"
    )
    assert not out.exists()


def test_train_torch_runs_both_dtypes_in_one_process_as_in_one_process_each(
    tmp_path, write_config, monkeypatch
):
    data = tmp_path / "cnn1d.safetensors"
    write_atomic(data, make_data.dataset_bytes("cnn1d"))
    spec = str(conftest.spec_of(write_config(small_config(3, e=SGD)), "e"))
    common = ["--spec", spec, "--data", str(data)]
    (tmp_path / "one").mkdir(), (tmp_path / "both").mkdir()
    for dtype in ("f32", "f64"):
        train_torch.main([*common, "--dtype", dtype, "--out", str(tmp_path / f"one/{dtype}.json")])
    # Each run draws its random numbers (a port's module might) from the same state.
    train = train_torch.train
    drawn = []
    monkeypatch.setattr(train_torch, "train", lambda *a: drawn.append(torch.rand(1)) or train(*a))
    both = [str(tmp_path / f"both/{dtype}.json") for dtype in ("f32", "f64")]
    train_torch.main([*common, "--dtype", "f32", "f64", "--out", *both])
    assert torch.equal(drawn[0], drawn[1])
    for dtype in ("f32", "f64"):
        for ext in ("json", "safetensors"):
            name = f"{dtype}.{ext}"
            assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "both" / name).read_bytes()


def test_train_torch_wants_one_out_file_per_dtype(tmp_path, capsys):
    with pytest.raises(SystemExit):
        train_torch.main(["--spec", "s.json", "--dtype", "f32", "f64", "--data", "d",
                          "--out", str(tmp_path / "run.json")])  # fmt: skip
    assert "2 --dtype value(s) but 1 --out file(s)" in capsys.readouterr().err


# --- the dataset files ----------------------------------------------------------------------


def test_the_cnn_bn_dataset_holds_x_y_then_the_state_in_model_order():
    arrays = arrays_of("cnn_bn")
    assert list(arrays) == ["x", "y", *CNN_BN_SHAPES]
    assert {n: s for n, (s, _) in arrays.items() if n not in ("x", "y")} == CNN_BN_SHAPES
    assert arrays["x"] == arrays_of("cnn1d")["x"]  # the same inputs for every model


# --- the PyTorch module's train-mode numerics -----------------------------------------------


def test_a_train_mode_step_moves_running_var_towards_the_unbiased_variance():
    arrays = arrays_of("cnn_bn")
    model = models.build("cnn_bn", arrays, torch.float64)
    x, _ = models.inputs(arrays, torch.float64)
    batch = x[:16]
    h = model.conv(batch).detach().numpy()  # the batch norm's input [16, 4, 12]
    model(batch)
    n = h.shape[0] * h.shape[2]  # 192 values per channel
    mean = h.mean(axis=(0, 2))
    squares = ((h - mean[None, :, None]) ** 2).sum(axis=(0, 2))
    unbiased, biased = squares / (n - 1), squares / n
    m = 0.1
    np.testing.assert_allclose(model.bn.running_mean.numpy(), m * mean, rtol=1e-13, atol=0)
    expected = (1 - m) * 1.0 + m * unbiased
    np.testing.assert_allclose(model.bn.running_var.numpy(), expected, rtol=1e-14, atol=0)
    # The biased estimator would be measurably elsewhere (a factor n/(n-1) on the batch term).
    other = (1 - m) * 1.0 + m * biased
    assert np.all(np.abs(model.bn.running_var.numpy() - other) > 1e-5)


@pytest.mark.parametrize("name", list(model_specs.SPECS))
def test_the_layer_record_is_autograd_of_the_pieces(name):
    """Each recorded input gradient is dLoss/d(input of layer k) computed afresh: the layers
    from k on, run from a new leaf holding the recorded input; each recorded output is the
    layer applied to its input. Same operations, so the same bits."""
    arrays = arrays_of(name)
    model = models.build(name, arrays, torch.float64)
    x, y = models.inputs(arrays, torch.float64)
    batch, labels = x[:16], y[:16]
    out, record = models.recorded_forward(model, batch)
    models.loss(out, labels).backward()
    rec = record(1)
    assert rec["step"] == 1 and rec["names"] == list(models.MODELS[name].SPEC.layers)
    tokens = not torch.is_floating_point(batch)
    stages = model.stages()
    outputs = [
        torch.tensor(values, dtype=torch.float64).reshape(shape)
        for values, shape in zip(rec["outputs"], output_shapes(model, batch), strict=True)
    ]
    for k, layer_input in enumerate([batch, *outputs[:-1]]):
        if tokens and k == 0:  # token ids have no gradient: recorded as none
            assert rec["input_grads"][0] == []
        else:
            leaf = layer_input.clone().requires_grad_()
            h = leaf
            for _, stage in stages[k:]:
                h = stage(h)
            (grad,) = torch.autograd.grad(models.loss(h, labels), leaf)
            assert rec["input_grads"][k] == grad.flatten().tolist(), rec["names"][k]
        with torch.no_grad():
            assert rec["outputs"][k] == stages[k][1](layer_input).flatten().tolist()


def output_shapes(model: torch.nn.Module, x: torch.Tensor) -> list[torch.Size]:
    """The shape of each layer's output on batch x."""
    shapes, h = [], x
    with torch.no_grad():
        for _, stage in model.stages():
            h = stage(h)
            shapes.append(h.shape)
    return shapes


# --- what train_torch records ---------------------------------------------------------------


@pytest.mark.parametrize("name", list(model_specs.SPECS))
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_recording_leaves_the_trajectory_bit_identical(name, dtype):
    arrays = arrays_of(name)
    for exp in (SGD, ADAM):
        recorded = train_torch.train(spec_of(name, exp, 5, (1, 3, 5)), arrays, dtype)
        plain = train_torch.train(spec_of(name, exp, 5, ()), arrays, dtype)
        assert [r["step"] for r in recorded["layers"]] == [1, 3, 5] and plain["layers"] == []
        for key in ("losses", "lrs", "final", "params", "buffers", "trajectory"):
            assert recorded[key] == plain[key], key  # == on floats: bit for bit (no NaN here)


def test_a_cnn1d_run_has_the_new_keys_empty_but_the_layer_record():
    block = train_torch.train(spec_of("cnn1d", SGD, 3), arrays_of("cnn1d"), "f64")
    assert block["meta"]["model"] == "cnn1d" and block["meta"]["layer_hyperparameters"] == {}
    assert block["buffers"] == {} and block["trajectory"]["buffers"] == {}
    (rec,) = block["layers"]
    assert rec["names"] == ["conv", "relu", "fc"]
    assert [len(v) for v in rec["outputs"]] == [16 * 48, 16 * 48, 16 * 3]
    assert [len(v) for v in rec["input_grads"]] == [16 * 16, 16 * 48, 16 * 48]


def test_a_cnn_bn_run_records_buffers_per_step_and_evaluates_in_eval_mode():
    arrays = arrays_of("cnn_bn")
    block = train_torch.train(spec_of("cnn_bn", ADAM, 4, (1, 4)), arrays, "f64")
    meta = block["meta"]
    assert meta["model"] == "cnn_bn"
    assert meta["layer_hyperparameters"]["bn.running_var_estimator"] == "unbiased"
    running = block["trajectory"]["buffers"]
    assert list(running) == ["bn.running_mean", "bn.running_var"]
    assert [len(running["bn.running_var"]), len(running["bn.running_var"][0])] == [4, 4]
    assert block["buffers"]["bn.running_var"] == running["bn.running_var"][-1]
    assert running["bn.running_var"][0] != running["bn.running_var"][1]
    assert [r["step"] for r in block["layers"]] == [1, 4]
    assert [len(v) for v in block["layers"][0]["input_grads"]] == [256, 768, 768, 768, 768]
    # The final loss: the trained model in eval mode (running statistics), which differs
    # from the same weights in train mode (the whole dataset's own statistics).
    model = models.build("cnn_bn", arrays, torch.float64)
    with torch.no_grad():  # the f64 values after the last step (build loads f32 ones)
        for name, tensor in models.state(model).items():
            values = (block["params"] | block["buffers"])[name]
            tensor.copy_(torch.tensor(values, dtype=torch.float64).reshape(tensor.shape))
    x, y = models.inputs(arrays, torch.float64)
    with torch.no_grad():
        model.eval()
        assert torch.nn.functional.cross_entropy(model(x), y).item() == block["final"]["loss"]
        model.train()
        assert torch.nn.functional.cross_entropy(model(x), y).item() != block["final"]["loss"]


def test_an_encoded_cnn_bn_dataset_round_trips_through_the_trainer(tmp_path):
    """A dataset file written with encode_dataset (not make_data) trains the same."""
    arrays = arrays_of("cnn_bn")
    again = decode_dataset(encode_dataset(arrays, "cnn_bn"), "again")
    spec = spec_of("cnn_bn", SGD, 2)
    assert (
        train_torch.train(spec, again, "f32")["losses"]
        == (train_torch.train(spec, arrays, "f32")["losses"])
    )


# --- the probe on a model with buffers ------------------------------------------------------


def test_the_probe_takes_the_runs_model_and_refuses_a_buffer(tmp_path):
    data = tmp_path / "cnn_bn.safetensors"
    write_atomic(data, make_data.dataset_bytes("cnn_bn"))
    argv = ["--experiment", "e", "--data", str(data)]
    for framework in ("torch", "burn"):
        for dtype in ("f32", "f64"):
            block = train_torch.train(spec_of("cnn_bn", SGD, 2), arrays_of("cnn_bn"), dtype)
            block["meta"]["input_sha256"] = hashlib.sha256(data.read_bytes()).hexdigest()
            path = tmp_path / f"{framework}-{dtype}.json"
            write_run(path, {"e": block})
            argv += [f"--{framework}-{dtype}", str(path)]
    out = ["--csv", str(tmp_path / "p.csv"), "--md", str(tmp_path / "p.md")]
    probe.main([*argv, "--parameter", "ln.weight[3]", *out])
    assert "`ln.weight[3]`" in (tmp_path / "p.md").read_text()
    with pytest.raises(SystemExit, match="'bn.running_var\\[1\\]' is a buffer"):
        probe.main([*argv, "--parameter", "bn.running_var[1]", *out])


# --- the transformer ------------------------------------------------------------------------


def test_the_transformer_stages_are_its_encoder_layers_forward():
    """The recorded stages (embed, attn = x + self_attn(x), norm1, ff = h + ff(h), norm2, fc)
    compose to nn.TransformerEncoderLayer's own forward, bit for bit, in training mode; the
    eval-mode forward (fast path kept off) computes the same bits too."""
    arrays = arrays_of("transformer")
    model = models.build("transformer", arrays, torch.float64)
    x, _ = models.inputs(arrays, torch.float64)
    staged = model(x)
    with torch.no_grad():
        tokens = model.embed(x.transpose(1, 2))
        reference = model.fc(model.enc(tokens).flatten(1))
        assert torch.equal(staged, reference)
        model.eval()
        assert torch.equal(model(x), staged)
        assert torch.backends.mha.get_fastpath_enabled()  # restored after the forward


def test_the_transformer_declares_pytorchs_packed_in_projection():
    spec = model_specs.TRANSFORMER
    shapes = spec.shapes()
    assert shapes["enc.self_attn.in_proj_weight"] == [24, 8]
    assert shapes["enc.self_attn.in_proj_bias"] == [24]
    assert shapes["fc.weight"] == [3, 128] and spec.buffer_names == ()
    assert spec.layers == ("embed", "attn", "norm1", "ff", "norm2", "fc")
    init = spec.initial_arrays()
    rows = np.array(init["enc.self_attn.in_proj_weight"][1]).reshape(3, 8, 8)
    # The query, key and value blocks start apart.
    assert min(np.abs(rows[a] - rows[b]).max() for a, b in ((0, 1), (0, 2), (1, 2))) > 0.01
    model = models.build("transformer", arrays_of("transformer"), torch.float64)
    # and the square root its attention scales by, which no hyperparameter sets (d_k 4)
    held = spec.hyperparameters | {"enc.self_attn.sqrt_d_k": 2.0}
    assert models.layer_hyperparameters("transformer", model) == held
