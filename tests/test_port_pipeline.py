"""Your own port through the real pipeline: the example (examples/byo), and a second model
written outside the repository — its own PyTorch module, its own Burn crate, its own weights
and data in a temporary folder (port_projects.py) — run without editing anything in the
project, and refused on one line where it cannot run. Real PyTorch, real cargo builds of the
user's crate, real Snakemake. The architectures a port can hold: test_port_architectures.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import ROOT
from pipeline_helpers import copy_project, dry_run, edited, snakemake
from port_projects import share_trainer_crate, verdicts, write_user_project

pytestmark = pytest.mark.pipeline


@pytest.fixture(scope="module")
def example(tmp_path_factory, burn_binary) -> Path:
    """A copy of the project with the example, run as its README says."""
    config = yaml.safe_load((ROOT / "examples/byo/config.yaml").read_text())
    workdir = copy_project(tmp_path_factory.mktemp("byo"), config, "byo.yaml")
    shutil.copytree(ROOT / "examples", workdir / "examples",
                    ignore=shutil.ignore_patterns("target", "__pycache__"))  # fmt: skip
    share_trainer_crate(workdir / "examples/byo/burn")
    snakemake(workdir, "--cores", "2", "--configfile", "examples/byo/config.yaml")
    return workdir


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


def test_an_edit_to_the_ports_pytorch_module_reruns_its_check_and_trainings(example):
    module = example / "examples/byo/torch/tiny_mlp.py"
    assert dry_run(example, "--configfile", "examples/byo/config.yaml") == []
    with edited(module, lambda text: text + "\n# edited\n"):
        jobs = dry_run(example, "--configfile", "examples/byo/config.yaml")
    rules = {job.rule for job in jobs}
    assert {"check_port", "train_torch", "train_burn", "analyse"} <= rules
    assert "build_port" not in rules  # the Burn crate is not the module
    check = next(job for job in jobs if job.rule == "check_port")
    assert "examples/byo/torch/tiny_mlp.py" in check.inputs


# --- a second model, outside the repository ---------------------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory, burn_binary) -> Path:
    """A copy of the project without the example: nothing of the user's model in it."""
    workdir = copy_project(tmp_path_factory.mktemp("project"), {"experiments": {}}, "unused.yaml")
    assert not (workdir / "examples").exists()
    return workdir


def test_a_model_written_outside_the_repository_runs_through_the_pipeline(project, tmp_path):
    config = write_user_project(tmp_path / "mine", regression=True)
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
    config = write_user_project(tmp_path / "broken", extra=broken)
    proc = snakemake(project, "--cores", "2", "--configfile", str(config), check=False)
    assert proc.returncode != 0
    assert f"build_port: {tmp_path / 'broken/burn'} does not build; its first error:" in proc.stderr
    assert "error[E0308]: mismatched types" in proc.stderr
    assert not (project / "results/bin/ports/gelu_net").exists()


def test_a_burn_parameter_pytorch_lacks_is_named_before_training(project, tmp_path):
    config = write_user_project(tmp_path / "extra", head_bias="true")
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
    good = write_user_project(tmp_path / "good")
    extra = write_user_project(tmp_path / "extra", head_bias="true")
    proc = snakemake(project, "--cores", "2", "--configfile", str(extra), check=False)
    assert proc.returncode != 0 and "head.bias" in proc.stderr
    snakemake(project, "--cores", "2", "--configfile", str(good))
    assert verdicts(project)["gelu_net_sgd"]["verdict"] == "equivalent up to rounding"
