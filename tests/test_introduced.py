"""What a layer introduces, apart from what it carries in: each Burn layer run on PyTorch's
recorded input (`parity-train local`, the layers table's `local_*` columns).

A fault added to one layer's forward output in Burn's training (PARITY_FAULT=STEP:layer:…)
is Burn's layer being wrong: the table must name that layer as the first to introduce a
difference, and the layers after it, whose own forward carries the difference on (their
accumulated f64 difference above its floor), as carrying it (their local one within it: on
PyTorch's input they compute what PyTorch's layers do). A deep model's report summarises
the table instead of plotting every row.
"""

from __future__ import annotations

import io

import pandas as pd
import pytest

from conftest import SGD
from pipeline_helpers import copy_project, snakemake
from torch_burn_parity.io.parity_io import read_run

LAYER, STEP, INDEX, DELTA = "pool1", 1, 3, 1e-7
AFTER = ["conv2", "relu2", "pool2", "fc1", "relu3", "fc2"]  # lenet's layers after pool1


def small(experiments: dict) -> dict:
    return {"steps": 2, "batch_size": 16, "threads": 1, "report_steps": [1, 2],
            "experiments": experiments}  # fmt: skip


@pytest.fixture(scope="module")
def faulted(tmp_path_factory, burn_binary):
    exp = dict(SGD, lr=0.1, model="lenet", probe_steps=[1, 2])
    workdir = copy_project(tmp_path_factory.mktemp("introduced"), small({"lenet": exp}))
    env = {"PARITY_FAULT": f"{STEP}:layer:{LAYER}:{INDEX}:{DELTA}"}
    snakemake(workdir, "--cores", "2", env=env)
    return workdir


def table(workdir, experiment: str) -> pd.DataFrame:
    return pd.read_csv(workdir / f"results/tables/layers_{experiment}.csv")


def test_the_faulted_layer_is_named_as_introducing_the_difference(faulted):
    frame = table(faulted, "lenet")
    first = frame[frame["introduced_first"]]
    assert len(first) == 1
    row = first.iloc[0]
    assert (row["step"], row["phase"], row["layer"]) == (STEP, "forward", LAYER)
    assert row["local_f64"] == pytest.approx(DELTA, rel=1e-6)  # exactly the fault, locally
    # Before it nothing leaves its floor, on either measure.
    before = frame.loc[: first.index[0] - 1]
    assert (before["max_abs_diff_f64"] <= before["floor"]).all()
    assert (before["local_f64"].dropna() <= before["floor"]).all()


def test_the_layers_after_it_carry_it_in_without_introducing_it(faulted):
    frame = table(faulted, "lenet")
    forward = frame[(frame["step"] == STEP) & (frame["phase"] == "forward")].set_index("layer")
    for layer in AFTER:
        row = forward.loc[layer]
        # relu2 may pass none of the perturbation on: only where it does is it carried
        if row["max_abs_diff_f64"] > row["floor"]:
            assert row["local_f64"] <= row["floor"], layer
    carried = [n for n in AFTER if forward.loc[n, "max_abs_diff_f64"] > forward.loc[n, "floor"]]
    assert "fc2" in carried and len(carried) >= 3
    md = (faulted / "results/tables/layers_lenet.md").read_text()
    assert f"the first layer to introduce a difference is `{LAYER}`" in md
    assert "only carry a difference in" in md and "`fc2`" in md.split("only carry")[0]


def test_the_layer_fault_is_recorded_and_reported(faulted):
    burn = read_run(faulted / "results/runs/lenet/burn-f64.json")["lenet"]["meta"]
    assert burn["fault"] == {"step": STEP, "layer": LAYER, "index": INDEX, "delta": DELTA}
    report = (faulted / "results/report.md").read_text()
    assert f"the output of {LAYER}, flat index {INDEX}, += 1e-07 in the forward of step 1" in report


def test_without_a_fault_no_layer_introduces_more_than_rounding(tmp_path, burn_binary):
    """lenet with plain SGD: on PyTorch's inputs every Burn layer stays within its floor."""
    exp = dict(SGD, lr=0.1, model="lenet", probe_steps=[1, 2])
    workdir = copy_project(tmp_path, small({"lenet": exp}))
    snakemake(workdir, "--cores", "2", "results/tables/layers_lenet.csv")
    frame = table(workdir, "lenet")
    measured = frame[frame["local_f64"].notna()]
    assert len(measured) == 2 * (9 + 9)  # 2 probe steps, 9 outputs and 9 input gradients
    assert (measured["local_f64"] <= measured["floor"]).all()
    assert not frame["introduced_first"].any()


def test_a_deep_model_gets_a_summary_along_its_depth(tmp_path, burn_binary):
    size = {"name": "gpt", "d_model": 8, "heads": 2, "layers": 20, "d_ff": 8, "context": 4}
    exp = dict(SGD, lr=0.1, model=size, probe_steps=[1])
    workdir = copy_project(tmp_path, small({"deep": exp}))
    snakemake(workdir, "--cores", "2")
    frame = table(workdir, "deep")
    assert (frame[frame["step"] == 1]["phase"] == "forward").sum() == 43  # embed, 40, ln_f, head
    report = (workdir / "results/report.md").read_text()
    section = report.split("### Where the difference enters")[1]
    assert "The model has 43 layers; the 5 largest differences a layer introduces" in section
    png = io.BytesIO((workdir / "results/plots/layers_deep.png").read_bytes())
    assert png.read(8) == b"\x89PNG\r\n\x1a\n"


def test_a_parameter_difference_is_carried_by_every_layer_and_introduced_by_none(
    tmp_path, burn_binary
):
    """A fault in Burn's conv1 weight after step 1: at step 2 each layer's own forward
    differs (accumulated above the floor, from the first layer on), yet each Burn layer on
    PyTorch's input and parameters computes what PyTorch's does: no layer introduces it."""
    exp = dict(SGD, lr=0.1, model="lenet", probe_steps=[1, 2])
    workdir = copy_project(tmp_path, small({"lenet": exp}))
    env = {"PARITY_FAULT": "1:conv1.weight:0:1e-7"}
    snakemake(workdir, "--cores", "2", "results/tables/layers_lenet.md", env=env)
    frame = table(workdir, "lenet")
    step2 = frame[(frame["step"] == 2) & (frame["phase"] == "forward")]
    assert (step2["max_abs_diff_f64"] > step2["floor"]).all()  # every output carries it
    assert (step2["local_f64"] <= step2["floor"]).all()  # none introduces it
    assert not frame["introduced_first"].any()
    first = frame[frame["first_above_floor"]].iloc[0]
    assert (first["step"], first["phase"], first["layer"]) == (1, "update", "conv1.weight")
    md = (workdir / "results/tables/layers_lenet.md").read_text()
    assert "no layer introduces a difference" in md
