"""The architectures people port, as ports through the real pipeline: layers at depth named by
globs (and the local mode naming an injected fault), BatchNorm's buffers, each layer's
settings side by side, packed and re-laid-out parameters (torchvision's ResNet-18 from
examples/ports: test_port_resnet18.py). Real PyTorch, real cargo builds of each port's
crate, real Snakemake."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from safetensors import safe_open

from pipeline_helpers import copy_project, snakemake
from port_projects import verdicts, write_variant

pytestmark = pytest.mark.pipeline


@pytest.fixture(scope="module")
def project(tmp_path_factory, burn_binary) -> Path:
    """A copy of the project without the examples: nothing of the user's model in it."""
    return copy_project(tmp_path_factory.mktemp("project"), {"experiments": {}}, "unused.yaml")


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


def test_layers_at_depth_named_by_globs_are_recorded_by_both_sides(project, tmp_path):
    config = write_nested_project(tmp_path / "nested", ["blocks.*", "head"])
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
    config = write_nested_project(tmp_path / "fault", ["blocks.*", "head"])
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
    config = write_nested_project(tmp_path / "typo", ["block.*", "head"])
    runs = project / "results/runs/nested_net_sgd"
    before = {p: p.stat().st_mtime_ns for p in runs.glob("*")}
    proc = snakemake(project, "--cores", "2", "--configfile", str(config), check=False)
    assert proc.returncode != 0
    assert proc.stderr.count(
        "check_port: port nested_net, PyTorch side: layers: the glob 'block.*' matches no"
        " submodule of nested_net:NestedNet at any depth (nearest: blocks.1, blocks.0, blocks)"
    ) == 1  # fmt: skip
    assert {p: p.stat().st_mtime_ns for p in runs.glob("*")} == before  # no training ran


def write_nested_project(folder: Path, layers: list[str]) -> Path:
    """The nested model as a user's project (module, crate, weights, data); its config."""
    return write_variant(folder, NESTED_MODULE, NESTED_MAIN_RS, "NestedNet", layers)


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


def write_bn_project(folder: Path, drop: str | None = None) -> Path:
    """The BatchNorm model as a user's project; its weights file the module's state_dict()
    (running statistics and the I64 batch counter included), less ``drop``."""
    layers = ["fc", "bn", "act", "head"]
    return write_variant(folder, BN_MODULE, BN_MAIN_RS, "BnNet", layers, 2, drop)


def test_a_batchnorm_port_is_judged_as_cnn_bn_is(project, tmp_path):
    """Training the same up to rounding; the running variance explained by its estimator
    (Burn's biased batch variance against PyTorch's unbiased one), as for cnn_bn."""
    config = write_bn_project(tmp_path / "bn")
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
    config = write_bn_project(tmp_path / "nobuf", drop="bn.running_var")
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
    layers = ["fc", "norm", "act", "head"]
    config = write_variant(tmp_path / "settings", SETTINGS_MODULE,
                           SETTINGS_MAIN_RS, "NormNet", layers)  # fmt: skip
    snakemake(project, "--cores", "2", "--configfile", str(config))

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
    # the proof of a port's fix is the porter's own run (its Burn side is the user's crate)
    assert "yours: rerun `norm_net_sgd` with your crate changed as this row says" in report


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
    config = write_variant(tmp_path / "packed", PACKED_MODULE, PACKED_MAIN_RS,
                           "PackedNet", ["act"], seed=3)  # fmt: skip
    snakemake(project, "--cores", "2", "--configfile", str(config))
    record = verdicts(project)["packed_net_sgd"]
    assert record["verdict"] == "equivalent up to rounding", record["cause"]
    (block,) = json.loads(
        (project / "results/runs/packed_net_sgd/burn-f64.json").read_text()
    ).values()
    assert block["meta"]["burn_shapes"]["qkv.weight"] == [[12, 16]] * 3
    assert block["meta"]["burn_shapes"]["head.weight"] == [[16, 4]]
    compare = (project / "results/compare/packed_net_sgd-f64.txt").read_text()
    assert "params.qkv.weight" in compare and "params.head.weight" in compare
