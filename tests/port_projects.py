"""A user's own port project, written in a temporary folder as a user would write it: a
PyTorch module, its Burn crate (built against this checkout's trainer), weights and data, and
the config naming them. The port pipeline tests (test_port_pipeline.py,
test_port_architectures.py) start from it and swap in the module and the Burn port they test."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml

from conftest import ROOT, SGD
from torch_burn_parity.judgement.record_parts import document_problems

# The trainer crate every test's port crate depends on: the repository's own rust/, not the
# project copy's (the same sources). Cargo tells a path dependency's builds apart by its
# path, so a crate pointing at each copy's rust/ compiled parity-train once per copy (23 s
# on 2 cores, `cargo build --timings`); pointing at this one, it is compiled once in the
# shared target folder and reused by every port build of the run.
TRAINER_CRATE = ROOT / "rust"


def share_trainer_crate(crate: Path) -> None:
    """Point a copied crate's `parity-train = { path = ... }` at TRAINER_CRATE."""
    manifest = crate / "Cargo.toml"
    text, found = re.subn(
        r'^parity-train = \{ path = "[^"]*" \}$',
        f'parity-train = {{ path = "{TRAINER_CRATE}" }}',
        manifest.read_text(),
        flags=re.MULTILINE,
    )
    assert found == 1, f"{manifest}: no parity-train path dependency"
    manifest.write_text(text)


def verdicts(workdir: Path) -> dict[str, dict]:
    """The verdict records by experiment, the document valid (its schema, each record's
    parts, causes and verdict agreeing)."""
    document = json.loads((workdir / "results/verdicts.json").read_text())
    assert document_problems(document) == []
    return {r["experiment"]: r for r in document["experiments"]}


def examples_run(dest: Path, keep, make: list[str]) -> Path:
    """A copy of the project in ``dest`` with examples/, the experiments of
    examples/ports/config.yaml that ``keep(name)`` chooses as its `ports.yaml`, the files
    written by the ``make`` scripts (as a user runs them) and that config run."""
    from pipeline_helpers import copy_project, snakemake

    config = yaml.safe_load((ROOT / "examples/ports/config.yaml").read_text())
    config["experiments"] = {k: v for k, v in config["experiments"].items() if keep(k)}
    workdir = copy_project(dest, config, "ports.yaml")
    skipped = shutil.ignore_patterns("target", "__pycache__", "*.safetensors")  # written below
    shutil.copytree(ROOT / "examples", workdir / "examples", ignore=skipped)
    for crate in (workdir / "examples/ports").glob("*/burn"):
        share_trainer_crate(crate)
    for script in make:
        subprocess.run([sys.executable, script], cwd=workdir, check=True, capture_output=True)
    snakemake(workdir, "--cores", "2", "--configfile", "ports.yaml")
    return workdir


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

[profile.release.package.burn-ndarray]
opt-level = 0
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
    folder: Path, head_bias: str = "false", extra: str = "", regression: bool = False
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
    (crate / "Cargo.toml").write_text(CARGO_TOML.format(rust=TRAINER_CRATE))
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


def write_variant(
    folder: Path,
    module: str,
    main_rs: str,
    cls: str,
    layers: list[str],
    seed: int | None = None,
    drop: str | None = None,
) -> Path:
    """The user's project with another model: PyTorch module source ``module`` (class ``cls``,
    written as torch/{name}.py, ``name`` its lowercase form with _ before each capital) and Burn
    crate source ``main_rs``; its weights the module's state_dict() (at ``seed``, less
    ``drop``); one experiment `{name}_sgd` recording ``layers``. Returns its config."""
    import torch
    from safetensors.torch import save_file

    name = re.sub(r"(?<!^)(?=[A-Z])", "_", cls).lower()  # NormNet -> norm_net
    config = yaml.safe_load(write_user_project(folder).read_text())
    (folder / f"torch/{name}.py").write_text(module)
    (folder / "burn/src/main.rs").write_text(main_rs)
    sys.path.insert(0, str(folder / "torch"))
    sys.modules.pop(name, None)  # this folder's module, not an earlier test's
    try:
        built = getattr(__import__(name), cls)
    finally:
        sys.path.remove(str(folder / "torch"))
    if seed is not None:
        torch.manual_seed(seed)
    state = built().state_dict()
    state.pop(drop, None)
    save_file(state, folder / "weights.safetensors")
    experiment = config["experiments"].pop("gelu_net_sgd")
    experiment["model"].update(name=name, layers=layers)
    experiment["model"]["torch"]["module"] = f"{name}:{cls}"
    config["experiments"] = {f"{name}_sgd": experiment}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
