"""judgement/effect.py and report/headline.py: what a difference does to the trained model,
how close a verdict is to its floor, and the report's first lines that say so."""

from __future__ import annotations

import math

import pytest

from torch_burn_parity.judgement import effect as ef
from torch_burn_parity.report.headline import counts, effect_cell, headline, margin_cell


def final(loss: float, predictions: list[int], labels: list[int] | None = None) -> dict:
    labels = labels or [0] * len(predictions)
    correct = sum(p == y for p, y in zip(predictions, labels, strict=True))
    return {"loss": loss, "correct": correct, "predictions": predictions}


@pytest.mark.parametrize(
    ("a", "b", "digits"),
    [(0.5, 0.5, None), (0.5, 0.4, 0), (0.07115, 0.07014, 1), (1.0, 1.0 + 3e-4, 3),
     (1.0, 1.0 + 9.9e-6, 5), (1.0, 1.0 + 1.1e-6, 5), (1.0, 1.0 + 9e-7, 6), (1.0, 3.0, 0),
     (0.0, 1e-9, 0), (math.inf, 1.0, 0), (0.5, math.nan, 0)],
)  # fmt: skip
def test_agreeing_digits_counts_the_shared_leading_digits(a, b, digits):
    assert ef.agreeing_digits(a, b) == digits
    assert ef.agreeing_digits(b, a) == digits


@pytest.mark.parametrize(
    ("k", "text"), [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"),
                    (13, "13th"), (14, "14th"), (21, "21st"), (22, "22nd"), (111, "111th"),
                    (121, "121st"), (113, "113th"), (103, "103rd")],
)  # fmt: skip
def test_ordinal(k, text):
    assert ef.ordinal(k) == text


@pytest.mark.parametrize(
    ("torch_loss", "burn_loss", "burn_predictions", "severity", "outcome"),
    [
        (0.5, 0.5, [0, 0, 0, 0], ef.NO_EFFECT, False),
        (0.5, 0.5 * (1 + 2e-6), [0, 0, 0, 0], ef.NO_EFFECT, False),  # 5 digits agree
        (0.5, 0.5 * (1 + 2e-5), [0, 0, 0, 0], "changes the loss in the 5th digit", False),
        (0.5, 0.5 * (1 + 2e-3), [0, 0, 0, 0], "changes the loss in the 3rd digit", False),
        (0.5, 0.5 * (1 + 2e-2), [0, 0, 0, 0], "changes the loss in the 2nd digit", True),
        (0.5, 0.9, [0, 0, 0, 0], "changes the loss in the 1st digit", True),
        (0.5, 0.5, [0, 1, 0, 0], ef.PREDICTIONS, True),
    ],
)  # fmt: skip
def test_severity_and_outcome(torch_loss, burn_loss, burn_predictions, severity, outcome):
    found = ef.final_effect(final(torch_loss, [0, 0, 0, 0]), final(burn_loss, burn_predictions))
    assert found["severity"] == severity and found["changes_outcome"] is outcome
    assert found["predictions_differ"] == sum(burn_predictions) and found["samples"] == 4
    assert found["d_loss"] == abs(torch_loss - burn_loss)
    assert found["torch"]["accuracy"] == 1.0
    assert found["burn"]["accuracy"] == 1 - sum(burn_predictions) / 4


def test_the_effect_is_the_f32_runs_with_the_f64_beside():
    runs = {("torch", "f32"): {"final": final(0.5, [0, 0])},
            ("burn", "f32"): {"final": final(0.5, [0, 1])},
            ("torch", "f64"): {"final": final(0.5, [0, 0])},
            ("burn", "f64"): {"final": final(0.5, [0, 0])}}  # fmt: skip
    found = ef.effect(runs)
    assert found["severity"] == ef.PREDICTIONS and found["f64"]["severity"] == ef.NO_EFFECT


@pytest.mark.parametrize(
    ("ratio", "marginal"),
    [(0.49, False), (0.5, True), (1.07, True), (2.0, True), (2.01, False), (4.66, False),
     (float("nan"), False), (float("inf"), False)],
)  # fmt: skip
def test_a_verdict_within_a_factor_2_of_its_floor_is_marginal(ratio, marginal):
    assert ef.marginal(ratio) is marginal


def record(name: str, verdict: str, effect: dict, ratio: float) -> dict:
    return {"experiment": name, "verdict": verdict, "effect": effect, "gap_over_floor": ratio,
            "marginal": ef.marginal(ratio)}  # fmt: skip


def effect_of(torch_loss, burn_loss, burn_predictions=(0, 0)) -> dict:
    runs = {(fw, dt): {"final": final(torch_loss if fw == "torch" else burn_loss,
                                      [0, 0] if fw == "torch" else list(burn_predictions))}
            for fw in ("torch", "burn") for dt in ("f32", "f64")}  # fmt: skip
    return ef.effect(runs)


