"""Your own port through the real pipeline: the example (examples/byo), and a second model
written outside the repository — its own PyTorch module, its own Burn crate, its own weights
and data in a temporary folder — run without editing anything in the project. Real PyTorch,
real cargo builds of the user's crate, real Snakemake."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from safetensors import safe_open

from conftest import ROOT, SGD
from pipeline_helpers import copy_project, snakemake
from torch_burn_parity.judgement.record_parts import document_problems

pytestmark = pytest.mark.pipeline


@pytest.fixture(scope="module")
def example(tmp_path_factory, burn_binary) -> Path:
    """A copy of the project with the example, run as its README says."""
    config = yaml.safe_load((ROOT / "examples/byo/config.yaml").read_text())
    workdir = copy_project(tmp_path_factory.mktemp("byo"), config, "byo.yaml")
    shutil.copytree(ROOT / "examples", workdir / "examples",
                    ignore=shutil.ignore_patterns("target", "__pycache__"))  # fmt: skip
    snakemake(workdir, "--cores", "2", "--configfile", "examples/byo/config.yaml")
    return workdir


def verdicts(workdir: Path) -> dict[str, dict]:
    """The verdict records by experiment, the document valid (its schema, each record's
    parts, causes and verdict agreeing)."""
    document = json.loads((workdir / "results/verdicts.json").read_text())
    assert document_problems(document) == []
    return {r["experiment"]: r for r in document["experiments"]}


def test_the_example_port_gets_a_verdict_and_a_layer_record(example):
    found = verdicts(example)
    assert set(found) == {"tiny_mlp_sgd", "tiny_mlp_adam"}
    assert {name: (r["model"], r["verdict"]) for name, r in found.items()} == {
        "tiny_mlp_sgd": ("tiny_mlp", "equivalent up to rounding"),
        # Burn's f32 Adam factors and f32 betas/eps: a gap ~1e6× the floor on any CPU path
        "tiny_mlp_adam": ("tiny_mlp", "algorithmic difference, explained"),
    }
    layers = pd.read_csv(example / "results/tables/layers_tiny_mlp_sgd.csv")
    forward = layers[(layers["step"] == 1) & (layers["phase"] == "forward")]
    assert list(forward["layer"]) == ["fc1", "act", "norm", "fc2"]
    assert (example / "results/bin/ports/tiny_mlp").is_file()
    report = (example / "results/report.md").read_text()
    assert "tiny_mlp_sgd" in report and "tiny_mlp_adam" in report


@pytest.fixture(scope="module")
def resnet(tmp_path_factory, burn_binary) -> Path:
    """A copy of the project with examples/ports, its files written and run as its config
    says: torchvision's ResNet-18 and its Burn port."""
    config = yaml.safe_load((ROOT / "examples/ports/config.yaml").read_text())
    workdir = copy_project(tmp_path_factory.mktemp("ports"), config, "ports.yaml")
    skipped = shutil.ignore_patterns("target", "__pycache__", "*.safetensors")  # written below
    shutil.copytree(ROOT / "examples", workdir / "examples", ignore=skipped)
    import subprocess
    import sys

    make = [sys.executable, "examples/ports/resnet18/make_files.py"]
    subprocess.run(make, cwd=workdir, check=True, capture_output=True)
    snakemake(workdir, "--cores", "2", "--configfile", "examples/ports/config.yaml")
    return workdir


def test_torchvisions_resnet18_is_judged_part_by_part_and_layer_by_layer(resnet):
    """Training the same up to rounding with SGD (Adam's f32 factors with Adam); the running
    statistics of its 20 BatchNorms explained by the variance estimator; no block introduces
    a difference when run on PyTorch's input."""
    found = verdicts(resnet)
    parts = {name: [(p["part"], p["verdict"]) for p in r["parts"]] for name, r in found.items()}
    explained, equivalent = "algorithmic difference, explained", "equivalent up to rounding"
    assert parts == {
        "resnet18_sgd": [("training", equivalent), ("evaluation state", explained)],
        "resnet18_adam": [("training", explained), ("evaluation state", explained)],
    }
    adam = {c["cause"]: c["part"] for c in found["resnet18_adam"]["causes"]}
    assert adam["Burn's f32 evaluation of its per-step Adam factors"] == "training"
    estimator = "the running-variance estimator (Burn biased, PyTorch unbiased)"
    assert adam[estimator] == "evaluation state"
    layers = pd.read_csv(resnet / "results/tables/layers_resnet18_sgd.csv")
    blocks = layers[layers["phase"].isin(["forward", "backward"])
                    & layers["layer"].str.fullmatch(r"conv1|layer\d\.\d|fc")]  # fmt: skip
    assert len(blocks) == 2 * 10 and blocks["local_f64"].notna().all()
    assert (blocks["local_f64"] <= blocks["floor"]).all()
    diff = pd.read_csv(resnet / "results/tables/config_diff_resnet18_sgd.csv")
    rows = dict(zip(diff["hyperparameter"], diff["status"], strict=True))
    assert rows["layer4.0.downsample.0.stride"] == "same"  # Burn's `downsample.conv`
    assert sum(k.endswith(".running_var_estimator") for k in rows) == 20


