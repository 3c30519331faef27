"""replay.py with a model that keeps running statistics (cnn_bn), without the Burn binary:
Burn's running-statistics update against an independent numpy computation, on one batch and
on a whole Burn-like run; and the cnn1d replay tables unchanged, byte for byte."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import golden_numbers
from conftest import SGD, small_config
from torch_burn_parity.analysis import clip_and_stats
from torch_burn_parity.analysis import replay as rp
from torch_burn_parity.analysis.gaps import buffer_columns, param_matrix, step_gaps
from torch_burn_parity.config import machine
from torch_burn_parity.config.cpu_path import describe
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.io.parity_io import decode_dataset, write_atomic, write_run
from torch_burn_parity.judgement.verdict import ABSOLUTE_FLOOR
from torch_burn_parity.models import models
from torch_burn_parity.training import make_data, train_torch

STEPS, MOMENTUM = 6, 0.1


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    torch.set_num_threads(1)


def numpy_burn_stats(x: np.ndarray, mean: np.ndarray, var: np.ndarray, m: float):
    """Burn's update written independently: biased batch variance over (batch, positions),
    running·(1 − m) + stat·m."""
    batch_mean = x.mean(axis=(0, 2))
    batch_var = ((x - batch_mean[None, :, None]) ** 2).mean(axis=(0, 2))
    return mean * (1 - m) + batch_mean * m, var * (1 - m) + batch_var * m


def test_burns_running_stats_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(0.3, 2.0, size=(16, 4, 12))
    mean, var = rng.normal(size=4), rng.uniform(0.5, 2.0, size=4)
    got = clip_and_stats.burn_running_stats(
        torch.tensor(x), torch.tensor(mean), torch.tensor(var), 0.1
    )
    want = numpy_burn_stats(x, mean, var, 0.1)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-15, atol=1e-16)
    # The biased estimator: PyTorch's unbiased one would be a factor 192/191 away.
    unbiased = var * 0.9 + x.var(axis=(0, 2), ddof=1) * 0.1
    assert np.all(np.abs(got[1].numpy() - unbiased) > 1e-4)


def test_installed_burn_stats_replace_pytorchs_update():
    arrays = decode_dataset(make_data.dataset_bytes("cnn_bn"))
    model = models.build("cnn_bn", arrays, torch.float64)
    update = rp.BurnRunningStats({"bn": MOMENTUM}).install(model)
    x, y = models.inputs(arrays, torch.float64)
    h = model.conv(x[:16]).detach().numpy()
    torch.nn.functional.cross_entropy(model(x[:16]), y[:16]).backward()
    pytorchs = model.bn.running_var.clone()
    update()
    mean, var = numpy_burn_stats(h, np.zeros(4), np.ones(4), MOMENTUM)
    np.testing.assert_allclose(model.bn.running_mean.numpy(), mean, rtol=1e-14, atol=1e-17)
    np.testing.assert_allclose(model.bn.running_var.numpy(), var, rtol=1e-14)
    assert torch.all((model.bn.running_var - pytorchs).abs() > 1e-5)


# --- a whole run ----------------------------------------------------------------------------


def numpy_conv(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Conv1d(1→C, k, no bias) of x [N, 1, L]: [N, C, L − k + 1]."""
    windows = np.lib.stride_tricks.sliding_window_view(x[:, 0, :], weight.shape[2], axis=1)
    return np.einsum("nlk,ck->ncl", windows, weight[:, 0, :])


