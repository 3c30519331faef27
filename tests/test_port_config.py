"""Your own port (models/port.py, models/port_torch.py): the config's checks, one line per
problem before any job, and the PyTorch side — your module by import path, your weights,
your data, its layers recorded by hooks."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from safetensors.numpy import save_file

from conftest import ADAM
from torch_burn_parity.config.check_config import SCHEMA, config_problems, load_schema
from torch_burn_parity.models import models, port
from torch_burn_parity.models.model_specs import ModelError, spec, spec_of_config

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples/byo"


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    """The example's paths are the project's; the register is this test's own."""
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv(port.ENV, raising=False)
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))  # register_ports adds


def example_config() -> dict:
    config = yaml.safe_load((EXAMPLE / "config.yaml").read_text())
    return copy.deepcopy(config)


def problems_of(config: dict) -> list[str]:
    return [str(p) for p in config_problems(config, load_schema(SCHEMA))]


def with_port(change, experiment: str = "tiny_mlp_sgd") -> list[str]:
    config = example_config()
    for exp in config["experiments"].values():
        exp["model"] = copy.deepcopy(exp["model"])
    change(config["experiments"][experiment]["model"], config["experiments"][experiment])
    return [p for p in problems_of(config) if f".{experiment}." in p]


def test_the_example_config_is_accepted():
    assert problems_of(example_config()) == []


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (
            lambda m, e: m.update(layer=m.pop("layers")),
            "experiments.tiny_mlp_sgd.model.layer: unknown key (known: name, torch, burn, init,"
            " data, layers); did you mean 'layers'?",
        ),
        (
            lambda m, e: m.update(name="lenet"),
            "experiments.tiny_mlp_sgd.model.name: 'lenet': a built-in model's (the port's name"
            " names its files)",
        ),
        (
            lambda m, e: m["torch"].update(module="tiny_mlp.TinyMlp"),
            "experiments.tiny_mlp_sgd.model.torch.module: 'tiny_mlp.TinyMlp': not an import"
            " path and a class, e.g. 'mypkg.net:Net'",
        ),
        (
            lambda m, e: m["torch"].update(path="examples/byo/nowhere"),
            "experiments.tiny_mlp_sgd.model.torch.path: examples/byo/nowhere: no such folder",
        ),
        (
            lambda m, e: m.update(init="examples/byo/missing.safetensors"),
            "experiments.tiny_mlp_sgd.model.init: examples/byo/missing.safetensors: no such file",
        ),
        (
            lambda m, e: m.update(init="examples/byo/config.yaml"),
            "experiments.tiny_mlp_sgd.model.init: examples/byo/config.yaml: not a safetensors"
            " file (no header)",
        ),
        (
            lambda m, e: e.update(data="digits"),
            "experiments.tiny_mlp_sgd.data: a port trains on its own data: give the file as"
            " `model.data`",
        ),
    ],
)
def test_a_bad_port_is_refused_in_one_line_naming_its_key(change, line):
    assert with_port(change) == [line]


def test_a_port_without_its_keys_names_each(tmp_path):
    found = with_port(lambda m, e: [m.pop(k) for k in ("burn", "layers")])
    assert found == [
        "experiments.tiny_mlp_sgd.model.burn: a port needs `burn` ({crate: folder, bin: binary})",
        "experiments.tiny_mlp_sgd.model.layers: a port needs `layers` (the submodules"
        " recorded: dotted names or globs, e.g. 'blocks.*.mlp')",
    ]


def test_a_crate_without_its_lock_file_is_refused(tmp_path):
    (tmp_path / "Cargo.toml").write_text((ROOT / "examples/byo/burn/Cargo.toml").read_text())
    found = with_port(lambda m, e: m["burn"].update(crate=str(tmp_path)))
    assert found == [
        f"experiments.tiny_mlp_sgd.model.burn.crate: {tmp_path}: no Cargo.lock (built with"
        " --locked: commit the lock file)"
    ]


def test_weights_and_data_of_the_wrong_kinds_are_refused(tmp_path):
    save_file({"fc1.weight": np.zeros((2, 2), np.int64)}, tmp_path / "w.safetensors")
    save_file({"x": np.zeros((4, 3), np.float32)}, tmp_path / "d.safetensors")
    found = with_port(
        lambda m, e: m.update(
            init=str(tmp_path / "w.safetensors"), data=str(tmp_path / "d.safetensors")
        )
    )
    assert found == [
        f"experiments.tiny_mlp_sgd.model.init: {tmp_path}/w.safetensors: tensor 'fc1.weight'"
        " is I64; the initial weights are read as F32",
        f"experiments.tiny_mlp_sgd.model.data: {tmp_path}/d.safetensors: no array 'y' (x:"
        " the inputs, y: the labels or targets)",
    ]