def test_the_headline_counts_names_what_changes_the_outcome_and_the_marginal():
    records = [
        record("same", "equivalent up to rounding", effect_of(0.5, 0.5), 0.01),
        record("eps", "algorithmic difference, explained", effect_of(0.5, 0.6), 1.5),
        record("momentum", "algorithmic difference, explained", effect_of(0.5, 0.5, (0, 1)), 9),
    ]
    assert counts(records) == (
        "3 experiments: 1 equivalent up to rounding; 2 explained algorithmic differences"
    )
    text = headline(records)
    assert text.startswith(f"**{counts(records)}.**\n\n**The difference changes the outcome of"
                           " training in 2** (a prediction, or the final loss in one of its"
                           " first 2 significant digits, f32 runs, by more than rounding alone"
                           " changes it): `eps` — changes the loss in the 1st digit (final loss:"
                           " PyTorch 0.5, Burn 0.6; rounding alone moves it by 0 (PyTorch), 0"
                           " (Burn)); `momentum` — changes what the model predicts (1 of 2"
                           " samples; PyTorch right on 100.0%, Burn on 50.0%; rounding alone: 0"
                           " (PyTorch's f32 vs f64 runs), 0 (Burn's)).")  # fmt: skip
    assert text.endswith(
        "Marginal verdicts (the f64 gap within a factor 2 of its rounding floor, which holds a"
        " headroom factor of 100): `eps` (×1.5 marginal).\n"
    )
    calm = headline(records[:1])
    assert "No difference changes the outcome of training" in calm
    assert "No verdict is marginal" in calm
    assert headline([]) == ""


def test_the_cells_say_the_effect_and_the_margin():
    same = record("same", "equivalent up to rounding", effect_of(0.5, 0.5), 0.0147)
    assert effect_cell(same) == "no effect on the outcome (final loss 0.5 in both)"
    assert margin_cell(same) == "×0.0147"
    assert margin_cell(record("x", "diverged", effect_of(0.5, 0.5), float("nan"))) == "—"


@pytest.mark.parametrize(
    ("cause", "kind", "removable"),
    [("config diff: eps (torch 1e-08, burn 1e-05)", "values", True),
     ("Burn's f32 storage of betas, eps", "f32 storage", False),
     ("Burn's held hyperparameters", "held values", False),
     ("Burn's f32 evaluation of its per-step Adam factors", "f32 arithmetic", False),
     ("Burn's f32 arithmetic in its update", "f32 arithmetic", False),
     ("the schedule: PyTorch's recursive LinearLR vs Burn's closed form", "schedule", True),
     ("the clipping scope: Burn clips each parameter tensor", "clipping", True),
     ("the clipping: both clamp each gradient element", "clipping", False),
     ("the running-variance estimator (Burn biased, PyTorch unbiased)", "running statistics",
      False),
     ("Muon's lr adjustment reads the shape", "Muon lr adjustment", True),
     ("Muon's Newton–Schulz: PyTorch's in bfloat16", "Muon precision", False),
     ("something new", "other", False)],
)  # fmt: skip
def test_each_cause_has_its_fix_or_says_why_none(cause, kind, removable):
    from torch_burn_parity.judgement.fixes import kind_of

    found, fix, why_not = kind_of(cause)
    assert found == kind and (fix is not None) == removable and (why_not is None) == removable


def test_a_fix_cites_its_measurement_and_the_paired_experiment():
    from torch_burn_parity.judgement.fixes import fixes

    cause = {"cause": "config diff: eps (torch 1e-08, burn 1e-05)", "share": 1.0, "how": "m"}
    record = {"experiment": "pitfall", "verdict": "algorithmic difference, explained",
              "causes": [cause], "f64_gap": 9e-3}  # fmt: skip
    stored = {"cause": "Burn's f32 storage of eps", "share": 1.0}
    paired = {"experiment": "adam", "verdict": "algorithmic difference, explained",
              "causes": [stored], "f64_gap": 4e-6}  # fmt: skip
    (fix,) = fixes(record, paired)
    assert fix.kind == "values" and fix.fix.startswith("pass PyTorch's values to Burn")
    assert fix.evidence == (
        "the counterfactual with Burn's eps (`dparam_burn_value[eps]`) accounts for 100.0% of"
        " the gap; `adam` passes PyTorch's values to both: algorithmic difference, explained,"
        " with no config-diff cause, f64 gap 4.00e-06 against 9.00e-03 here"
    )
    assert (fix.cause, fix.share, fix.why_not) == (cause["cause"], 1.0, None)
    (alone,) = fixes(record)
    assert alone.evidence.endswith("accounts for 100.0% of the gap")
    # With the optimizer known, the fix is the Burn line; several values in one cause (not
    # measured apart) keep the general advice and the held-values evidence.
    (line,) = fixes({**record, "optimizer": "adam"})
    assert line.fix == "pass PyTorch's eps to Burn: `AdamConfig::new().with_epsilon(1e-08)`"
    lumped = {"cause": "config diff: eps (torch 1e-08, burn 1e-05), with f32 storage of betas",
              "share": 1.0}  # fmt: skip
    (general,) = fixes({**record, "optimizer": "adam", "causes": [lumped]})
    assert general.fix.startswith("pass PyTorch's values to Burn")
    assert general.evidence.startswith("the counterfactual with Burn's held values")
    stored_only = dict(record, causes=[stored])
    (none,) = fixes(stored_only)
    assert (
        none.why_not
        == "Burn 0.22.1 keeps these hyperparameters as f32 fields; no setting widens them"
    )
    assert fixes(dict(record, verdict="equivalent up to rounding")) == []
    still = dict(paired, causes=[cause])
    assert fixes(record, still)[0].evidence.endswith(
        "`adam` passes PyTorch's values to both: algorithmic difference, explained, still with a"
        " config-diff cause, f64 gap 4.00e-06 against 9.00e-03 here"
    )