def burn_like(torch_run: dict, arrays: dict) -> dict:
    """PyTorch's f64 cnn_bn SGD run as Burn would have written it: the same parameters (SGD in
    f64 matches to rounding, as the cnn1d replay shows), Burn's layer hyperparameters, and
    running statistics by Burn's update, computed in numpy from each step's batch norm input
    (conv of the batch with the parameters before the step)."""
    burn = copy.deepcopy(torch_run)
    burn["meta"] |= {"framework": "burn", "layer_hyperparameters": {
        "bn.momentum": MOMENTUM, "bn.eps": 1e-5, "ln.eps": 1e-5, "gelu.approximate": "none",
        "bn.running_var_estimator": "biased"}}  # fmt: skip
    x = np.asarray(arrays["x"][1], dtype=np.float64).reshape(arrays["x"][0])
    params = torch_run["trajectory"]["params"]
    mean, var = np.zeros(4), np.ones(4)
    means, variances = [], []
    for step in range(STEPS):
        name = "conv.weight"  # the conv weight the step's forward saw
        weight = np.asarray(params[name][step - 1] if step else arrays[name][1])
        h = numpy_conv(x[16 * step : 16 * step + 16], weight.reshape(4, 1, 5))
        mean, var = numpy_burn_stats(h, mean, var, MOMENTUM)
        means.append(mean.tolist())
        variances.append(var.tolist())
    burn["trajectory"]["buffers"] = {"bn.running_mean": means, "bn.running_var": variances}
    burn["buffers"] = {"bn.running_mean": means[-1], "bn.running_var": variances[-1]}
    return burn


@pytest.fixture(scope="module")
def cnn_bn_runs():
    arrays = decode_dataset(make_data.dataset_bytes("cnn_bn"))
    spec = replace(experiment_spec(small_config(STEPS, e=SGD), "e"), model="cnn_bn")
    torch_run = train_torch.train(spec, arrays, "f64")
    return arrays, torch_run, burn_like(torch_run, arrays)


def replayed(arrays, variant: rp.Variant) -> np.ndarray:
    return rp.run(arrays, variant, STEPS, 16, model="cnn_bn")[1]


def test_the_replay_follows_burns_running_stats(cnn_bn_runs):
    arrays, torch_run, burn_run = cnn_bn_runs
    chosen = rp.variants(torch_run, burn_run)
    assert set(chosen) == {"replay", "counterfactual", "held_f64", "burn_running_stats"}
    assert chosen["replay"][0].running_stats == rp.BurnRunningStats({"bn": MOMENTUM})
    assert chosen["counterfactual"][0].running_stats is None  # PyTorch's own
    assert chosen["held_f64"][0].running_stats is None
    buffers = buffer_columns(torch_run)
    assert (buffers.start, buffers.stop) == (199, 207)  # 199 parameters, then 4 + 4 buffers
    replay = replayed(arrays, chosen["replay"][0])
    assert replay.shape == (STEPS, 207)
    assert (step_gaps(replay, param_matrix(burn_run)) <= 1e-14).all()
    counter = replayed(arrays, chosen["counterfactual"][0])
    assert (step_gaps(counter, param_matrix(torch_run)) <= 1e-14).all()
    # Burn's estimator alone: the parameters stay PyTorch's, the running variance moves.
    estimator = replayed(arrays, chosen["burn_running_stats"][0])
    gap = np.abs(estimator - param_matrix(torch_run))
    assert (gap[:, : buffers.start] <= 1e-14).all()
    assert (gap[:, buffers].max(axis=1) > 1e-5).all()


def test_a_model_without_running_stats_has_no_such_variant(cnn_bn_runs):
    _, torch_run, burn_run = cnn_bn_runs
    torch1d, burn1d = copy.deepcopy(torch_run), copy.deepcopy(burn_run)
    for block in (torch1d, burn1d):
        block["meta"] |= {"model": "cnn1d", "layer_hyperparameters": {}}
    assert set(rp.variants(torch1d, burn1d)) == {"replay", "counterfactual", "held_f64"}
    assert rp.variants(torch1d, burn1d)["replay"][0].running_stats is None


def test_burn_running_stats_comes_last_in_the_chain(cnn_bn_runs):
    """With a schedule and clipping, the estimator is added to burn_clipping's choices."""
    _, torch_run, burn_run = cnn_bn_runs
    torch_run, burn_run = copy.deepcopy(torch_run), copy.deepcopy(burn_run)
    burn_run["meta"]["schedule"] = {"kind": "linear"}
    burn_run["meta"]["clip_grad"] = {"norm": 0.1}
    burn_run["lrs"] = [lr * 0.5 for lr in burn_run["lrs"]]
    chosen = rp.variants(torch_run, burn_run)
    last, estimator = chosen["burn_clipping"][0], chosen["burn_running_stats"][0]
    assert estimator.lrs == last.lrs == burn_run["lrs"]
    assert estimator.clip is not None and estimator.running_stats is not None