# --- a second model, outside the repository ---------------------------------------------

TORCH_MODULE = '''
from torch import nn


class GeluNet(nn.Module):
    """12 features -> embed (Linear 12->16) -> GELU -> head (Linear 16->4, no bias)."""

    def __init__(self, features=12, hidden=16, classes=4):
        super().__init__()
        self.embed = nn.Linear(features, hidden)
        self.gelu = nn.GELU()
        self.head = nn.Linear(hidden, classes, bias=False)

    def forward(self, x):
        return self.head(self.gelu(self.embed(x)))
'''

CARGO_TOML = """
[package]
name = "gelu-net-port"
version = "0.1.0"
edition = "2024"
publish = false

[[bin]]
name = "gelu-net-parity"
path = "src/main.rs"

[dependencies]
parity-train = {{ path = "{rust}" }}
burn = {{ version = "=0.22.1", default-features = false, features = [
    "std", "flex", "ndarray", "autodiff", "optim", "safetensors",
] }}

[workspace]

[profile.release]
debug = false
"""

# The Burn field `hidden` is PyTorch's `embed`: the key remapping says so.
MAIN_RS = """
use burn::nn::{{Gelu, Linear, LinearConfig}};
use burn::prelude::*;
use parity_train::port::{{Layers, Port}};
use std::process::ExitCode;

#[derive(Module, Debug)]
pub struct GeluNet {{
    hidden: Linear,
    gelu: Gelu,
    head: Linear,
}}

impl Port for GeluNet {{
    type Input = Tensor<2>;

    fn init(device: &Device) -> Self {{
        GeluNet {{
            hidden: LinearConfig::new(12, 16).init(device),
            gelu: Gelu::new(),
            head: LinearConfig::new(16, 4).with_bias({head_bias}).init(device),
        }}
    }}

    fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {{
        let x = layers.layer("embed", x, |x| self.hidden.forward(x));
        let x = layers.layer("gelu", x, |x| self.gelu.forward(x));
        layers.layer("head", x, |x| self.head.forward(x))
    }}

    fn pytorch_keys() -> Vec<(String, String)> {{
        vec![("^embed\\\\.".into(), "hidden.".into())]
    }}
}}

fn main() -> ExitCode {{
    parity_train::port::main::<GeluNet>()
}}
"""