def test_a_batch_larger_than_the_ports_data_is_refused():
    config = example_config()
    config["batch_size"] = 400
    assert (
        "experiments.tiny_mlp_sgd.model.data: examples/byo/data.safetensors has 320 samples,"
        " fewer than batch_size 400"
    ) in problems_of(config)


def test_the_ports_spec_is_its_files():
    model = spec_of_config(example_config()["experiments"]["tiny_mlp_sgd"]["model"])
    assert model.name == model.tag == "tiny_mlp" and model.size == {}
    assert model.param_names == (
        "fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight", "norm.bias", "norm.weight",
    )  # fmt: skip
    assert model.state_shapes["fc1.weight"] == [32, 64] and model.param_count == 2_474
    assert (model.sample, model.tokens, model.classes) == ((64,), False, 10)
    assert model.layers == ("fc1", "act", "norm", "fc2")
    # registered, it is found by name as a built-in model is (every job's way)
    port.register_ports(example_config()["experiments"])
    assert spec("tiny_mlp") == model and os.environ[port.ENV]


def registered_example() -> dict:
    """The example's dataset arrays, its port registered."""
    from torch_burn_parity.io.parity_io import decode_dataset
    from torch_burn_parity.training.make_data import dataset_bytes

    port.register_ports(example_config()["experiments"])
    return decode_dataset(dataset_bytes("tiny_mlp"))


def test_the_pytorch_module_is_imported_by_its_path_and_loads_your_weights():
    arrays = registered_example()
    model = models.build("tiny_mlp", arrays, torch.float64)
    weights = port.read_arrays(EXAMPLE / "weights.safetensors")
    for name, tensor in model.state_dict().items():
        assert np.array_equal(tensor.numpy(), weights[name].astype(np.float64)), name
    assert type(model).__name__ == "TinyMlp" and model.fc1.out_features == 32


def test_weights_missing_a_parameter_of_the_module_are_refused():
    arrays = registered_example()
    del arrays["fc2.bias"]
    with pytest.raises(ModelError, match=r"no array 'fc2\.bias' \(the PyTorch module needs it"):
        models.build("tiny_mlp", arrays, torch.float64)


def test_a_layer_that_is_no_submodule_is_refused():
    from torch_burn_parity.models.port_torch import new

    config = example_config()
    config["experiments"]["tiny_mlp_sgd"]["model"]["layers"] = ["fc1", "relu"]
    port.register_ports({"e": config["experiments"]["tiny_mlp_sgd"]})
    with pytest.raises(ModelError, match=r"^layers: the name 'relu' matches no submodule of"
                       r" tiny_mlp:TinyMlp at any depth \(nearest: norm, fc2, fc1\)$"):  # fmt: skip
        new(spec("tiny_mlp"))


def test_a_module_that_cannot_be_imported_is_refused():
    from torch_burn_parity.models.port_torch import new

    config = example_config()
    config["experiments"]["tiny_mlp_sgd"]["model"]["torch"]["module"] = "tiny_mlp:Missing"
    port.register_ports({"e": config["experiments"]["tiny_mlp_sgd"]})
    with pytest.raises(ModelError, match=r"torch.module tiny_mlp:Missing: tiny_mlp has no Missing"):
        new(spec("tiny_mlp"))


def test_the_hooks_record_each_layers_output_and_input_gradient():
    arrays = registered_example()
    model = models.build("tiny_mlp", arrays, torch.float64)
    x, y = models.inputs(arrays, torch.float64)
    out, record = models.recorded_forward(model, x[:16])
    models.loss(out, y[:16]).backward()
    got = record(1)
    assert got["names"] == ["fc1", "act", "norm", "fc2"]
    # the same values computed by hand, the layers chained as the forward chains them
    h = [x[:16].clone().requires_grad_()]
    for layer in (model.fc1, model.act, model.norm, model.fc2):
        h.append(layer(h[-1]))
        h[-1].retain_grad()
    for t in h[:-1]:
        t.retain_grad()
    models.loss(h[-1], y[:16]).backward()
    for k in range(4):
        assert got["outputs"][k] == h[k + 1].detach().flatten().tolist()
        assert got["input_grads"][k] == h[k].grad.flatten().tolist()
    assert torch.equal(out, h[-1])


def test_data_whose_x_does_not_fit_the_module_is_refused():
    arrays = registered_example()
    shape, values = arrays["x"]
    arrays["x"] = ([shape[0], 63], values[: shape[0] * 63])
    why = r"addmm: mat1 and mat2 shapes cannot be multiplied \(1x63 and 64x32\)"
    with pytest.raises(
        ModelError, match=rf"data: x \[320, 63\] does not fit TinyMlp's input \({why}\)"
    ):
        models.build("tiny_mlp", arrays, torch.float64)


