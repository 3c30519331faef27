"""Burn's differing hyperparameter values, told from their f32 storage, one at a time."""

from __future__ import annotations

from torch_burn_parity.analysis import held_values

TORCH = {
    "hyperparameters": {"lr": 0.001, "alpha": 0.99, "eps": 1e-08, "momentum": 0.0},
    "param_groups": [{"params": ["fc.bias"], "hyperparameters": {"lr": 0.01, "eps": 1e-08}}],
}
BURN = {  # alpha: its f32 storage; eps and momentum: Burn's defaults; the group's eps too
    "hyperparameters": {"lr": 0.001, "alpha": 0.9900000095367432, "eps": 9.99999974e-06,
                        "momentum": 0.8999999761581421},
    "param_groups": [{"params": ["fc.bias"], "hyperparameters": {"lr": 0.01, "eps": 1e-05}}],
}  # fmt: skip


def test_a_value_differs_when_it_is_neither_pytorchs_nor_its_f32_rounding():
    assert held_values.differing(TORCH, BURN) == {
        "eps": 9.99999974e-06,
        "momentum": 0.8999999761581421,
        "param_groups[0].eps": 1e-05,
    }
    assert held_values.differing(TORCH, TORCH) == {}
    betas = {"hyperparameters": {"betas": [0.9, 0.999]}}
    stored = {"hyperparameters": {"betas": [0.8999999761581421, 0.9990000128746033]}}
    assert held_values.differing(betas, stored) == {}


def test_burns_values_are_put_in_pytorchs_meta_without_changing_it():
    meta = held_values.with_values(TORCH, {"momentum": 0.9, "param_groups[0].eps": 1e-05})
    assert meta["hyperparameters"]["momentum"] == 0.9 and meta["hyperparameters"]["eps"] == 1e-08
    assert meta["param_groups"][0]["hyperparameters"] == {"lr": 0.01, "eps": 1e-05}
    assert TORCH["hyperparameters"]["momentum"] == 0.0
    assert TORCH["param_groups"][0]["hyperparameters"]["eps"] == 1e-08
    assert held_values.link("param_groups[0].eps") == "burn_value[param_groups[0].eps]"