def write_user_project(
    folder: Path, rust: Path, head_bias: str = "false", extra: str = "", regression: bool = False
) -> Path:
    """A user's own folder: the PyTorch module, its Burn crate (its lock file the example's,
    renamed), weights and data; returns its config. ``regression``: also the same module
    as a second port, `gelu_reg`, on float targets with the mean squared error."""
    import sys

    import torch
    from safetensors.numpy import save_file as save_arrays
    from safetensors.torch import save_file

    (folder / "torch").mkdir(parents=True, exist_ok=True)
    (folder / "torch/gelu_net.py").write_text(TORCH_MODULE)
    crate = folder / "burn"
    (crate / "src").mkdir(parents=True, exist_ok=True)
    (crate / "Cargo.toml").write_text(CARGO_TOML.format(rust=rust))
    (crate / "src/main.rs").write_text(MAIN_RS.format(head_bias=head_bias) + extra)
    lock = (ROOT / "examples/byo/burn/Cargo.lock").read_text()
    (crate / "Cargo.lock").write_text(
        lock.replace('name = "byo-tiny-mlp"', 'name = "gelu-net-port"')
    )
    sys.path.insert(0, str(folder / "torch"))
    try:
        from gelu_net import GeluNet
    finally:
        sys.path.remove(str(folder / "torch"))
    torch.manual_seed(1)
    save_file(GeluNet().state_dict(), folder / "weights.safetensors")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 12)).astype(np.float32)
    y = np.argmax(x[:, :4] + 0.5 * x[:, 4:8], axis=1).astype(np.int64)
    save_arrays({"x": x, "y": y}, folder / "data.safetensors")
    port = {
        "name": "gelu_net",
        "torch": {"module": "gelu_net:GeluNet", "path": str(folder / "torch")},
        "burn": {"crate": str(crate), "bin": "gelu-net-parity"},
        "init": str(folder / "weights.safetensors"),
        "data": str(folder / "data.safetensors"),
        "layers": ["embed", "gelu", "head"],
    }
    experiments = {"gelu_net_sgd": {**SGD, "lr": 0.1, "model": port}}
    if regression:
        targets = (x[:, :4] + 0.5 * x[:, 4:8]).astype(np.float32)  # y F32 [64, 4]
        save_arrays({"x": x, "y": targets}, folder / "targets.safetensors")
        regression_port = {**port, "name": "gelu_reg", "data": str(folder / "targets.safetensors")}
        experiments["gelu_reg_mse"] = {**SGD, "lr": 0.05, "loss": "mse", "model": regression_port}
    config = {"steps": 20, "batch_size": 16, "report_steps": [1, 20],
              "experiments": experiments}  # fmt: skip
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def project(tmp_path_factory, burn_binary) -> Path:
    """A copy of the project without the example: nothing of the user's model in it."""
    workdir = copy_project(tmp_path_factory.mktemp("project"), {"experiments": {}}, "unused.yaml")
    assert not (workdir / "examples").exists()
    return workdir


def test_a_model_written_outside_the_repository_runs_through_the_pipeline(project, tmp_path):
    config = write_user_project(tmp_path / "mine", project / "rust", regression=True)
    snakemake(project, "--cores", "2", "--configfile", str(config))
    found = verdicts(project)
    assert {name: r["verdict"] for name, r in found.items()} == {
        "gelu_net_sgd": "equivalent up to rounding",
        "gelu_reg_mse": "equivalent up to rounding",
    }
    # The regression: the mean squared error on both sides, no classes to predict.
    effect = found["gelu_reg_mse"]["effect"]
    assert (effect["torch"]["accuracy"], effect["burn"]["accuracy"]) == (None, None)
    runs = {fw: json.loads((project / f"results/runs/gelu_reg_mse/{fw}-f64.json").read_text())
            for fw in ("torch", "burn")}  # fmt: skip
    for run in runs.values():
        (block,) = run.values()
        assert block["meta"]["loss"] == {"name": "mse", "label_smoothing": 0.0}
        assert block["final"]["predictions"] is None
    diff = pd.read_csv(project / "results/tables/config_diff_gelu_reg_mse.csv")
    (loss,) = diff[diff["hyperparameter"] == "loss"].to_dict("records")
    assert loss["torch"].startswith("mse_loss") and loss["burn"].startswith("MseLoss")
    layers = pd.read_csv(project / "results/tables/layers_gelu_net_sgd.csv")
    assert list(layers[(layers["step"] == 1) & (layers["phase"] == "forward")]["layer"]) == [
        "embed", "gelu", "head",
    ]  # fmt: skip


def test_a_crate_that_does_not_build_stops_with_its_first_compiler_error(project, tmp_path):
    broken = '\nfn not_rust() -> u32 { "text" }\n'
    config = write_user_project(tmp_path / "broken", project / "rust", extra=broken)
    proc = snakemake(project, "--cores", "2", "--configfile", str(config), check=False)
    assert proc.returncode != 0
    assert f"build_port: {tmp_path / 'broken/burn'} does not build; its first error:" in proc.stderr
    assert "error[E0308]: mismatched types" in proc.stderr
    assert not (project / "results/bin/ports/gelu_net").exists()


