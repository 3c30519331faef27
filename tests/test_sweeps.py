"""Sweeps: expansion into experiments, refusals, and a small sweep through the real pipeline."""

from __future__ import annotations

import copy

import pandas as pd
import pytest
import yaml

from conftest import ADAM, SGD
from pipeline_helpers import copy_project, planned_jobs, rules, snakemake
from torch_burn_parity.config import sweeps
from torch_burn_parity.config.parity_config import HYPERPARAMETERS

SWEEP = {"base": dict(ADAM), "axes": {"lr": [0.001, 0.1], "keep_defaults": [{}, {"burn": ["eps"]}]}}


def expand(**sweep_overrides):
    config = {"experiments": {"sgd": dict(SGD)}, "sweeps": {"g": {**SWEEP, **sweep_overrides}}}
    return sweeps.expand_all(config, HYPERPARAMETERS)


# --------------------------------------------------------------------------- expansion


@pytest.mark.parametrize(
    ("value", "token"),
    [(0.001, "0p001"), (1e-08, "1em08"), (10.0, "10"), (2, "2"), ([0.9, 0.999], "0p9_0p999"),
     ({"burn": ["eps"]}, "burn_eps"), ({}, "none"), (True, "true")],
)  # fmt: skip
def test_axis_values_become_file_safe_tokens(value, token):
    assert sweeps.token(value) == token


def test_cartesian_product_with_stable_readable_names():
    points = expand()["g"]
    assert [name for name, _, _ in points] == [
        "g__lr_0p001__kd_none",
        "g__lr_0p001__kd_burn_eps",
        "g__lr_0p1__kd_none",
        "g__lr_0p1__kd_burn_eps",
    ]
    name, experiment, point = points[1]
    assert point == {"lr": 0.001, "keep_defaults": {"burn": ["eps"]}}
    assert experiment["lr"] == 0.001 and experiment["eps"] == ADAM["eps"]
    assert experiment["keep_defaults"] == {"burn": ["eps"]}
    # the same point gets the same name whatever else the axis holds
    other = expand(axes={"lr": [0.5, 0.001], "keep_defaults": [{}]})["g"]
    assert "g__lr_0p001__kd_none" in [n for n, _, _ in other]


def test_base_may_name_an_experiment():
    config = {"experiments": {"adam": dict(ADAM)},
              "sweeps": {"g": {"base": "adam", "axes": {"eps": [1e-8, 1e-6]}}}}  # fmt: skip
    names = [n for n, _, _ in sweeps.expand_all(config, HYPERPARAMETERS)["g"]]
    assert names == ["g__eps_1em08", "g__eps_1em06"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"axes": {"lr": []}}, "sweeps.g.axes.lr: expected a non-empty list"),
        ({"axes": {}}, "sweeps.g.axes: expected at least one axis"),
        ({"axes": {"learning_rate": [0.1]}}, "sweeps.g.axes.learning_rate: unknown key for adam;"
         " did you mean 'lr'?"),
        ({"axes": {"momentum": [0.9]}}, "sweeps.g.axes.momentum: unknown key for adam"),
        ({"base": "nothing"}, "sweeps.g.base: no experiment 'nothing'"),
        ({"axes": {"lr": [0.1, 0.1]}}, "give the same experiment name 'g__lr_0p1'"),
    ],
)  # fmt: skip
def test_bad_sweeps_are_refused_naming_the_sweep_and_key(change, message):
    with pytest.raises(sweeps.SweepError, match=None) as error:
        expand(**change)
    assert message in str(error.value)


def test_too_many_experiments_are_refused():
    config = {"max_experiments": 3, "sweeps": {"g": copy.deepcopy(SWEEP)}}
    with pytest.raises(sweeps.SweepError, match="sweeps.g: 4 experiments, more than max_exp"):
        sweeps.expand_all(config, HYPERPARAMETERS)


def test_a_generated_name_may_not_shadow_an_experiment():
    config = {"experiments": {"g__lr_0p1": dict(ADAM)},
              "sweeps": {"g": {"base": dict(ADAM), "axes": {"lr": [0.1]}}}}  # fmt: skip
    with pytest.raises(sweeps.SweepError, match="'g__lr_0p1' is already taken"):
        sweeps.expand_all(config, HYPERPARAMETERS)


# --------------------------------------------------------------------------- the pipeline


def sweep_config(lrs: list[float]) -> dict:
    return {"steps": 6, "batch_size": 16, "threads": 1, "report_steps": [1, 6],
            "experiments": {"sgd": dict(SGD)},
            "sweeps": {"g": {"base": dict(ADAM), "axes": {
                "lr": lrs, "keep_defaults": [{}, {"burn": ["eps"]}]}}}}  # fmt: skip