# --- cnn1d: unchanged -----------------------------------------------------------------------

# replay.py's two CSVs on the pair below, as the replay.py of commit dbf0dff computed them
# (before the registry and the running statistics): a regression guard that the cnn1d
# tables do not move, byte for byte on the CPU path the golden file was written on, within
# rounding on any other. A fake Burn run (PyTorch's, relabelled) keeps the Burn binary out;
# nesterov momentum, a schedule and clipping give every cnn1d variant.
# PARITY_WRITE_GOLDEN=1 writes the file anew from this run.
GOLDEN = Path(__file__).parent / "golden/cnn1d_replay_tables.json"
GOLDEN_SGD = dict(SGD, momentum=0.9, weight_decay=0.001, nesterov=True, clip_grad={"norm": 0.1},
                  schedule={"kind": "linear", "final_lr": 0.002, "num_steps": 6})  # fmt: skip


def within_rounding(new: str, gold: str) -> bool:
    """The same table up to f64 rounding of O(1) values: the verdicts' floor under the floor
    (verdict.ABSOLUTE_FLOOR, 64 ulps) times the golden files' f64 margin."""
    a, b = pd.read_csv(io.StringIO(new)), pd.read_csv(io.StringIO(gold))
    if list(a.columns) != list(b.columns) or list(a["step"]) != list(b["step"]):
        return False
    numbers = [c for c in a.columns if c.startswith(("dloss", "dparam"))]
    limit = golden_numbers.F64_MARGIN * ABSOLUTE_FLOOR
    return bool((np.abs(a[numbers] - b[numbers]) <= limit).all().all())


def test_the_cnn1d_tables_are_the_old_ones(tmp_path):
    blob = make_data.dataset_bytes("cnn1d")
    write_atomic(tmp_path / "data.safetensors", blob)
    config = {"steps": 8, "batch_size": 16, "threads": 1, "experiments": {"sgd": GOLDEN_SGD}}
    block = train_torch.train(experiment_spec(config, "sgd"), decode_dataset(blob), "f64")
    block["meta"]["input_sha256"] = hashlib.sha256(blob).hexdigest()
    burn = copy.deepcopy(block)
    burn["meta"]["framework"] = "burn"
    write_run(tmp_path / "t.json", {"sgd": block})
    write_run(tmp_path / "b.json", {"sgd": burn})
    out = {k: tmp_path / f"{k}.csv" for k in ("replay", "counterfactual")}
    rp.main(["--experiment", "sgd", "--data", str(tmp_path / "data.safetensors"),
             "--torch-f64", str(tmp_path / "t.json"), "--burn-f64", str(tmp_path / "b.json"),
             "--replay-csv", str(out["replay"]), "--replay-md", str(tmp_path / "r.md"),
             "--counterfactual-csv", str(out["counterfactual"]),
             "--counterfactual-md", str(tmp_path / "c.md")])  # fmt: skip
    files = {k: p.read_text() for k, p in out.items()}
    path = describe(block["meta"])
    golden = json.loads(GOLDEN.read_text())
    if os.environ.get("PARITY_WRITE_GOLDEN") == "1":
        golden = {
            "_about": "replay.py's two CSVs for the cnn1d pair of test_replay_models.py, on the"
            " CPU path in cpu_path (a machine written_on); byte for byte there, within rounding"
            " elsewhere. replay.py's code for them is unchanged since commit dbf0dff.",
            "written_on": machine.label(block["meta"]),
            "cpu_path": path,
            "files": files,
        }
        GOLDEN.write_text(json.dumps(golden, indent=1) + "\n")
    assert set(files) == set(golden["files"])
    for name, text in files.items():
        assert within_rounding(text, golden["files"][name]), name
    if path == golden["cpu_path"]:
        assert files == golden["files"]
