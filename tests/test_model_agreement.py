"""Each registered model's two definitions agree: the PyTorch module
(src/torch_burn_parity/models/model_*.py) and the Burn module (rust/src/models/) compute the
same thing from the same dataset file, and a dataset whose names or shapes one side does not
declare is refused by that side before any step, naming the array.

This is the test to run after adding a model (docs/extending.md: "Adding a model"): it covers every
model in model_specs.SPECS without being told about it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import SGD, python_module, small_config, spec_of
from torch_burn_parity.io.parity_io import (
    decode_dataset,
    encode_dataset,
    experiment_block,
    write_atomic,
)
from torch_burn_parity.models import model_specs
from torch_burn_parity.training import make_data

MODELS = list(model_specs.SPECS)
# The forward at initialisation: the same f32 values widened to f64, the same layers.
INIT_BOUND = 1e-12


def trainer(framework: str, burn_binary) -> list:
    return python_module("training.train_torch") if framework == "torch" else [burn_binary]


def train(framework, burn_binary, config, data, out) -> subprocess.CompletedProcess:
    cmd = trainer(framework, burn_binary)
    cmd += ["--spec", spec_of(config, "m"), "--dtype", "f64", "--data", data,
            "--out", out]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True)


def both_runs(burn_binary, config, data, root) -> dict:
    """{framework: f64 run block} of experiment `m` of ``config``, trained on both sides."""
    runs = {}
    for framework in ("torch", "burn"):
        out = root / f"{framework}.json"
        proc = train(framework, burn_binary, config, data, out)
        assert proc.returncode == 0, proc.stderr
        runs[framework] = experiment_block(out, "m")
    return runs


def model_dataset(model: str, root: Path) -> Path:
    """The dataset file of ``model``, written under ``root``."""
    data = root / f"{model}.safetensors"
    write_atomic(data, make_data.dataset_bytes(model))
    return data


@pytest.fixture(scope="module", params=MODELS)
def first_steps(request, burn_binary, write_config, tmp_path_factory):
    """(model, {framework: f64 run block}) of one SGD step of each model on both sides."""
    model = request.param
    root = tmp_path_factory.mktemp(model)
    config = write_config(small_config(1, m=dict(SGD, model=model)))
    return model, both_runs(burn_binary, config, model_dataset(model, root), root)


def largest(a: list[list[float]], b: list[list[float]]) -> float:
    """The largest |a − b| over lists of equal lengths (an empty one, a token input's
    gradient, counts 0)."""
    assert [len(x) for x in a] == [len(y) for y in b]
    return max(
        float(np.max(np.abs(np.subtract(x, y)), initial=0.0)) for x, y in zip(a, b, strict=True)
    )


def test_both_definitions_agree_at_initialisation(first_steps):
    """Step 1's layer record is the forward of the initial weights: every layer's output
    agrees to 1e-12 in f64, and so do the input and parameter gradients of the backward."""
    model, runs = first_steps
    torch_record, burn_record = runs["torch"]["layers"][0], runs["burn"]["layers"][0]
    assert torch_record["names"] == burn_record["names"] == list(model_specs.spec(model).layers)
    assert largest(torch_record["outputs"], burn_record["outputs"]) <= INIT_BOUND
    assert largest(torch_record["input_grads"], burn_record["input_grads"]) <= INIT_BOUND
    names = model_specs.spec(model).param_names
    grads = {fw: [runs[fw]["trajectory"]["grads"][n][0] for n in names] for fw in runs}
    assert largest(grads["torch"], grads["burn"]) <= INIT_BOUND
    assert abs(runs["torch"]["losses"][0] - runs["burn"]["losses"][0]) <= INIT_BOUND


def test_both_sides_hold_the_declared_state(first_steps):
    """Both run files carry exactly the registry's parameters and buffers, in its shapes."""
    model, runs = first_steps
    spec = model_specs.spec(model)
    for block in runs.values():
        assert set(block["params"]) == set(spec.param_names)
        assert set(block["buffers"]) == set(spec.buffer_names)
        for name, shape in spec.shapes().items():
            value = block["params"].get(name, block["buffers"].get(name))
            assert len(value) == np.prod(shape), name


def with_array_renamed(model: str, old: str, new: str) -> bytes:
    arrays = decode_dataset(make_data.dataset_bytes(model))
    return encode_dataset(
        {(new if name == old else name): array for name, array in arrays.items()}, model
    )


def with_array_reshaped(model: str, name: str, size: int) -> bytes:
    arrays = decode_dataset(make_data.dataset_bytes(model))
    arrays[name] = ([size], [0.5] * size)
    return encode_dataset(arrays, model)