# --- the loss ---------------------------------------------------------------------------


def targets_file(tmp_path: Path, width: int = 10) -> str:
    """The example's x with float targets y [320, width] (mse's)."""
    x = port.read_arrays(EXAMPLE / "data.safetensors")["x"]
    y = np.tanh(x[:, :width]).astype(np.float32)
    save_file({"x": x, "y": y}, tmp_path / "targets.safetensors")
    return str(tmp_path / "targets.safetensors")


def test_a_loss_that_does_not_fit_the_data_is_refused_naming_both(tmp_path):
    targets = targets_file(tmp_path)
    # mse with the example's class labels; cross-entropy with float targets
    assert with_port(lambda m, e: e.update(loss="mse")) == [
        "experiments.tiny_mlp_sgd.loss: mse needs F32 y, but examples/byo/data.safetensors's"
        " y is I64 [320] (class labels)"
    ]
    assert with_port(lambda m, e: m.update(data=targets)) == [
        f"experiments.tiny_mlp_sgd.loss: cross_entropy needs I64 y, but {targets}'s y is F32"
        " [320, 10] (float targets)"
    ]
    assert with_port(lambda m, e: (m.update(data=targets), e.update(loss="mse"))) == []
    # label smoothing is the cross-entropy's; a built-in dataset holds class labels only
    assert with_port(
        lambda m, e: (m.update(data=targets), e.update(loss="mse", label_smoothing=0.1))
    ) == ["experiments.tiny_mlp_sgd.label_smoothing: a cross_entropy option; loss is mse"]
    config = example_config()
    config["experiments"] = {"lenet_mse": {"optimizer": "sgd", "lr": 0.1, "model": "lenet",
                                           "loss": "mse"}}  # fmt: skip
    assert [p for p in problems_of(config) if ".loss" in p] == [
        "experiments.lenet_mse.loss: mse needs F32 targets y, which only a port's own data file"
        " (model.data) holds: the built-in datasets' y are class labels"
    ]
    config["experiments"]["lenet_mse"]["loss"] = "l1"
    assert any("experiments.lenet_mse.loss" in p and "l1" in p for p in problems_of(config))


def test_mse_is_the_mean_squared_error_and_its_targets_must_fit_the_output(tmp_path):
    from torch_burn_parity.io.parity_io import decode_dataset
    from torch_burn_parity.training.make_data import dataset_bytes
    from torch_burn_parity.training.train_torch import evaluate

    def dataset(width: int) -> dict:
        """The dataset file the pipeline packs for the port on float targets of ``width``."""
        config = example_config()
        config["experiments"]["tiny_mlp_sgd"]["model"]["data"] = targets_file(tmp_path, width)
        port.register_ports({"e": config["experiments"]["tiny_mlp_sgd"]})
        return decode_dataset(dataset_bytes("tiny_mlp"))

    arrays = dataset(10)
    x, y = models.inputs(arrays, torch.float64)
    assert y.dtype == torch.float64 and list(y.shape) == [320, 10]
    model = models.build("tiny_mlp", arrays, torch.float64)
    with torch.no_grad():
        out = model(x[:16])
        assert models.loss(out, y[:16], kind="mse").item() == ((out - y[:16]) ** 2).mean().item()
        by_hand = ((model(x) - y) ** 2).mean().item()
    final = evaluate(model, x, y, kind="mse")
    assert final["correct"] is None and final["predictions"] is None
    assert final["loss"] == by_hand
    # targets of another width than the module's output: refused before any step
    arrays = dataset(7)
    with pytest.raises(ModelError, match=r"data: y \[320, 7\] \(mse's targets\) does not fit"
                       r" TinyMlp's output \[1, 10\] on one sample"):  # fmt: skip
        models.build("tiny_mlp", arrays, torch.float64)


def test_the_resolved_spec_of_a_port_lists_its_state_and_layers():
    from torch_burn_parity.config.resolve import experiment_spec

    spec = experiment_spec(example_config(), "tiny_mlp_sgd")
    port_spec = spec.port
    assert port_spec.name == spec.model == "tiny_mlp"
    assert port_spec.params[:2] == [{"name": "fc1.bias", "shape": [32]},
                                       {"name": "fc1.weight", "shape": [32, 64]}]  # fmt: skip
    assert [p["name"] for p in port_spec.params] == [
        "fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight", "norm.bias", "norm.weight"]  # fmt: skip
    assert port_spec.buffers == [] and port_spec.layers == ["fc1", "act", "norm", "fc2"]
    assert experiment_spec(dict(example_config(), experiments={"e": ADAM}), "e").port is None
