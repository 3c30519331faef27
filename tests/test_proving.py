"""Proving runs: the fix for values left to Burn's defaults, applied on Burn's side."""

from __future__ import annotations

from torch_burn_parity.config.proving import SUFFIX, original, proving_runs

RMSPROP = {"optimizer": "rmsprop", "lr": 0.001, "eps": 1e-8, "momentum": 0.0,
           "description": "Burn keeps its own defaults",
           "keep_defaults": {"burn": ["eps", "momentum"], "torch": ["alpha"]}}  # fmt: skip
MUON = {"params": ["fc.weight"], "optimizer": "muon", "keep_defaults": {"burn": ["eps"]}}
GROUPED = {"optimizer": "adamw", "lr": 0.01, "param_groups": [MUON]}


def test_an_experiment_keeping_burns_defaults_gets_one_with_pytorchs_values_passed():
    experiments = {"plain": {"optimizer": "sgd", "lr": 0.5}, "rms": RMSPROP, "grouped": GROUPED}
    found = proving_runs(experiments, swept=set())
    assert list(found) == ["rms__fix", "grouped__fix"]
    fixed = found["rms__fix"]
    # Burn's kept defaults dropped, PyTorch's own kept ones and every value left as they are
    assert fixed["keep_defaults"] == {"torch": ["alpha"]}
    assert {k: v for k, v in fixed.items() if k not in ("keep_defaults", "description")} == {
        k: v for k, v in RMSPROP.items() if k not in ("keep_defaults", "description")
    }
    assert "Burn given PyTorch's eps, momentum through its setters" in fixed["description"]
    assert RMSPROP["keep_defaults"]["burn"] == ["eps", "momentum"]  # the original untouched
    group = found["grouped__fix"]["param_groups"][0]
    assert "keep_defaults" not in group and "param_groups[0].eps" in found["grouped__fix"][
        "description"]  # fmt: skip
    assert original("rms__fix") == "rms" and original("rms") is None


def test_no_proving_run_for_a_sweeps_point_a_proving_run_or_a_taken_name():
    experiments = {"rms": RMSPROP, "swept": RMSPROP, "done__fix": RMSPROP}
    assert list(proving_runs(experiments, swept={"swept"})) == ["rms" + SUFFIX]
    assert proving_runs({"rms": RMSPROP, "rms__fix": {"optimizer": "sgd"}}, set()) == {}