def test_a_burn_parameter_pytorch_lacks_is_named_before_training(project, tmp_path):
    config = write_user_project(tmp_path / "extra", project / "rust", head_bias="true")
    before = {p: p.stat().st_mtime_ns for p in (project / "results/runs").glob("gelu_net_sgd/*")}
    proc = snakemake(project, "--cores", "2", "--configfile", str(config), check=False)
    assert proc.returncode != 0
    # Refused once, by the port's check, before any training of either side.
    refusal = "check_port: port gelu_net, Burn side: port gelu_net: Burn parameter head.bias [4]"
    assert proc.stderr.count(refusal + " has no PyTorch parameter of port.params mapped") == 1
    assert "PyTorch side" not in proc.stderr
    after = {p: p.stat().st_mtime_ns for p in (project / "results/runs").glob("gelu_net_sgd/*")}
    assert after == before


def test_two_crates_of_one_package_name_each_train_their_own_binary(project, tmp_path):
    """Both crates are `gelu-net-port`, in two folders: cargo tells such builds apart only by
    name, version and path within their workspace, so the second crate's build (its sources
    older than the first's binary) would be "fresh" and train the first crate's binary."""
    good = write_user_project(tmp_path / "good", project / "rust")
    extra = write_user_project(tmp_path / "extra", project / "rust", head_bias="true")
    proc = snakemake(project, "--cores", "2", "--configfile", str(extra), check=False)
    assert proc.returncode != 0 and "head.bias" in proc.stderr
    snakemake(project, "--cores", "2", "--configfile", str(good))
    assert verdicts(project)["gelu_net_sgd"]["verdict"] == "equivalent up to rounding"


# --- a model whose layers sit at depth, named by globs -----------------------------------

NESTED_MODULE = '''
from torch import nn


class NestedNet(nn.Module):
    """Two blocks (Linear -> GELU) in a ModuleList, then a head: its parameters are named
    blocks.0.0.weight, …, head.weight."""

    def __init__(self, features=12, hidden=16, classes=4):
        super().__init__()
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.Linear(n, hidden), nn.GELU()) for n in (features, hidden)]
        )
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)
'''

# Burn's blocks are a Vec of structs: blocks.0.fc.weight for PyTorch's blocks.0.0.weight.
NESTED_MAIN_RS = """
use burn::nn::{Gelu, Linear, LinearConfig};
use burn::prelude::*;
use parity_train::port::{Layers, Port};
use std::process::ExitCode;

#[derive(Module, Debug)]
pub struct Block {
    fc: Linear,
    act: Gelu,
}

#[derive(Module, Debug)]
pub struct NestedNet {
    blocks: Vec<Block>,
    head: Linear,
}

impl Port for NestedNet {
    type Input = Tensor<2>;

    fn init(device: &Device) -> Self {
        let block = |n| Block { fc: LinearConfig::new(n, 16).init(device), act: Gelu::new() };
        let head = LinearConfig::new(16, 4).init(device);
        NestedNet { blocks: vec![block(12), block(16)], head }
    }

    fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
        let mut x = x;
        for (i, block) in self.blocks.iter().enumerate() {
            x = layers.layer(&format!("blocks.{i}"), x, |x| block.act.forward(block.fc.forward(x)));
        }
        layers.layer("head", x, |x| self.head.forward(x))
    }

    fn pytorch_keys() -> Vec<(String, String)> {
        vec![(r"^blocks\\.(\\d+)\\.0\\.".into(), "blocks.$1.fc.".into())]
    }
}

fn main() -> ExitCode {
    parity_train::port::main::<NestedNet>()
}
"""


