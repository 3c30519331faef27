"""fixes.py: the change each cause asks for, in exact words, and the gap its share is of."""

from __future__ import annotations

import pytest

from torch_burn_parity.judgement.fixes import fixes, gap_of, layer_fix, one_value

EXPLAINED = "algorithmic difference, explained"


def record(*causes: dict, **more) -> dict:
    return {"experiment": "x", "verdict": EXPLAINED, "causes": list(causes), "f64_gap": 1e-6,
            **more}  # fmt: skip


@pytest.mark.parametrize(
    ("split", "part", "gap"),
    [(False, "training", "the gap"), (None, "buffers", "the gap"),
     (True, "training", "the parameter gap"), (True, "buffers", "the buffers' gap"),
     (True, None, "the buffers' gap")],
)  # fmt: skip
def test_a_share_is_of_its_parts_gap_when_the_parts_are_judged_apart(split, part, gap):
    cause = {"cause": "the running-variance estimator", "share": 0.25}
    if part is not None:
        cause["part"] = part
    rec = record(cause) if split is None else record(cause, split=split)
    assert gap_of(rec, cause) == gap
    (fix,) = fixes(rec)
    assert fix.evidence == (
        "the counterfactual with Burn's estimator (`dparam_burn_running_stats`) accounts for"
        f" 25.0% of {gap}"
    )


def test_each_layer_setting_gets_its_whole_burn_line():
    assert layer_fix("the layer setting blocks.0.norm.eps (torch 0.001, burn 1e-05)") == (
        "build Burn's `blocks.0.norm` with PyTorch's epsilon: its config's `.with_epsilon(0.001)`"
    )
    assert layer_fix("the layer setting bn.momentum (torch 0.01, burn 0.1)") == (
        "build Burn's `bn` with PyTorch's momentum: `BatchNormConfig::new(…).with_momentum(0.01)`"
    )
    assert layer_fix("the layer setting h.0.attn.sqrt_d_k (torch 4.898979485566356, burn"
                     " 4.898979663848877)") == (
        "no setting of Burn's `h.0.attn` reaches it: its MultiHeadAttention divides the scores"
        " by the f32 square root of d_k (burn-nn src/modules/attention/mha.rs line 290); a head"
        " width whose square root is exact in f32 (4, 16, 64, 256) makes the two the same"
    )  # fmt: skip
    assert layer_fix("the layer setting act.backward (torch none, burn tanh)") == (
        "run on Burn's Flex backend (`burn_backend: flex`): NdArray differentiates `act`'s exact"
        " GELU as its tanh approximation (burn-backend src/backend/ops/activation.rs lines"
        " 98–128), which no setting of the layer reaches"
    )
    assert layer_fix("the layer setting act.approximate (torch none, burn tanh)") == (
        "build Burn's `act` as PyTorch's GELU (none): `Gelu::new()`"
    )
    assert layer_fix("the layer setting conv.padding (torch 1, burn 0)") is None


def test_a_layer_settings_fix_replaces_the_general_advice():
    cause = {"cause": "the layer setting norm.eps (torch 0.001, burn 1e-05)", "share": 1.0}
    (fix,) = fixes(record(cause))
    assert fix.kind == "layer settings" and fix.why_not is None
    assert fix.fix == layer_fix(cause["cause"])
    assert fix.evidence == (
        "the counterfactual with Burn's layer setting (`dparam_burn_layer[…]`) accounts for"
        " 100.0% of the gap"
    )
    other = {"cause": "the layer setting conv.padding (torch 1, burn 0)", "share": 1.0}
    (general,) = fixes(record(other))
    assert (
        general.fix == "build that Burn layer with PyTorch's value (its config's `with_*` setter)"
    )


@pytest.mark.parametrize(
    ("cause", "key"),
    [("config diff: eps (torch 1e-08, burn 1e-05)", "eps"),
     ("config diff: betas (torch [0.9, 0.99], burn [0.9, 0.999])", "betas"),
     ("config diff: eps (torch 1e-08, burn 1e-05); lr_decay (torch 0.1, burn 0.0)", None),
     ("config diff: eps (torch 1e-08, burn 1e-05), with f32 storage of betas", None),
     ("Burn's f32 storage of eps (torch 1e-08, burn 1e-08)", None)],
)  # fmt: skip
def test_one_value_is_named_only_when_the_cause_names_exactly_one(cause, key):
    assert one_value(cause) == key


def test_a_values_cause_with_an_unknown_optimizer_keeps_the_general_advice():
    cause = {"cause": "config diff: eps (torch 1e-08, burn 1e-05)", "share": 0.5}
    (fix,) = fixes(record(cause, optimizer="lamb"))
    assert fix.fix.startswith("pass PyTorch's values to Burn explicitly")
    (known,) = fixes(record(cause, optimizer="adam"))
    assert known.fix == "pass PyTorch's eps to Burn: `AdamConfig::new().with_epsilon(1e-08)`"


def test_fixes_follow_the_causes_in_order():
    causes = [{"cause": "the schedule of lrs", "share": 0.6},
              {"cause": "Burn's f32 arithmetic in its update", "share": 0.4}]  # fmt: skip
    found = fixes(record(*causes))
    assert [f.kind for f in found] == ["schedule", "f32 arithmetic"]
    assert [f.share for f in found] == [0.6, 0.4]
    assert found[1].evidence == (
        "the remainder (the f64 variants leave it, the replay with Burn's f32 scalars closes it)"
        " accounts for 40.0% of the gap"
    )
    assert fixes(record(*causes, verdict="algorithmic difference, unexplained")) == []
