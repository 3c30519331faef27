"""config_diff.py: each hyperparameter as PyTorch and Burn will hold it, with its status."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import config_diff as cd
from parity_config import experiment_spec

SGD = {
    "optimizer": "sgd",
    "lr": 0.5,
    "momentum": 0.0,
    "dampening": 0.0,
    "weight_decay": 0.0,
    "nesterov": False,
}
ADAM = {"optimizer": "adam", "lr": 0.01, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0}

F32_09, F32_0999 = float(np.float32(0.9)), float(np.float32(0.999))  # 0.89999997…, 0.99900001…
BIAS_CORRECTION = {
    "hyperparameter": "bias-correction factors",
    "torch": "f64 (Python floats)",
    "burn": "f32",
    "status": "precision",
    "note": "sqrt(1-β₂^t)/(1-β₁^t) and ε·sqrt(1-β₂^t)",
}
ONE_MINUS_BETA = {
    "hyperparameter": "1 − β in moment updates",
    "torch": "f64",
    "burn": "f32",
    "status": "precision",
    "note": "exact in both for 0.5 ≤ β ≤ 1 (Sterbenz): only β's value counts",
}
L2 = {
    "hyperparameter": "weight decay style",
    "torch": "L2 (grad += wd·p)",
    "burn": "L2 (grad += wd·p)",
    "status": "same",
    "note": "",
}


def spec(base: dict, **changes) -> dict:
    config = {"steps": 3, "batch_size": 16, "experiments": {"e": {**base, **changes}}}
    return experiment_spec(config, "e")


def rows(base: dict, **changes) -> dict[str, dict]:
    return {r["hyperparameter"]: r for r in cd.diff_rows(spec(base, **changes))}


def row(name, torch, burn, status, note=""):
    return {"hyperparameter": name, "torch": torch, "burn": burn, "status": status, "note": note}


def test_adam_with_every_value_passed():
    assert cd.diff_rows(spec(ADAM)) == [
        row("lr", "0.01", "0.01", "same"),
        row(
            "betas",
            "[0.9, 0.999]",
            "[0.9, 0.999]",
            "f32 storage",
            f"Burn holds the f32 value [{F32_09}, {F32_0999}]",
        ),
        row(
            "eps", "1e-08", "1e-08", "f32 storage", "Burn holds the f32 value 9.99999993922529e-09"
        ),
        row("weight_decay", "0.0", "0.0", "same"),
        BIAS_CORRECTION,
        ONE_MINUS_BETA,
    ]


def test_burn_keeping_its_default_eps_differs_by_a_factor_1000():
    eps = rows(ADAM, keep_defaults={"burn": ["eps"]})["eps"]
    assert eps == row(
        "eps",
        "1e-08",
        "1e-05",
        "differs",
        "burn keeps its default; Burn holds the f32 value 9.999999747378752e-06",
    )


def test_torch_keeping_its_default_eps_differs_from_the_value_burn_gets():
    eps = rows(ADAM, eps=1e-6, keep_defaults={"torch": ["eps"]})["eps"]
    f32 = float(np.float32(1e-6))
    assert eps == row(
        "eps",
        "1e-08",
        "1e-06",
        "differs",
        f"torch keeps its default; Burn holds the f32 value {f32}",
    )


def test_a_kept_default_with_the_same_f32_rounding_still_differs():
    # 1e-5 · (1 + 1e-10) and Burn's default 1e-5 round to the same f32, but Burn was not
    # given the config's value: that is a different value, not f32 storage of it.
    eps = 1e-5 * (1 + 1e-10)
    assert np.float32(eps) == np.float32(1e-5)
    assert rows(ADAM, eps=eps, keep_defaults={"burn": ["eps"]})["eps"]["status"] == "differs"
    assert rows(ADAM, eps=eps)["eps"]["status"] == "f32 storage"


def test_a_value_exact_in_f32_is_the_same_in_both():
    betas = rows(ADAM, betas=[0.5, 0.75], eps=2.0**-20)
    assert betas["betas"] == row("betas", "[0.5, 0.75]", "[0.5, 0.75]", "same")
    assert betas["eps"] == row("eps", json.dumps(2.0**-20), "9.536743e-07", "same")


def test_plain_sgd_has_no_momentum_so_dampening_and_nesterov_are_unused():
    assert cd.diff_rows(spec(SGD)) == [
        row("lr", "0.5", "0.5", "same"),
        row("momentum", "0.0", "0.0", "same"),
        row("dampening", "0.0", "0.0", "unused", "no momentum"),
        row("weight_decay", "0.0", "0.0", "same"),
        row("nesterov", "false", "false", "unused", "no momentum"),
    ]


def test_sgd_with_momentum_and_weight_decay():
    found = cd.diff_rows(spec(SGD, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=5e-4))
    f32_wd = float(np.float32(5e-4))
    assert found == [
        row("lr", "0.1", "0.1", "same"),
        row("momentum", "0.9", "0.9", "f32 storage", f"Burn holds the f32 value {F32_09}"),
        # Burn's SGD dampening is f64: the same value, not f32 storage
        row("dampening", "0.1", "0.1", "same"),
        row(
            "weight_decay", "0.0005", "0.0005", "f32 storage", f"Burn holds the f32 value {f32_wd}"
        ),
        row("nesterov", "false", "false", "same"),
        L2,
    ]


def test_burn_default_dampening_under_momentum_differs():
    found = rows(SGD, momentum=0.9, keep_defaults={"burn": ["dampening"]})
    assert found["dampening"] == row("dampening", "0.0", "0.1", "differs", "burn keeps its default")


def test_momentum_on_one_side_only_still_makes_dampening_count():
    # PyTorch keeps its default momentum (0): Burn still runs with momentum 0.9, so
    # dampening and nesterov matter on Burn's side.
    found = rows(SGD, momentum=0.9, keep_defaults={"torch": ["momentum"]})
    assert found["momentum"]["status"] == "differs"
    assert found["dampening"]["status"] == "same" and found["nesterov"]["status"] == "same"
    found = rows(SGD, momentum=0.9, keep_defaults={"burn": ["momentum"]})
    assert found["momentum"]["status"] == "differs"
    assert found["dampening"]["status"] == "same"


def test_weight_decay_on_one_side_only_shows_the_decay_style():
    found = rows(ADAM, weight_decay=0.01, keep_defaults={"burn": ["weight_decay"]})
    assert found["weight_decay"] == row(
        "weight_decay",
        "0.01",
        "0.0",
        "differs",
        "burn keeps its default; Burn holds the f32 value 0.0",
    )
    assert found["weight decay style"] == L2
    assert "weight decay style" not in rows(ADAM)


def test_f32_and_show_keep_booleans_and_lists():
    assert cd.f32([0.1, True, [0.2]]) == [float(np.float32(0.1)), True, [float(np.float32(0.2))]]
    assert cd.f32(False) is False  # a flag stays a flag, not 0.0
    assert cd.show([0.1, [False, 1e-8]]) == "[0.1, [false, 1e-08]]"
    assert cd.show(F32_09, as_f32=True) == "0.9" and cd.show(True, as_f32=True) == "true"


# --------------------------------------------------------------------------- the script


def test_main_writes_the_tables_and_names_what_differs(tmp_path, capsys):
    config = {
        "steps": 3,
        "batch_size": 16,
        "experiments": {"pit": {**ADAM, "keep_defaults": {"burn": ["eps"]}}},
    }
    path = tmp_path / "pit.json"
    path.write_text(json.dumps(config))
    csv, md = tmp_path / "out" / "diff.csv", tmp_path / "out" / "diff.md"
    cd.main(["--spec", str(path), "--csv", str(csv), "--md", str(md)])
    assert capsys.readouterr().out == f"pit: 6 rows, differing: ['eps'] -> {csv}\n"
    frame = pd.read_csv(csv, keep_default_na=False)
    assert list(frame.columns) == cd.COLUMNS
    assert frame.to_dict("records") == cd.diff_rows(experiment_spec(config, "pit"))
    text = md.read_text()
    assert text.startswith("### Config diff: pit\n\n| hyperparameter ")
    assert "| eps  " in text and "| differs " in text and text.endswith("|\n")


def test_main_picks_the_named_experiment_and_reports_none_differing(tmp_path, capsys):
    config = {"steps": 3, "batch_size": 16, "experiments": {"a": ADAM, "s": SGD}}
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config))  # JSON is valid YAML
    csv, md = tmp_path / "s.csv", tmp_path / "s.md"
    cd.main(["--spec", str(path), "--experiment", "s", "--csv", str(csv), "--md", str(md)])
    assert capsys.readouterr().out == f"s: 5 rows, differing: none -> {csv}\n"
    assert md.read_text().startswith("### Config diff: s\n")


@pytest.mark.parametrize(
    ("content", "experiment", "message"),
    [
        ({"steps": 3, "batch_size": 16, "experiments": {"e": ADAM}}, "x", "unknown experiment 'x'"),
        (
            {"steps": 3, "batch_size": 16, "experiments": {"e": {**ADAM, "optimizer": "rmsprop"}}},
            None,
            "experiments.e.optimizer: unknown optimizer 'rmsprop'",
        ),
        ({"steps": 3, "batch_size": 16}, None, "unknown experiment ''"),
    ],
)
def test_main_stops_on_a_bad_spec_naming_it(tmp_path, content, experiment, message):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(content))
    argv = ["--spec", str(path), "--csv", str(tmp_path / "c"), "--md", str(tmp_path / "m")]
    with pytest.raises(SystemExit) as stop:
        cd.main(argv + (["--experiment", experiment] if experiment else []))
    assert str(stop.value.code).startswith(f"config_diff: {message}")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("missing", ["--spec", "--csv", "--md"])
def test_main_needs_the_spec_and_both_outputs(tmp_path, capsys, missing):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"steps": 3, "batch_size": 16, "experiments": {"e": ADAM}}))
    args = {"--spec": str(path), "--csv": str(tmp_path / "c"), "--md": str(tmp_path / "m")}
    del args[missing]
    with pytest.raises(SystemExit) as stop:
        cd.main([x for pair in args.items() for x in pair])
    assert stop.value.code == 2
    assert f"the following arguments are required: {missing}" in capsys.readouterr().err