def write_nested_project(folder: Path, rust: Path, layers: list[str]) -> Path:
    """The nested model as a user's project (module, crate, weights, data); its config."""
    config = yaml.safe_load(write_user_project(folder, rust).read_text())
    (folder / "torch/nested_net.py").write_text(NESTED_MODULE)
    (folder / "burn/src/main.rs").write_text(NESTED_MAIN_RS)
    import sys

    from safetensors.torch import save_file

    sys.path.insert(0, str(folder / "torch"))
    sys.modules.pop("nested_net", None)  # this folder's, not an earlier one's
    try:
        from nested_net import NestedNet
    finally:
        sys.path.remove(str(folder / "torch"))
    save_file(NestedNet().state_dict(), folder / "weights.safetensors")
    model = config["experiments"]["gelu_net_sgd"]["model"]
    model.update(name="nested_net", layers=layers)
    model["torch"]["module"] = "nested_net:NestedNet"
    config["experiments"] = {"nested_net_sgd": config["experiments"]["gelu_net_sgd"]}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_layers_at_depth_named_by_globs_are_recorded_by_both_sides(project, tmp_path):
    config = write_nested_project(tmp_path / "nested", project / "rust", ["blocks.*", "head"])
    proc = snakemake(project, "--cores", "2", "--configfile", str(config))
    assert "record the layers blocks.0, blocks.1, head" in (
        project / "results/logs/check_port/nested_net.log").read_text()  # fmt: skip
    assert verdicts(project)["nested_net_sgd"]["verdict"] == "equivalent up to rounding"
    layers = pd.read_csv(project / "results/tables/layers_nested_net_sgd.csv")
    forward = layers[(layers["step"] == 1) & (layers["phase"] == "forward")]
    assert list(forward["layer"]) == ["blocks.0", "blocks.1", "head"], proc.stderr[-2000:]
    # Each Burn layer also ran on PyTorch's input (the local mode): none introduces anything.
    measured = layers[layers["phase"].isin(["forward", "backward"]) & layers["layer"].isin(
        ["blocks.0", "blocks.1", "head"])]  # fmt: skip
    assert measured["local_f64"].notna().all() and not measured["introduced_first"].any()
    assert (measured["local_f64"] <= measured["floor"]).all()


def test_the_local_mode_names_the_port_layer_a_fault_is_injected_into(project, tmp_path):
    """A delta added to blocks.1's output in Burn at step 1: every later quantity carries
    it, but run on PyTorch's inputs only blocks.1 differs — the layer that introduces it."""
    config = write_nested_project(tmp_path / "fault", project / "rust", ["blocks.*", "head"])
    snakemake(project, "--cores", "2", "--configfile", str(config),
              env={"PARITY_FAULT": "1:layer:blocks.1:3:1e-6"})  # fmt: skip
    record = verdicts(project)["nested_net_sgd"]
    assert record["verdict"] == "algorithmic difference, unexplained"
    assert record["entry"] == {"layer": "blocks.1", "phase": "forward", "step": 1,
                               "introduced": True}  # fmt: skip
    layers = pd.read_csv(project / "results/tables/layers_nested_net_sgd.csv")
    first = layers[(layers["step"] == 1) & (layers["phase"] == "forward")]
    introduced = dict(zip(first["layer"], first["local_f64"] > first["floor"], strict=True))
    assert introduced == {"blocks.0": False, "blocks.1": True, "head": False}


def test_a_glob_that_matches_no_submodule_is_refused_before_any_training(project, tmp_path):
    config = write_nested_project(tmp_path / "typo", project / "rust", ["block.*", "head"])
    runs = project / "results/runs/nested_net_sgd"
    before = {p: p.stat().st_mtime_ns for p in runs.glob("*")}
    proc = snakemake(project, "--cores", "2", "--configfile", str(config), check=False)
    assert proc.returncode != 0
    assert proc.stderr.count(
        "check_port: port nested_net, PyTorch side: layers: the glob 'block.*' matches no"
        " submodule of nested_net:NestedNet at any depth (nearest: blocks.1, blocks.0, blocks)"
    ) == 1  # fmt: skip
    assert {p: p.stat().st_mtime_ns for p in runs.glob("*")} == before  # no training ran


# --- a model with buffers: BatchNorm's running statistics ---------------------------------

BN_MODULE = '''
from torch import nn


class BnNet(nn.Module):
    """12 features -> fc (Linear 12->16) -> bn (BatchNorm1d 16) -> GELU -> head (16->4)."""

    def __init__(self, features=12, hidden=16, classes=4):
        super().__init__()
        self.fc = nn.Linear(features, hidden)
        self.bn = nn.BatchNorm1d(hidden)
        self.act = nn.GELU()
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.act(self.bn(self.fc(x))))
'''