def last_state_array(model: str) -> tuple[str, list[int]]:
    """A parameter or buffer of the model other than the first (so a rename is not caught as
    a change of the input's shape)."""
    name, shape = list(model_specs.spec(model).shapes().items())[-1]
    return name, shape


@pytest.mark.parametrize("framework", ["torch", "burn"])
@pytest.mark.parametrize("model", MODELS)
def test_a_name_one_side_does_not_declare_is_refused(
    model, framework, burn_binary, write_config, tmp_path
):
    name, shape = last_state_array(model)
    data = tmp_path / "renamed.safetensors"
    write_atomic(data, with_array_renamed(model, name, name + "_renamed"))
    out = tmp_path / "run.json"
    proc = train(framework, burn_binary, write_config(small_config(1, m=dict(SGD, model=model))),
                 data, out)  # fmt: skip
    side = "PyTorch" if framework == "torch" else "Burn"
    assert proc.returncode != 0 and not out.exists()
    assert f"model {model}: the dataset has no array '{name}'" in proc.stderr
    assert f"the {side} module needs it, shape [{', '.join(map(str, shape))}]" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("framework", ["torch", "burn"])
@pytest.mark.parametrize("model", MODELS)
def test_a_shape_one_side_does_not_declare_is_refused(
    model, framework, burn_binary, write_config, tmp_path
):
    name, shape = last_state_array(model)
    size = int(np.prod(shape)) + 1
    data = tmp_path / "reshaped.safetensors"
    write_atomic(data, with_array_reshaped(model, name, size))
    out = tmp_path / "run.json"
    proc = train(framework, burn_binary, write_config(small_config(1, m=dict(SGD, model=model))),
                 data, out)  # fmt: skip
    side = "PyTorch" if framework == "torch" else "Burn"
    assert proc.returncode != 0 and not out.exists()
    expected = (
        f"model {model}: array '{name}' has shape [{size}] in the dataset,"
        f" the {side} module's is [{', '.join(map(str, shape))}]"
    )
    assert expected in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_the_burn_binary_knows_exactly_the_registered_models(burn_binary, write_config, tmp_path):
    config = write_config(small_config(1, m=SGD))
    spec = spec_of(config, "m")  # resolved, then given a model no side has
    spec.write_text(spec.read_text().replace('"model": "cnn1d"', '"model": "no_such_model"'))
    out = tmp_path / "run.json"
    proc = train("burn", burn_binary, config, tmp_path / "unused.safetensors", out)
    assert proc.returncode != 0
    # the built-in models, then how a port is named (rust/src/port/)
    assert f"(known: {', '.join(MODELS)}, or a port's name" in proc.stderr, proc.stderr


def test_the_config_schema_offers_exactly_the_registered_models():
    import yaml

    from conftest import ROOT
    from torch_burn_parity.models.model_specs import SIZES

    schema = yaml.safe_load((ROOT / "src/torch_burn_parity/config/config.schema.yaml").read_text())
    text = schema["$defs"]["experiment"]["properties"]["model"]["description"]
    # The schema's words name every model and size key; the check refuses any other model.
    assert list(SIZES) == list(MODELS)
    for name, keys in SIZES.items():
        assert name in text and all(k in text for k in keys)


def test_burns_clipping_is_replayed_per_burn_tensor(burn_binary, write_config, tmp_path):
    """Burn clips each of its tensors by its own norm; the transformer's packed in_proj_weight
    is three of them (query, key, value). The replay clips those three blocks apart and so
    reproduces Burn's run; clipping the packed tensor as one would not."""
    from torch_burn_parity.analysis import replay as rp
    from torch_burn_parity.analysis.gaps import param_matrix

    data = model_dataset("transformer", tmp_path)
    exp = dict(SGD, model="transformer", lr=0.1, clip_grad={"norm": 0.01})
    runs = both_runs(burn_binary, write_config(small_config(4, m=exp)), data, tmp_path)
    arrays = decode_dataset(data.read_bytes())
    variant = rp.variants(runs["torch"], runs["burn"])["replay"][0]
    _, snapshots = rp.run(arrays, variant, 4, 16, model="transformer")
    assert abs(snapshots - param_matrix(runs["burn"])).max() <= 1e-14
    # The same replay with in_proj_weight and in_proj_bias clipped whole misses Burn's run.
    variant.clip = rp.burn_clipping({"norm": 0.01}, [1] * 16)
    _, whole = rp.run(arrays, variant, 4, 16, model="transformer")
    assert abs(whole - param_matrix(runs["burn"])).max() > 1e-6