@pytest.fixture(scope="module")
def swept(tmp_path_factory, burn_binary):
    workdir = copy_project(tmp_path_factory.mktemp("sweep"), sweep_config([0.001, 0.1]))
    snakemake(workdir, "--cores", "4")
    return workdir


def test_sweep_summary_map_and_report_section(swept):
    folder = swept / "results/sweeps/g"
    summary = pd.read_csv(folder / "summary.csv", keep_default_na=False)
    assert len(summary) == 4 and (folder / "parity_map.png").stat().st_size > 10_000
    assert list(summary.columns[:3]) == ["experiment", "lr", "keep_defaults"]
    kept = summary[summary["keep_defaults"] == "burn: eps"]
    assert kept["cause"].str.startswith("config diff: eps (torch 1e-08, burn 1e-05)").all()
    mapping = pd.read_csv(folder / "experiments.csv", keep_default_na=False)
    assert list(mapping["experiment"]) == list(summary["experiment"])
    report = (swept / "results/report.md").read_text()
    assert "## Sweep `g` (4 experiments)" in report
    assert "- `lr`: " in report and "grows with lr" in report  # larger lr, larger gap
    # a large sweep is summed up, not repeated experiment by experiment
    assert "## Experiment `g__" not in report and "## Experiment `sgd`" in report


def test_sweep_second_run_does_nothing(swept):
    assert planned_jobs(swept) == {}


def test_changing_one_axis_value_reruns_only_the_new_points(swept):
    config = swept / "config.yaml"
    text = config.read_text()
    config.write_text(yaml.safe_dump(sweep_config([0.001, 0.05]), sort_keys=False))
    try:
        jobs = planned_jobs(swept)
    finally:
        config.write_text(text)
    experiments = {exp for (_, exp) in jobs if exp is not None}
    assert experiments == {"g__lr_0p05__kd_none", "g__lr_0p05__kd_burn_eps"}
    counts = rules(jobs)
    assert counts["train_torch"] == 2 and counts["train_burn"] == 2  # a job per point
    assert counts["sweep_summary"] == 1 and counts["report"] == 1


# --------------------------------------------------------------------------- the config check


def check(config: dict) -> list[str]:
    from torch_burn_parity.config.check_config import config_problems, load_schema, sweep_problems

    schema = load_schema()
    problems = config_problems(config, schema) or sweep_problems(config, schema)
    return [str(p) for p in problems]


def test_a_sweep_point_the_optimizer_refuses_is_named_at_the_sweep():
    config = sweep_config([0.1, -1.0])
    assert check(config) == [
        "sweeps.g.axes.lr: -1.0 is out of range (lr > 0) (at point g__lr_m1__kd_none)"
    ]


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (lambda g: g["axes"].update(lr=[]), "sweeps.g.axes.lr: expected at least 1 item, got 0"),
        (lambda g: g["axes"].update(learning_rate=[0.1]),
         "sweeps.g.axes.learning_rate: unknown key for adam; did you mean 'lr'?"),
        (lambda g: g.pop("axes"), "sweeps.g.axes: missing"),
    ],
)  # fmt: skip
def test_bad_sweeps_are_one_line_each(change, line):
    config = sweep_config([0.1])
    change(config["sweeps"]["g"])
    assert check(config) == [line]


def test_the_model_is_a_sweep_axis():
    config = sweep_config([0.1])
    config["sweeps"]["g"]["axes"] = {"model": ["cnn1d", "cnn_bn"]}
    points = sweeps.expand_all(config, HYPERPARAMETERS)["g"]
    assert [(n, e["model"]) for n, e, _ in points] == [
        ("g__model_cnn1d", "cnn1d"),
        ("g__model_cnn_bn", "cnn_bn"),
    ]
    assert check(config) == []
    config["sweeps"]["g"]["axes"]["model"] = ["cnn1d", "cnn_nb"]
    assert check(config) == [
        "sweeps.g.axes.model: unknown model 'cnn_nb' (known: cnn1d, cnn_bn, transformer,"
        " lenet, gpt); did you mean 'cnn_bn'? (at point g__model_cnn_nb)"
    ]


def test_max_experiments_is_checked_before_expansion():
    config = {**sweep_config([0.1, 0.2, 0.3]), "max_experiments": 5}
    assert check(config) == ["sweeps.g: 6 experiments, more than max_experiments (5)"]
    assert check({**config, "max_experiments": 6}) == []
