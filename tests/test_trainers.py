"""Both real trainers, both precisions, on short runs."""

from __future__ import annotations

import json
import math
import struct
import subprocess

import numpy as np
import pytest

from conftest import ADAM, SGD, python_module, small_config, spec_of
from param_group_cases import GROUPED
from torch_burn_parity.config.parity_config import HYPERPARAMETERS
from torch_burn_parity.io.parity_io import experiment_block, read_run, write_atomic
from torch_burn_parity.io.run_file import Final, GroupMeta, Meta, RunBlock, Trajectory
from torch_burn_parity.models import model_specs
from torch_burn_parity.training import make_data

PARAM_NAMES = model_specs.CNN1D.param_names  # the seed model's

RUNS = [(fw, dt) for fw in ("torch", "burn") for dt in ("f32", "f64")]


def max_param_gap(a: dict, b: dict, step: int) -> float:
    return max(
        abs(x - y)
        for name in model_specs.model_of(a).param_names
        for x, y in zip(
            a["trajectory"]["params"][name][step],
            b["trajectory"]["params"][name][step],
            strict=False,
        )
    )


@pytest.fixture(scope="module")
def short_runs(train, write_config):
    config = write_config(small_config(steps=4))
    runs = {}
    for experiment in ("sgd", "adam"):
        for framework, dtype in RUNS:
            _, out = train(framework, experiment, dtype, config)
            runs[experiment, framework, dtype] = out
    return runs


def test_every_run_file_is_valid(short_runs):
    for (experiment, framework, dtype), path in short_runs.items():
        block = experiment_block(path, experiment)
        assert len(block["losses"]) == 4
        assert block["final"]["correct"] in range(97)
        assert [len(block["params"][n]) for n in PARAM_NAMES] == [20, 4, 144, 3]
        assert len(block["trajectory"]["grads"]["fc.weight"][0]) == 144
        meta = block["meta"]
        assert (meta["framework"], meta["dtype"], meta["optimizer"]) == (
            framework,
            dtype,
            experiment,
        )
        assert meta["threads"] == 1 and meta["framework_version"]
        # Adam's amsgrad, left out of the config, is held too (PyTorch's default, false).
        assert set(meta["hyperparameters"]) == set(HYPERPARAMETERS[experiment])
        if framework == "torch":
            assert block["lrs"] == [block["meta"]["hyperparameters"]["lr"]] * 4
            assert meta["schedule"] == {"kind": "constant"}
            assert (meta["clip_grad"], meta["clip_scope"]) == (None, None)
        assert ("adam_factors" in block) == (framework == "burn" and experiment == "adam")


# What every pipeline run file holds beside the required fields (io/run_file.py).
WRITTEN = {"norms", "tensors"}

# The fields only one framework writes (io/run_file.py: NotRequired), and a test's fault.
ONLY = {"torch": {"python", "torch_cpu_capability"},
        "burn": {"backend", "rustc", "burn_shapes"}}  # fmt: skip


def test_each_run_file_holds_exactly_the_typed_fields(short_runs):
    """Both trainers write the fields of io/run_file.py, each its own side's, no other."""
    for (experiment, framework, _), path in short_runs.items():
        scalars = (
            {"sgd": set(), "adam": {"adam_factors"}}[experiment] if framework == "burn" else set()
        )
        # As written: the short fields, the norms and the tensors file's name.
        written = json.loads(path.read_text())[experiment]
        assert set(written) == set(RunBlock.__required_keys__) | scalars | WRITTEN, path
        block = experiment_block(path, experiment)  # its tensors in place
        for key, typed in (("final", Final), ("trajectory", Trajectory)):
            assert set(block[key]) == set(typed.__annotations__), (path, key)
        assert set(block["meta"]) == set(Meta.__required_keys__) | ONLY[framework], path
        assert not ONLY[framework] & set(Meta.__required_keys__)