BN_MAIN_RS = """
use burn::nn::{BatchNorm, BatchNormConfig, Gelu, Linear, LinearConfig};
use burn::prelude::*;
use parity_train::port::{Layers, Port};
use std::process::ExitCode;

#[derive(Module, Debug)]
pub struct BnNet {
    fc: Linear,
    bn: BatchNorm,
    act: Gelu,
    head: Linear,
}

impl Port for BnNet {
    type Input = Tensor<2>;

    fn init(device: &Device) -> Self {
        BnNet {
            fc: LinearConfig::new(12, 16).init(device),
            bn: BatchNormConfig::new(16).init(device),
            act: Gelu::new(),
            head: LinearConfig::new(16, 4).init(device),
        }
    }

    fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
        let x = layers.layer("fc", x, |x| self.fc.forward(x));
        let x = layers.layer("bn", x, |x| self.bn.forward(x));
        let x = layers.layer("act", x, |x| self.act.forward(x));
        layers.layer("head", x, |x| self.head.forward(x))
    }
}

fn main() -> ExitCode {
    parity_train::port::main::<BnNet>()
}
"""


def write_bn_project(folder: Path, rust: Path, drop: str | None = None) -> Path:
    """The BatchNorm model as a user's project; its weights file the module's state_dict()
    (running statistics and the I64 batch counter included), less ``drop``."""
    config = yaml.safe_load(write_user_project(folder, rust).read_text())
    (folder / "torch/bn_net.py").write_text(BN_MODULE)
    (folder / "burn/src/main.rs").write_text(BN_MAIN_RS)
    import sys

    import torch
    from safetensors.torch import save_file

    sys.path.insert(0, str(folder / "torch"))
    sys.modules.pop("bn_net", None)
    try:
        from bn_net import BnNet
    finally:
        sys.path.remove(str(folder / "torch"))
    torch.manual_seed(2)
    state = BnNet().state_dict()
    state.pop(drop, None)
    save_file(state, folder / "weights.safetensors")
    model = config["experiments"]["gelu_net_sgd"]["model"]
    model.update(name="bn_net", layers=["fc", "bn", "act", "head"])
    model["torch"]["module"] = "bn_net:BnNet"
    config["experiments"] = {"bn_net_sgd": config["experiments"]["gelu_net_sgd"]}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_a_batchnorm_port_is_judged_as_cnn_bn_is(project, tmp_path):
    """Training the same up to rounding; the running variance explained by its estimator
    (Burn's biased batch variance against PyTorch's unbiased one), as for cnn_bn."""
    config = write_bn_project(tmp_path / "bn", project / "rust")
    snakemake(project, "--cores", "2", "--configfile", str(config))
    record = verdicts(project)["bn_net_sgd"]
    assert record["verdict"] == "algorithmic difference, explained"
    assert record["scope"] == "evaluation state"
    assert record["cause"].startswith(
        "the running-variance estimator (Burn biased, PyTorch unbiased) (100.0% of the gap"
    )
    runs = {fw: json.loads((project / f"results/runs/bn_net_sgd/{fw}-f64.json").read_text())
            for fw in ("torch", "burn")}  # fmt: skip
    for fw, run in runs.items():
        (block,) = run.values()
        tensors = project / "results/runs/bn_net_sgd" / block["tensors"]["file"]
        with safe_open(tensors, "numpy") as f:
            buffers = sorted(k for k in f.keys() if k.startswith("buffers/"))  # noqa: SIM118
        assert buffers == ["buffers/bn.running_mean", "buffers/bn.running_var"], fw
        held = block["meta"]["layer_hyperparameters"]
        assert held["bn.momentum"] == 0.1 and held["bn.eps"] == 1e-5, fw
    diff = pd.read_csv(project / "results/tables/config_diff_bn_net_sgd.csv")
    (row,) = diff[diff["hyperparameter"] == "bn.running_var_estimator"].to_dict("records")
    assert (row["torch"], row["burn"]) == ("unbiased", "biased")


def test_a_running_statistic_missing_from_the_weights_file_is_refused_once(project, tmp_path):
    config = write_bn_project(tmp_path / "nobuf", project / "rust", drop="bn.running_var")
    proc = snakemake(project, "--cores", "2", "--configfile", str(config), check=False)
    assert proc.returncode != 0
    refusal = (
        f"check_port: port bn_net, PyTorch side: init: {tmp_path / 'nobuf/weights.safetensors'}"
        " has no 'bn.running_var', a buffer of bn_net:BnNet (save the module's state_dict(),"
        " which holds its running statistics too)"
    )
    assert proc.stderr.count(refusal) == 1, proc.stderr[-3000:]