@pytest.mark.parametrize(
    ("cause", "optimizer", "line"),
    [("config diff: momentum (torch 0.0, burn 0.9)", "rmsprop",
      "`RmsPropConfig::new().with_momentum(0.0)`"),
     ("config diff: weight_decay (torch 0.01, burn 1e-04)", "adamw",
      "`AdamWConfig::new().with_weight_decay(0.01)`"),
     ("config diff: weight_decay (torch 0.01, burn 0.0)", "adam",
      "`AdamConfig::new().with_weight_decay(Some(WeightDecayConfig::new(0.01)))`"),
     ("config diff: betas (torch [0.9, 0.99], burn [0.9, 0.999])", "adam",
      "`AdamConfig::new().with_beta_1(0.9).with_beta_2(0.99)`"),
     ("config diff: eps (torch 1e-10, burn 1e-05)", "adagrad",
      "`AdaGradConfig::new().with_epsilon(1e-10)`"),
     ("config diff: momentum (torch 0.9, burn 0.0)", "sgd", None),
     ("config diff: param_groups[0].eps (torch 1e-08, burn 1e-05)", "adam", None)],
)  # fmt: skip
def test_a_single_value_gets_burns_setter(cause, optimizer, line):
    from torch_burn_parity.judgement.fixes import value_fix

    found = value_fix(cause, optimizer)
    assert (found is None) if line is None else found.endswith(line), found


def test_the_effect_cell_shows_the_digit_where_the_losses_part():
    close = record("adam", "algorithmic difference, explained", effect_of(0.0701103, 0.0701111), 9)
    assert effect_cell(close) == (
        "changes the loss in the 5th digit (final loss: PyTorch 0.0701103, Burn 0.0701111;"
        " rounding alone moves it by 0 (PyTorch), 0 (Burn))"
    )


def test_a_cause_of_no_known_kind_keeps_its_share_as_evidence():
    from torch_burn_parity.judgement.fixes import fixes

    cause = {"cause": "something new", "share": 0.5, "how": "measured"}
    record = {"experiment": "x", "verdict": "algorithmic difference, explained",
              "causes": [cause], "f64_gap": 1.0}  # fmt: skip
    (fix,) = fixes(record)
    assert (fix.kind, fix.fix) == ("other", None)
    assert fix.why_not == "not a cause this module knows: see the experiment's tables"
    assert fix.evidence == "its share accounts for 50.0% of the gap"


def test_a_diverged_run_is_named_not_measured():
    nan = float("nan")
    one = ef.final_effect(final(0.5, [0, 0]), final(nan, [0, 0]))
    assert one["severity"] == ef.DIVERGED and one["changes_outcome"]
    both = ef.final_effect(final(nan, [0, 0]), final(float("inf"), [0, 0]))
    assert both["severity"] == ef.BOTH_DIVERGED and not both["changes_outcome"]


def test_a_regression_predicts_no_classes_and_is_judged_by_its_loss():
    mse = lambda loss: {"loss": loss, "correct": 0, "predictions": None}  # noqa: E731
    found = ef.final_effect(mse(0.5), mse(0.5 * (1 + 2e-3)))
    assert (found["samples"], found["predictions_differ"]) == (0, 0)
    assert found["torch"]["accuracy"] is None and found["burn"]["accuracy"] is None
    assert found["severity"] == "changes the loss in the 3rd digit"
    # one side with classes, the other without: still no comparison of predictions
    assert ef.final_effect(final(0.5, [0, 1]), mse(0.5))["samples"] == 0