def test_both_trainers_record_each_group_as_they_hold_it(train, write_config):
    """cnn1d with Muon on fc.weight, AdamW on the rest: each side's meta.param_groups names
    the same parameters and optimizer, PyTorch's values as given, Burn's f32 ones widened."""
    config = write_config(small_config(steps=3, g=GROUPED))
    groups = {}
    for framework in ("torch", "burn"):
        _, out = train(framework, "g", "f64", config)
        (group,) = experiment_block(out, "g")["meta"]["param_groups"]
        assert set(group) == set(GroupMeta.__annotations__)
        groups[framework] = group
    assert groups["torch"]["params"] == groups["burn"]["params"] == ["fc.weight"]
    assert groups["torch"]["optimizer"] == groups["burn"]["optimizer"] == "muon"
    assert groups["torch"]["hyperparameters"]["momentum"] == 0.95
    assert groups["burn"]["hyperparameters"]["momentum"] == float(np.float32(0.95))
    assert groups["burn"]["hyperparameters"]["ns_steps"] == 5


def test_all_runs_read_the_same_input(short_runs):
    hashes = {experiment_block(p)["meta"]["input_sha256"] for p in short_runs.values()}
    assert len(hashes) == 1


def test_f64_sgd_agrees_across_frameworks(short_runs):
    torch64 = experiment_block(short_runs["sgd", "torch", "f64"])
    burn64 = experiment_block(short_runs["sgd", "burn", "f64"])
    for step in range(4):
        assert max_param_gap(torch64, burn64, step) <= 1e-12
    assert abs(torch64["losses"][-1] - burn64["losses"][-1]) <= 1e-12


def test_f64_adam_shows_burns_f32_factors(short_runs):
    torch64 = experiment_block(short_runs["adam", "torch", "f64"])
    burn64 = experiment_block(short_runs["adam", "burn", "f64"])
    # Above f64 rounding (~1e-16) but far below f32 noise: the factors' f32 rounding.
    assert 1e-12 < max_param_gap(torch64, burn64, 1) < 1e-6
    betas = burn64["meta"]["hyperparameters"]["betas"]
    # Burn holds the f32 roundings of 0.9 and 0.999, widened to f64.
    assert betas == [struct.unpack("<f", struct.pack("<f", b))[0] for b in ADAM["betas"]]
    assert betas != ADAM["betas"]
    assert len(burn64["adam_factors"]["combined_factor"]) == 4


def test_reruns_are_byte_identical(train, write_config):
    config = write_config(small_config(steps=3))
    for framework in ("torch", "burn"):
        _, out = train(framework, "adam", "f32", config)
        first = out.read_bytes()
        out.unlink()
        _, out = train(framework, "adam", "f32", config)
        assert out.read_bytes() == first


@pytest.mark.parametrize("framework", ["torch", "burn"])
def test_diverging_run_keeps_non_finite_values(train, write_config, framework):
    config = write_config(small_config(steps=10, boom=dict(SGD, lr=1e4)))
    _, out = train(framework, "boom", "f32", config)
    assert '"NaN"' in out.read_text() or "Infinity" in out.read_text()
    block = read_run(out)["boom"]
    assert any(not math.isfinite(x) for x in block["losses"])
    assert any(not math.isfinite(x) for x in block["params"]["fc.weight"])


def refused(framework, burn_binary, dataset, write_config, tmp_path, change) -> str:
    """A trainer's stderr for a resolved spec of Adam changed by `change`; it must fail
    before writing anything, on one line."""
    config = write_config(small_config(ok=ADAM))
    spec = json.loads(spec_of(config, "ok").read_text())
    change(spec)
    bad, out = tmp_path / "bad.json", tmp_path / "run.json"
    bad.write_text(json.dumps(spec))
    cmd = trainer_command(framework, burn_binary)
    cmd += ["--spec", bad, "--dtype", "f32", "--data", dataset, "--out", out]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode != 0 and not out.exists()
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    return proc.stderr


@pytest.mark.parametrize("framework", ["torch", "burn"])
def test_a_spec_with_an_unknown_optimizer_is_refused(
    burn_binary, dataset, write_config, tmp_path, framework
):
    stderr = refused(framework, burn_binary, dataset, write_config, tmp_path,
                     lambda spec: spec.update(optimizer="lion"))  # fmt: skip
    assert "unknown optimizer 'lion' (known: sgd, adam, adamw, adagrad, rmsprop, muon)" in stderr


@pytest.mark.parametrize("framework", ["torch", "burn"])
def test_a_spec_missing_a_hyperparameter_is_refused(
    burn_binary, dataset, write_config, tmp_path, framework
):
    stderr = refused(framework, burn_binary, dataset, write_config, tmp_path,
                     lambda spec: spec["hyperparameters"].pop("eps"))  # fmt: skip
    assert "hyperparameters of adam: missing" in stderr and "eps" in stderr


