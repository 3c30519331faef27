"""config_diff.py: each hyperparameter as PyTorch and Burn will hold it, with its status."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from torch_burn_parity.analysis import config_diff as cd
from torch_burn_parity.config.resolve import experiment_spec

SGD = {
    "optimizer": "sgd",
    "lr": 0.5,
    "momentum": 0.0,
    "dampening": 0.0,
    "weight_decay": 0.0,
    "nesterov": False,
}
ADAM = {"optimizer": "adam", "lr": 0.01, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0}
# The atlas experiments of config.yaml: PyTorch's defaults, passed to both frameworks.
ADAMW = {**ADAM, "optimizer": "adamw", "weight_decay": 0.01, "amsgrad": False}
ADAGRAD = {"optimizer": "adagrad", "lr": 0.05, "lr_decay": 0.0, "eps": 1e-10,
           "weight_decay": 0.0, "initial_accumulator_value": 0.0}  # fmt: skip
RMSPROP = {"optimizer": "rmsprop", "lr": 0.001, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0,
           "momentum": 0.0, "centered": False}  # fmt: skip

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


# The last row of every experiment: the kernels each framework runs (Burn's default backend).
FLEX = {
    "hyperparameter": "backend",
    "torch": "PyTorch CPU (ATen)",
    "burn": "Flex",
    "status": "kernels",
    "note": "Burn's own CPU kernels (burn-flex, the default)",
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
        # amsgrad: left out of the config, so the spec carries PyTorch's default, false
        row("amsgrad", "false", "false", "same"),
        BIAS_CORRECTION,
        ONE_MINUS_BETA,
        FLEX,
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
        FLEX,
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
        FLEX,
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


def f32_note(x) -> str:
    return f"Burn holds the f32 value {json.dumps(cd.f32(x))}"


ADAMW_FACTORS = row("bias-correction factors", "f64 (Python floats)", "f32", "precision",
                    "1-β₁^t dividing m and 1-β₂^t dividing v")  # fmt: skip
DECOUPLED = row("weight decay style", "decoupled (p ·= 1 − lr·wd)", "decoupled (p ·= 1 − lr·wd)",
                "same")  # fmt: skip


def test_adamw_with_pytorchs_defaults_passed_to_both():
    assert cd.diff_rows(spec(ADAMW)) == [
        row("lr", "0.01", "0.01", "same"),
        row("betas", "[0.9, 0.999]", "[0.9, 0.999]", "f32 storage", f32_note([0.9, 0.999])),
        row("eps", "1e-08", "1e-08", "f32 storage", f32_note(1e-8)),
        row("weight_decay", "0.01", "0.01", "f32 storage", f32_note(0.01)),
        row("amsgrad", "false", "false", "same"),
        DECOUPLED,
        ADAMW_FACTORS,
        ONE_MINUS_BETA,
        FLEX,
    ]


def test_adamw_with_burns_defaults_differs_in_eps_and_weight_decay():
    found = rows(ADAMW, keep_defaults={"burn": ["betas", "eps", "weight_decay", "amsgrad"]})
    kept = "burn keeps its default; "
    assert found["eps"] == row("eps", "1e-08", "1e-05", "differs", kept + f32_note(1e-5))
    assert found["weight_decay"] == row(
        "weight_decay", "0.01", "1e-04", "differs", kept + f32_note(1e-4)
    )
    # Burn's default betas are PyTorch's, as f32: stored, not different
    assert found["betas"]["status"] == "f32 storage"
    assert found["amsgrad"] == row("amsgrad", "false", "false", "same", "burn keeps its default")


def test_amsgrad_kept_on_one_side_only_differs():
    found = rows(ADAM, amsgrad=True, keep_defaults={"burn": ["amsgrad"]})
    assert found["amsgrad"] == row("amsgrad", "true", "false", "differs", "burn keeps its default")


def test_adagrad_holds_lr_decay_in_f64_and_has_no_initial_accumulator():
    found = cd.diff_rows(spec(ADAGRAD, lr_decay=0.01, weight_decay=1e-3))
    assert found == [
        row("lr", "0.05", "0.05", "same"),
        row("lr_decay", "0.01", "0.01", "same"),  # f64 in Burn: the value itself
        row("eps", "1e-10", "1e-10", "f32 storage", f32_note(1e-10)),
        row("weight_decay", "0.001", "0.001", "f32 storage", f32_note(1e-3)),
        row("initial_accumulator_value", "0.0", "0.0", "same",
            "Burn has no such setting: its sum starts at 0"),
        L2,
        FLEX,
    ]  # fmt: skip


def test_adagrad_with_burns_default_eps_differs():
    found = rows(ADAGRAD, keep_defaults={"burn": ["lr_decay", "eps", "weight_decay"]})
    assert found["eps"] == row(
        "eps", "1e-10", "1e-05", "differs", "burn keeps its default; " + f32_note(1e-5)
    )
    assert found["lr_decay"]["status"] == "same" and "weight decay style" not in found


def test_rmsprop_holds_alpha_momentum_and_eps_as_f32():
    assert cd.diff_rows(spec(RMSPROP, momentum=0.5)) == [
        row("lr", "0.001", "0.001", "same"),
        row("alpha", "0.99", "0.99", "f32 storage", f32_note(0.99)),
        row("eps", "1e-08", "1e-08", "f32 storage", f32_note(1e-8)),
        row("weight_decay", "0.0", "0.0", "same"),
        row("momentum", "0.5", "0.5", "same"),  # exact in f32
        row("centered", "false", "false", "same"),
        row("1 − α in the square average", "f64", "f32", "precision",
            "exact in both for 0.5 ≤ α ≤ 1 (Sterbenz): only α's value counts"),
        FLEX,
    ]  # fmt: skip


def test_rmsprop_with_burns_defaults_gets_momentum():
    found = rows(RMSPROP, keep_defaults={"burn": ["alpha", "eps", "momentum", "centered"]})
    assert found["momentum"] == row(
        "momentum", "0.0", "0.9", "differs", "burn keeps its default; " + f32_note(0.9)
    )
    assert found["eps"]["status"] == "differs" and found["alpha"]["status"] == "f32 storage"


def test_centered_rmsprop_shows_how_each_averages_the_gradient():
    assert "centered gradient average" not in rows(RMSPROP)
    found = rows(RMSPROP, centered=True)
    assert found["centered gradient average"] == row(
        "centered gradient average", "lerp(ḡ, g, 1 − α)", "α·ḡ + (1 − α)·g", "formula",
        "the running mean of the gradient, by different arithmetic",
    )  # fmt: skip


def test_every_optimizer_has_its_facts():
    for optimizer in ("sgd", "adam", "adamw", "adagrad", "rmsprop"):
        assert optimizer in cd.NUMERIC_DETAILS and optimizer in cd.WEIGHT_DECAY_STYLE


# --------------------------------------------------------------------------- schedules, clipping


def test_a_constant_lr_and_no_clipping_add_no_row():
    assert list(rows(ADAM, schedule={"kind": "constant"})) == list(rows(ADAM))
    assert list(rows(ADAM, clip_grad=None)) == list(rows(ADAM))


@pytest.mark.parametrize(
    ("schedule", "torch", "burn", "note"),
    [
        (
            {"kind": "linear", "final_lr": 0.001, "num_steps": 50},
            "LinearLR(start_factor=1.0, end_factor=0.1, total_iters=50), recursive",
            "Linear(initial_lr=0.01, final_lr=0.001, num_iters=50), closed form",
            "PyTorch: previous lr·(1 + Δ/(N + (k−1)·Δ)), Δ = end_factor − 1;"
            " Burn: final − (final − initial)/N·(N − k), which at k = 0 can be an ulp off initial",
        ),
        (
            {"kind": "cosine", "min_lr": 0.001, "num_steps": 100},
            "CosineAnnealingLR(T_max=100, eta_min=0.001), recursive",
            "CosineAnnealing(initial_lr=0.01, min_lr=0.001, num_iters=100), closed form",
            "PyTorch: previous lr − min scaled by (1 + cos(πk/N))/(1 + cos(π(k−1)/N)), plus min;"
            " Burn: min + (initial − min)·(1 + cos(k/N·π))/2",
        ),
        (
            {"kind": "exponential", "gamma": 0.95},
            "ExponentialLR(gamma=0.95), recursive",
            "Exponential(initial_lr=0.01, gamma=0.95), recursive from initial/γ",
            "both: previous lr·γ;"
            " Burn's first lr is (initial/γ)·γ, which can be an ulp off initial",
        ),
        (
            {"kind": "step", "step_size": 10, "gamma": 0.5},
            "StepLR(step_size=10, gamma=0.5), recursive",
            "Step(initial_lr=0.01, step_size=10, gamma=0.5), closed form",
            "PyTorch: previous lr·γ every step_size steps; Burn: initial·γ.powi(⌊k/step_size⌋)",
        ),
    ],
)
def test_a_schedule_row_says_how_each_computes_it(schedule, torch, burn, note):
    found = cd.diff_rows(spec(ADAMW, schedule=schedule))
    assert found[-2:] == [row("schedule", torch, burn, "formula", note), FLEX]
    assert found[:-2] + [FLEX] == cd.diff_rows(spec(ADAMW))  # the other rows do not change


def test_linear_end_factor_is_the_f64_quotient_pytorch_gets():
    found = rows(SGD, lr=0.3, schedule={"kind": "linear", "final_lr": 0.1, "num_steps": 4})
    assert f"end_factor={json.dumps(0.1 / 0.3)}," in found["schedule"]["torch"]
    assert "end_factor=0.33333333333333337," in found["schedule"]["torch"]


def test_norm_clipping_differs_in_scope():
    found = cd.diff_rows(spec(ADAMW, clip_grad={"norm": 1.0}))
    assert found[-3:-1] == [
        row("clip_grad.norm", "1.0", "1.0", "same"),
        row("clip_grad.norm scope", "one norm over all parameters: max/(‖g‖ + 1e-6)",
            "each parameter tensor alone: max/(‖g‖ + smallest positive normal)", "differs",
            "the same only while the total norm stays below the threshold (nothing clipped)"),
    ]  # fmt: skip


def test_value_clipping_holds_its_threshold_as_f32():
    found = cd.diff_rows(spec(SGD, clip_grad={"value": 0.1}))
    assert found[-3:-1] == [
        row("clip_grad.value", "0.1", "0.1", "f32 storage", f32_note(0.1)),
        row("clip_grad.value scope", "each element clamped to [−v, v]",
            "each element clamped to [−v, v]", "same"),
    ]  # fmt: skip


def test_the_recipe_lists_schedule_then_clipping_after_the_optimizer():
    cosine = {"kind": "cosine", "min_lr": 0.001, "num_steps": 100}
    found = cd.diff_rows(spec(ADAMW, schedule=cosine, clip_grad={"norm": 1.0}))
    assert [r["hyperparameter"] for r in found][-4:] == [
        "schedule", "clip_grad.norm", "clip_grad.norm scope", "backend"]  # fmt: skip
    assert [r["status"] for r in found if r["status"] in ("differs", "formula")] == [
        "formula", "differs"]  # fmt: skip


def test_the_backend_row_names_the_burn_backend_and_is_no_hyperparameter_difference():
    found = cd.diff_rows(spec(ADAM, burn_backend="ndarray"))
    assert found[-1] == row(
        "backend", "PyTorch CPU (ATen)", "NdArray", "kernels",
        "Burn's kernels on the ndarray crate (burn-ndarray, deprecated in Burn 0.22)",
    )  # fmt: skip
    assert found[:-1] == cd.diff_rows(spec(ADAM))[:-1]
    assert cd.diff_rows(spec(ADAM, burn_backend="flex")) == cd.diff_rows(spec(ADAM))


def test_the_markdown_keeps_values_as_written():
    # All-number columns (AdaGrad's, without the backend row) are not reparsed: 0.0 stays
    # 0.0, 1e-10 stays 1e-10.
    frame = pd.DataFrame(cd.diff_rows(spec(ADAGRAD))[:-1], columns=cd.COLUMNS)
    md = cd.render_md(frame, "adagrad")
    assert "| lr_decay                  | 0.0     | 0.0    | same " in md
    assert "| 1e-10   | 1e-10  | f32 storage |" in md


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
    path.write_text(json.dumps(experiment_spec(config, "pit").as_dict()))
    csv, md = tmp_path / "out" / "diff.csv", tmp_path / "out" / "diff.md"
    cd.main(["--spec", str(path), "--csv", str(csv), "--md", str(md)])
    assert capsys.readouterr().out == f"pit: 8 rows, differing: ['eps'] -> {csv}\n"
    # Byte for byte the rows of the seed's defaults pitfall before the other optimizers came,
    # with the amsgrad and backend rows added.
    assert csv.read_text() == (
        "hyperparameter,torch,burn,status,note\n"
        "lr,0.01,0.01,same,\n"
        'betas,"[0.9, 0.999]","[0.9, 0.999]",f32 storage,'
        '"Burn holds the f32 value [0.8999999761581421, 0.9990000128746033]"\n'
        "eps,1e-08,1e-05,differs,"
        "burn keeps its default; Burn holds the f32 value 9.999999747378752e-06\n"
        "weight_decay,0.0,0.0,same,\n"
        "amsgrad,false,false,same,\n"
        "bias-correction factors,f64 (Python floats),f32,precision,"
        "sqrt(1-β₂^t)/(1-β₁^t) and ε·sqrt(1-β₂^t)\n"
        "1 − β in moment updates,f64,f32,precision,"
        "exact in both for 0.5 ≤ β ≤ 1 (Sterbenz): only β's value counts\n"
        "backend,PyTorch CPU (ATen),Flex,kernels,"
        '"Burn\'s own CPU kernels (burn-flex, the default)"\n'
    )
    frame = pd.read_csv(csv, keep_default_na=False)
    assert list(frame.columns) == cd.COLUMNS
    assert frame.to_dict("records") == cd.diff_rows(experiment_spec(config, "pit"))
    text = md.read_text()
    assert text.startswith("### Config diff: pit\n\n| hyperparameter ")
    assert "| eps  " in text and "| differs " in text and text.endswith("|\n")


def test_main_reads_a_resolved_spec_and_reports_none_differing(tmp_path, capsys):
    config = {"steps": 3, "batch_size": 16, "experiments": {"a": ADAM, "s": SGD}}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(experiment_spec(config, "s").as_dict()))
    csv, md = tmp_path / "s.csv", tmp_path / "s.md"
    cd.main(["--spec", str(path), "--csv", str(csv), "--md", str(md)])
    assert capsys.readouterr().out == f"s: 6 rows, differing: none -> {csv}\n"
    assert md.read_text().startswith("### Config diff: s\n")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda spec: spec.update(optimizer="lion"), "unknown optimizer 'lion'"),
        (lambda spec: spec.pop("schedule"), "not a resolved spec (missing schedule)"),
        (lambda spec: spec["hyperparameters"].pop("betas"), "hyperparameters of adam: missing"),
    ],
)
def test_main_stops_on_a_bad_spec_naming_it(tmp_path, change, message):
    spec = experiment_spec(
        {"steps": 3, "batch_size": 16, "experiments": {"e": ADAM}}, "e"
    ).as_dict()
    change(spec)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    argv = ["--spec", str(path), "--csv", str(tmp_path / "c"), "--md", str(tmp_path / "m")]
    with pytest.raises(SystemExit) as stop:
        cd.main(argv)
    assert str(stop.value.code).startswith(f"config_diff: {path}: {message}")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("missing", ["--spec", "--csv", "--md"])
def test_main_needs_the_spec_and_both_outputs(tmp_path, capsys, missing):
    path = tmp_path / "spec.json"
    path.write_text(
        json.dumps(
            experiment_spec(
                {"steps": 3, "batch_size": 16, "experiments": {"e": ADAM}}, "e"
            ).as_dict()
        )
    )
    args = {"--spec": str(path), "--csv": str(tmp_path / "c"), "--md": str(tmp_path / "m")}
    del args[missing]
    with pytest.raises(SystemExit) as stop:
        cd.main([x for pair in args.items() for x in pair])
    assert stop.value.code == 2
    assert f"the following arguments are required: {missing}" in capsys.readouterr().err