# --- a layer's settings: the norm's epsilon and GELU's form kept at Burn's defaults -------

SETTINGS_MODULE = '''
from torch import nn


class NormNet(nn.Module):
    """fc (Linear 12->16) -> norm (LayerNorm, eps 1e-3) -> act (GELU, tanh) -> head."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 16)
        self.norm = nn.LayerNorm(16, eps=1e-3)
        self.act = nn.GELU(approximate="tanh")
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.act(self.norm(self.fc(x))))
'''

# Burn's defaults kept, as a porter who did not read the original's settings would.
SETTINGS_MAIN_RS = """
use burn::nn::{Gelu, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::prelude::*;
use parity_train::port::{Layers, Port};
use std::process::ExitCode;

#[derive(Module, Debug)]
pub struct NormNet {
    fc: Linear,
    norm: LayerNorm,
    act: Gelu,
    head: Linear,
}

impl Port for NormNet {
    type Input = Tensor<2>;

    fn init(device: &Device) -> Self {
        NormNet {
            fc: LinearConfig::new(12, 16).init(device),
            norm: LayerNormConfig::new(16).init(device),
            act: Gelu::new(),
            head: LinearConfig::new(16, 4).init(device),
        }
    }

    fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
        let x = layers.layer("fc", x, |x| self.fc.forward(x));
        let x = layers.layer("norm", x, |x| self.norm.forward(x));
        let x = layers.layer("act", x, |x| self.act.forward(x));
        layers.layer("head", x, |x| self.head.forward(x))
    }
}

fn main() -> ExitCode {
    parity_train::port::main::<NormNet>()
}
"""


def test_a_layer_setting_kept_at_burns_default_is_named_and_measured(project, tmp_path):
    """The config diff shows each layer's settings as both modules hold them; the two that
    differ are causes, each with the share measured by giving PyTorch's model Burn's value."""
    folder = tmp_path / "settings"
    config = yaml.safe_load(write_user_project(folder, project / "rust").read_text())
    (folder / "torch/norm_net.py").write_text(SETTINGS_MODULE)
    (folder / "burn/src/main.rs").write_text(SETTINGS_MAIN_RS)
    import sys

    from safetensors.torch import save_file

    sys.path.insert(0, str(folder / "torch"))
    sys.modules.pop("norm_net", None)
    try:
        from norm_net import NormNet
    finally:
        sys.path.remove(str(folder / "torch"))
    save_file(NormNet().state_dict(), folder / "weights.safetensors")
    experiment = config["experiments"].pop("gelu_net_sgd")
    experiment["model"].update(name="norm_net", layers=["fc", "norm", "act", "head"])
    experiment["model"]["torch"]["module"] = "norm_net:NormNet"
    config["experiments"] = {"norm_net_sgd": experiment}
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    snakemake(project, "--cores", "2", "--configfile", str(folder / "config.yaml"))

    diff = pd.read_csv(project / "results/tables/config_diff_norm_net_sgd.csv")
    rows = {r["hyperparameter"]: (r["torch"], r["burn"], r["status"])
            for r in diff.to_dict("records")}  # fmt: skip
    assert rows["norm.eps"] == ("0.001", "1e-05", "differs")
    assert rows["act.approximate"] == ("tanh", "none", "differs")
    assert rows["norm.bias"] == ("true", "true", "same")
    assert rows["fc.bias"] == ("true", "true", "same")
    record = verdicts(project)["norm_net_sgd"]
    assert record["verdict"] == "algorithmic difference, explained"
    causes = {c["cause"]: c["share"] for c in record["causes"]}
    eps = "the layer setting norm.eps (torch 0.001, burn 1e-05)"
    gelu = "the layer setting act.approximate (torch tanh, burn none)"
    # Added one at a time (eps, then GELU's form, PyTorch's order), as the optimizer's
    # choices are: each is given how much further it moves the run from PyTorch's.
    assert causes[eps] + causes.get(gelu, 0.0) > 0.99, causes
    counterfactual = pd.read_csv(project / "results/tables/counterfactual_norm_net_sgd.csv")
    assert {"dparam_burn_layer[norm.eps]", "dparam_burn_layer[act.approximate]"} <= set(
        counterfactual.columns
    )
    report = (project / "results/report.md").read_text()
    assert (
        "build Burn's `norm` with PyTorch's epsilon: its config's `.with_epsilon(0.001)`" in report
    )
    assert "with Burn's act.approximate as well" in report