def test_kept_default_is_recorded(train, write_config):
    config = write_config(small_config(pitfall=dict(ADAM, keep_defaults={"burn": ["eps"]})))
    _, burn = train("burn", "pitfall", "f32", config)
    _, torch = train("torch", "pitfall", "f32", config)
    assert read_run(burn)["pitfall"]["meta"]["hyperparameters"]["eps"] == pytest.approx(1e-5)
    assert read_run(torch)["pitfall"]["meta"]["hyperparameters"]["eps"] == 1e-8


# --- cnn_bn: a model with buffers, both trainers --------------------------------------------


@pytest.fixture(scope="module")
def cnn_bn_runs(burn_binary, write_config, tmp_path_factory):
    """Both trainers, both precisions, 4 steps of SGD on cnn_bn, the layer record at 1 and 4."""
    root = tmp_path_factory.mktemp("cnn_bn")
    data = root / "cnn_bn.safetensors"
    write_atomic(data, make_data.dataset_bytes("cnn_bn"))
    config = write_config(small_config(4, bn=dict(SGD, model="cnn_bn", probe_steps=[1, 4])))
    runs = {}
    for framework, dtype in RUNS:
        out = root / f"{framework}-{dtype}.json"
        cmd = trainer_command(framework, burn_binary)
        cmd += ["--spec", spec_of(config, "bn"), "--dtype", dtype, "--data", data,
                "--out", out]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{framework} trainer failed: {proc.stderr}"
        runs[framework, dtype] = experiment_block(out, "bn")
    return runs


def trainer_command(framework: str, burn_binary) -> list:
    return python_module("training.train_torch") if framework == "torch" else [burn_binary]


def test_both_trainers_write_the_same_cnn_bn_keys(cnn_bn_runs):
    torch64, burn64 = cnn_bn_runs["torch", "f64"], cnn_bn_runs["burn", "f64"]
    for block in cnn_bn_runs.values():
        assert block["meta"]["model"] == "cnn_bn"
        assert list(block["trajectory"]["buffers"]) == ["bn.running_mean", "bn.running_var"]
        assert [r["step"] for r in block["layers"]] == [1, 4]
        assert block["layers"][0]["names"] == ["conv", "bn", "gelu", "ln", "fc"]
    held = {fw: cnn_bn_runs[fw, "f64"]["meta"]["layer_hyperparameters"] for fw in ("torch", "burn")}
    assert held["torch"].pop("bn.running_var_estimator") == "unbiased"
    assert held["burn"].pop("bn.running_var_estimator") == "biased"
    assert held["torch"] == held["burn"]
    assert set(torch64) == set(burn64) and set(torch64["trajectory"]) == set(burn64["trajectory"])


def test_f64_cnn_bn_agrees_but_for_the_running_variance(cnn_bn_runs):
    torch64, burn64 = cnn_bn_runs["torch", "f64"], cnn_bn_runs["burn", "f64"]
    for step in range(4):
        assert max_param_gap(torch64, burn64, step) <= 1e-12
    mean, var = ([np.max(np.abs(np.subtract(torch64["buffers"][n], burn64["buffers"][n])))
                  for n in ("bn.running_mean", "bn.running_var")])  # fmt: skip
    assert mean <= 1e-12
    assert var > 1e-6  # PyTorch's unbiased estimator against Burn's biased one
    for a, b in zip(torch64["layers"], burn64["layers"], strict=True):
        for key in ("outputs", "input_grads"):
            for x, y in zip(a[key], b[key], strict=True):
                assert len(x) == len(y) and np.max(np.abs(np.subtract(x, y))) <= 1e-12


@pytest.mark.parametrize("framework", ["torch", "burn"])
def test_a_dataset_of_another_model_is_refused(burn_binary, dataset, write_config, tmp_path,
                                               framework):  # fmt: skip
    config = write_config(small_config(2, bn=dict(SGD, model="cnn_bn")))
    out = tmp_path / "run.json"
    cmd = trainer_command(framework, burn_binary)
    cmd += ["--spec", spec_of(config, "bn"), "--dtype", "f32", "--data", dataset,
            "--out", out]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode != 0 and not out.exists()
    assert "model cnn_bn: the dataset has no array 'bn.weight'" in proc.stderr