def test_a_prediction_is_of_a_position_on_text_and_of_a_sample_otherwise():
    runs = {(fw, dt): {"final": final(0.5, [0, 0]), "meta": {"data": "text"}}
            for fw in ("torch", "burn") for dt in ("f32", "f64")}  # fmt: skip
    assert ef.effect(runs)["unit"] == "positions"
    runs["torch", "f32"]["meta"]["data"] = "digits"
    assert ef.effect(runs)["unit"] == "samples"
    del runs["torch", "f32"]["meta"]
    assert ef.effect(runs)["unit"] == "samples"


def test_a_diverged_f32_run_changes_the_outcome_whatever_rounding_does():
    nan = float("nan")
    runs = {("torch", "f32"): {"final": final(0.5, [0, 0])},
            ("burn", "f32"): {"final": final(nan, [0, 0])},
            ("torch", "f64"): {"final": final(0.5, [0, 0])},
            ("burn", "f64"): {"final": final(0.5, [0, 0])}}  # fmt: skip
    found = ef.effect(runs)
    assert found["severity"] == ef.DIVERGED and not found["beyond_rounding"]
    assert found["changes_outcome"]


def test_an_effect_no_larger_than_rounding_alone_does_not_change_the_outcome():
    """Burn's f32 run differs from PyTorch's on 2 of 4 predictions, but PyTorch's own f32
    and f64 runs differ on 3: rounding's noise floor; on 1 it would count."""
    runs = {("torch", "f32"): {"final": final(0.5, [0, 0, 0, 0])},
            ("burn", "f32"): {"final": final(0.5, [1, 1, 0, 0])},
            ("torch", "f64"): {"final": final(0.5, [1, 1, 1, 0])},
            ("burn", "f64"): {"final": final(0.5, [1, 1, 0, 0])}}  # fmt: skip
    found = ef.effect(runs)
    assert found["severity"] == ef.PREDICTIONS and found["predictions_differ"] == 2
    assert found["rounding"]["torch"]["predictions_differ"] == 3
    assert not found["beyond_rounding"] and not found["changes_outcome"]
    text = headline([record("noisy", "algorithmic difference, explained", found, 9)])
    assert "No difference changes the outcome of training" in text
    assert "Not counted, as rounding alone changes the outcome as much" in text
    assert "`noisy` — changes what the model predicts (2 of 4 samples" in text
    runs["torch", "f64"] = {"final": final(0.5, [1, 0, 0, 0])}
    assert ef.effect(runs)["changes_outcome"]
    # In the loss: 0.5 vs 0.6 apart, but PyTorch's own f32 and f64 losses 0.2 apart.
    loss = {key: {"final": final(v, [0, 0])} for key, v in (
        (("torch", "f32"), 0.5), (("burn", "f32"), 0.6), (("torch", "f64"), 0.7),
        (("burn", "f64"), 0.6))}  # fmt: skip
    assert not ef.effect(loss)["changes_outcome"]


def test_rounding_sized_causes_within_a_factor_10_of_rounding_are_not_separable():
    parts = [{"part": "training", "gap": 2.2, "causes": [
        {"cause": "Muon's lr adjustment reads the shape", "share": 0.92},
        {"cause": "Burn's f32 storage of betas", "share": 0.058},
        {"cause": "Muon's Newton–Schulz: PyTorch's in bfloat16", "share": 0.017}]}]  # fmt: skip
    found = ef.sensitivity(parts, {"torch": 0.094, "burn": 0.096}, 2.2)
    assert found["not_separable"] == ["Burn's f32 storage of betas",
                                      "Muon's Newton–Schulz: PyTorch's in bfloat16"]  # fmt: skip
    assert not found["within_rounding"]
    # Rounding 10x smaller than every rounding-sized move: separable, not sensitive.
    assert ef.sensitivity(parts, {"torch": 0.0012, "burn": 0.001}, 2.2) is None
    # Rounding alone within a factor 10 of the gap between the frameworks: every
    # rounding-sized share is within it too; a run without one is not marked.
    factors = {"cause": "Burn's f32 evaluation of its per-step Adam factors", "share": 0.97}
    adam = [{"part": "training", "gap": 3.7e-6, "causes": [factors]}]
    within = ef.sensitivity(adam, {"torch": 4.4e-7, "burn": 4.9e-7}, 3.7e-6)
    assert within["within_rounding"] and len(within["not_separable"]) == 1
    scope = {"cause": "the clipping scope: Burn clips each parameter tensor", "share": 1.0}
    clipping = [{"part": "training", "gap": 0.1, "causes": [scope]}]
    assert ef.sensitivity(clipping, {"torch": 6.9e-4, "burn": 1.5e-2}, 0.1) is None