# --- packed and re-laid-out parameters: a fused qkv, a Conv1D-style weight ----------------

PACKED_MODULE = '''
import torch
from torch import nn


class PackedNet(nn.Module):
    """qkv (one Linear 12 -> 3·16, its output cut in three and summed) -> GELU -> head, a
    weight held [in, out] as GPT-2's Conv1D holds it (x @ W + b)."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(12, 48)
        self.act = nn.GELU()
        self.head = nn.Module()
        self.head.weight = nn.Parameter(torch.randn(16, 4) * 0.2)
        self.head.bias = nn.Parameter(torch.zeros(4))

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        h = self.act(q + k + v)
        return h @ self.head.weight + self.head.bias
'''

# Three Linears for PyTorch's one; a Linear holding the [in, out] weight as it is.
PACKED_MAIN_RS = """
use burn::nn::{Gelu, Linear, LinearConfig};
use burn::prelude::*;
use parity_train::port::{Layers, Mapping, Port};
use std::process::ExitCode;

#[derive(Module, Debug)]
pub struct PackedNet {
    q: Linear,
    k: Linear,
    v: Linear,
    act: Gelu,
    head: Linear,
}

impl Port for PackedNet {
    type Input = Tensor<2>;

    fn init(device: &Device) -> Self {
        let linear = || LinearConfig::new(12, 16).init(device);
        PackedNet { q: linear(), k: linear(), v: linear(), act: Gelu::new(),
                    head: LinearConfig::new(16, 4).init(device) }
    }

    fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
        let h = self.q.forward(x.clone()) + self.k.forward(x.clone()) + self.v.forward(x);
        let h = layers.layer("act", h, |h| self.act.forward(h));
        h.matmul(self.head.weight.val()) + self.head.bias.as_ref().unwrap().val().unsqueeze()
    }

    fn mappings() -> Vec<(String, Mapping)> {
        let parts = |f: &str| ["q", "k", "v"].map(|m| format!("{m}.{f}")).to_vec();
        vec![
            ("qkv.weight".into(), Mapping::SplitRows { parts: parts("weight"), transpose: true }),
            ("qkv.bias".into(), Mapping::SplitRows { parts: parts("bias"), transpose: false }),
            ("head.weight".into(), Mapping::AsIs("head.weight".into())),
        ]
    }
}

fn main() -> ExitCode {
    parity_train::port::main::<PackedNet>()
}
"""


def test_a_packed_and_an_untransposed_parameter_train_the_same(project, tmp_path):
    folder = tmp_path / "packed"
    config = yaml.safe_load(write_user_project(folder, project / "rust").read_text())
    (folder / "torch/packed_net.py").write_text(PACKED_MODULE)
    (folder / "burn/src/main.rs").write_text(PACKED_MAIN_RS)
    import sys

    import torch
    from safetensors.torch import save_file

    sys.path.insert(0, str(folder / "torch"))
    sys.modules.pop("packed_net", None)
    try:
        from packed_net import PackedNet
    finally:
        sys.path.remove(str(folder / "torch"))
    torch.manual_seed(3)
    save_file(PackedNet().state_dict(), folder / "weights.safetensors")
    experiment = config["experiments"].pop("gelu_net_sgd")
    experiment["model"].update(name="packed_net", layers=["act"])
    experiment["model"]["torch"]["module"] = "packed_net:PackedNet"
    config["experiments"] = {"packed_net_sgd": experiment}
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    snakemake(project, "--cores", "2", "--configfile", str(folder / "config.yaml"))
    record = verdicts(project)["packed_net_sgd"]
    assert record["verdict"] == "equivalent up to rounding", record["cause"]
    (block,) = json.loads(
        (project / "results/runs/packed_net_sgd/burn-f64.json").read_text()
    ).values()
    assert block["meta"]["burn_shapes"]["qkv.weight"] == [[12, 16]] * 3
    assert block["meta"]["burn_shapes"]["head.weight"] == [[16, 4]]
    compare = (project / "results/compare/packed_net_sgd-f64.txt").read_text()
    assert "params.qkv.weight" in compare and "params.head.weight" in compare
