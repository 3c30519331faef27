"""torchvision's ResNet-18 from examples/ports, as its config runs it: the library's model
unchanged on the PyTorch side, its Burn port in its own crate. Real PyTorch, a real cargo
build, real Snakemake (the longest single fixture of the suite: its own file, so that
pytest-xdist runs it beside the others)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from port_projects import examples_run, verdicts

pytestmark = pytest.mark.pipeline


@pytest.fixture(scope="module")
def resnet(tmp_path_factory, burn_binary) -> Path:
    """A copy of the project with examples/ports, its files written and its config's two
    ResNet-18 experiments run: torchvision's ResNet-18 and its Burn port (the language
    models: test_port_language_models.py)."""
    make = ["examples/ports/resnet18/make_files.py"]
    return examples_run(tmp_path_factory.mktemp("ports"), lambda k: "resnet18" in k, make)


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
