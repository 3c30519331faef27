"""What the Burn trainer writes by hand where Burn has no setting (`burn_fixes`,
rust/src/by_hand.rs), on short real runs of both trainers: clipping by one global norm makes
Burn's f64 run PyTorch's, Muon's lr per parameter removes the lr-adjustment link, PyTorch's
recursive schedule gives Burn PyTorch's lrs; the
replay reproduces each, and the checks, the config diff and the proving runs know them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import SGD, small_config
from param_group_cases import GROUPED
from torch_burn_parity.analysis import replay as rp
from torch_burn_parity.analysis.clip_and_stats import BY_HAND_SCOPE
from torch_burn_parity.analysis.config_diff import diff_rows
from torch_burn_parity.analysis.gaps import param_matrix, step_gaps
from torch_burn_parity.config.parity_config import semantic_problems
from torch_burn_parity.config.proving import proving_runs
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.io.parity_io import experiment_block, read_dataset
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.training.train_torch import train as train_torch

STEPS = 8
CLIP = dict(SGD, clip_grad={"norm": 0.25})  # lr and threshold exact in f32: scope alone differs
EXPERIMENTS = {
    "clip": CLIP,
    "clip_by_hand": dict(CLIP, burn_fixes=["clip_by_global_norm"]),
    # a threshold no gradient norm reaches: the factor is clamped to 1, nothing is scaled
    "clip_by_hand_loose": dict(SGD, clip_grad={"norm": 1e3}, burn_fixes=["clip_by_global_norm"]),
    "muon": GROUPED,
    "muon_by_hand": dict(GROUPED, burn_fixes=["muon_lr_per_parameter"]),
    "smooth": dict(SGD, label_smoothing=0.1),
    "smooth_by_hand": dict(SGD, label_smoothing=0.1, burn_fixes=["smoothed_targets_in_dtype"]),
}
# Every schedule kind, with PyTorch's recursion by hand; the cosine restarts its curve at
# step 6 (PyTorch's branch for k − 1 − N ≡ 0 mod 2N), the step schedule decays twice.
SCHEDULES = {
    "linear": {"kind": "linear", "final_lr": 0.05, "num_steps": 7},
    "cosine": {"kind": "cosine", "min_lr": 0.01, "num_steps": 4},
    "exponential": {"kind": "exponential", "gamma": 0.7},
    "step": {"kind": "step", "step_size": 3, "gamma": 0.3},
}
EXPERIMENTS |= {"linear": dict(SGD, schedule=SCHEDULES["linear"])}
EXPERIMENTS |= {f"{kind}_by_hand": dict(SGD, schedule=schedule, burn_fixes=["pytorch_schedule"])
                for kind, schedule in SCHEDULES.items()}  # fmt: skip


@pytest.fixture(scope="module")
def runs(train, write_config, dataset) -> tuple[dict, dict]:
    """{name: (PyTorch f64 block, Burn f64 block)} and the config."""
    torch.set_num_threads(1)
    arrays = read_dataset(dataset)[0]
    config = small_config(STEPS, **EXPERIMENTS)
    path = write_config(config)
    out = {}
    for name in EXPERIMENTS:
        _, burn = train("burn", name, "f64", path)
        torch_block = train_torch(experiment_spec(config, name), arrays, "f64")
        out[name] = (torch_block, experiment_block(burn, name))
    return out, arrays


def gap(a: dict, b: dict) -> float:
    return float(np.max(step_gaps(param_matrix(a), param_matrix(b))))


def variant_gap(arrays, chosen: dict, key: str) -> float:
    variant, reference = chosen[key]
    _, params = rp.run(arrays, variant, STEPS, 16, model="cnn1d")
    return float(np.max(step_gaps(params, param_matrix(reference))))


def test_clipping_by_one_norm_by_hand_trains_as_pytorch(runs):
    """Burn's per-tensor clipping moves the run far; clipped by hand by one norm, Burn's f64
    run is PyTorch's to the floor, the replay reproduces it, and the clipping link adds
    nothing (no cause left)."""
    found, arrays = runs
    assert gap(*found["clip"]) > 1e-6
    torch_run, burn_run = found["clip_by_hand"]
    assert burn_run["meta"]["clip_scope"] == BY_HAND_SCOPE
    assert burn_run["meta"]["burn_fixes"] == ["clip_by_global_norm"]
    assert burn_run["meta"]["clip_grad"] == {"norm": 0.25}
    assert gap(torch_run, burn_run) <= vd.ABSOLUTE_FLOOR
    chosen = rp.variants(torch_run, burn_run)
    assert variant_gap(arrays, chosen, "replay") <= vd.ABSOLUTE_FLOOR
    assert variant_gap(arrays, chosen, "burn_clipping") <= vd.ABSOLUTE_FLOOR
    assert gap(*found["clip_by_hand_loose"]) <= vd.ABSOLUTE_FLOOR


def test_muons_lr_per_parameter_removes_the_lr_adjustment(runs):
    """fc.weight is [3, 48] in PyTorch (factor 1) and [48, 3] in Burn (factor 4): the
    trainer steps it with lr × 0.25. The replay reproduces Burn's run with that scale, and the
    lr-adjustment link then moves the run no further than held_f64 does."""
    found, arrays = runs
    torch_run, burn_run = found["muon_by_hand"]
    assert burn_run["meta"]["lr_scales"] == {"fc.weight": [0.25]}
    assert "lr_scales" not in found["muon"][1]["meta"]
    chosen = rp.variants(torch_run, burn_run)
    assert variant_gap(arrays, chosen, "replay") <= vd.ABSOLUTE_FLOOR
    held = variant_gap(arrays, chosen, "held_f64")
    assert variant_gap(arrays, chosen, "burn_lr_adjustment") == pytest.approx(held, abs=1e-15)
    # without the fix the same link moves it by far more than the held values do
    unfixed = rp.variants(*found["muon"])
    assert variant_gap(arrays, unfixed, "burn_lr_adjustment") > 1e3 * max(held, 1e-15)
    # Burn's f64 run itself comes nearer PyTorch's
    assert gap(torch_run, burn_run) < gap(*found["muon"]) / 10


def test_the_smoothed_loss_by_hand_is_pytorchs(runs):
    """Burn's smoothing weighs its targets with f32 roundings of 1 − ε and ε/C (their sum
    1 − 2.6e-8 at ε 0.1): its f64 run parts from PyTorch's. Built by hand in the run's dtype,
    the loss is PyTorch's: the runs agree to the floor, and the replay follows no Burn loss."""
    found, arrays = runs
    torch_run, burn_run = found["smooth_by_hand"]
    assert burn_run["meta"]["loss"] == {
        "name": "cross_entropy", "label_smoothing": 0.1, "by_hand": True,
    }  # fmt: skip
    assert found["smooth"][1]["meta"]["loss"]["label_smoothing"] == float(np.float32(0.1))
    assert gap(*found["smooth"]) > 1e3 * gap(torch_run, burn_run)
    assert gap(torch_run, burn_run) <= vd.ABSOLUTE_FLOOR
    assert abs(burn_run["losses"][0] - torch_run["losses"][0]) < 1e-15
    chosen = rp.variants(torch_run, burn_run)
    assert "burn_loss" not in chosen and "burn_loss" in rp.variants(*found["smooth"])
    assert variant_gap(arrays, chosen, "replay") <= vd.ABSOLUTE_FLOOR


def test_pytorchs_schedule_by_hand_gives_burn_pytorchs_lrs_bit_for_bit(runs):
    """Burn's closed-form linear schedule parts from PyTorch's recursion by ulps; PyTorch's
    recursion written as a Burn scheduler gives every kind's lrs exactly, the runs agree to
    the floor, and the schedule cause says so (and names the recursion by hand)."""
    found, _ = runs
    assert vd.lr_difference(found["linear"][0]["lrs"], found["linear"][1]["lrs"]) > 0
    for kind in SCHEDULES:
        torch_run, burn_run = found[f"{kind}_by_hand"]
        assert burn_run["lrs"] == torch_run["lrs"], kind
        assert len(set(torch_run["lrs"])) > 2, kind  # the schedule moves the lr
        assert burn_run["meta"]["burn_fixes"] == ["pytorch_schedule"]
        assert gap(torch_run, burn_run) <= vd.ABSOLUTE_FLOOR
        assert vd.schedule_cause(torch_run, burn_run).endswith(
            "and its copy written by hand for Burn give the same lrs"
        )
    assert "by hand" not in vd.schedule_cause(*found["linear"])


def test_a_fix_the_experiment_cannot_take_is_refused_naming_the_key():
    config = small_config(
        3,
        value=dict(SGD, clip_grad={"value": 0.1}, burn_fixes=["clip_by_global_norm"]),
        plain=dict(SGD, burn_fixes=["muon_lr_per_parameter"]),
        sharp=dict(SGD, burn_fixes=["smoothed_targets_in_dtype"]),
        flat=dict(SGD, burn_fixes=["pytorch_schedule"]),
    )
    assert [str(p) for p in semantic_problems(config)] == [
        "experiments.value.burn_fixes: clip_by_global_norm needs clip_grad: {norm: x} (got"
        " {'value': 0.1})",
        "experiments.plain.burn_fixes: muon_lr_per_parameter needs a Muon optimizer, the"
        " experiment's or a group's",
        "experiments.sharp.burn_fixes: smoothed_targets_in_dtype needs label_smoothing above 0",
        "experiments.flat.burn_fixes: pytorch_schedule needs a schedule other than constant",
    ]


def test_the_config_diff_shows_the_fixes_as_the_same():
    config = small_config(3, **EXPERIMENTS)
    clip = {r["hyperparameter"]: r for r in diff_rows(experiment_spec(config, "clip_by_hand"))}
    assert clip["clip_grad.norm scope"]["status"] == "same"
    assert clip["clip_grad.norm"]["status"] == "same"  # an f64 threshold, not Burn's f32
    plain = {r["hyperparameter"]: r for r in diff_rows(experiment_spec(config, "clip"))}
    assert plain["clip_grad.norm scope"]["status"] == "differs"
    shapes = {"fc.weight": [[48, 3]]}
    muon = diff_rows(experiment_spec(config, "muon_by_hand"), burn_shapes=shapes)
    (row,) = [r for r in muon if r["hyperparameter"].endswith("Muon lr adjustment")]
    assert (row["burn"], row["status"]) == ("[48, 3]: ×4, its lr × 0.25 by hand", "same")
    linear = {r["hyperparameter"]: r for r in diff_rows(experiment_spec(config, "linear"))}
    assert linear["schedule"]["status"] == "formula"
    fixed = {r["hyperparameter"]: r for r in diff_rows(experiment_spec(config, "step_by_hand"))}
    assert fixed["schedule"]["status"] == "same"
    assert fixed["schedule"]["burn"].startswith("PyTorch's recursion by hand")


def test_proving_runs_apply_the_fixes_by_hand():
    found = proving_runs(EXPERIMENTS, set())
    assert found["clip__fix"]["burn_fixes"] == ["clip_by_global_norm"]
    assert found["muon__fix"]["burn_fixes"] == ["muon_lr_per_parameter"]
    assert not {"clip_by_hand__fix", "clip_by_hand_loose__fix", "muon_by_hand__fix"} & set(found)
    assert "clipped by one global norm by hand" in found["clip__fix"]["description"]
    assert found["smooth__fix"]["burn_fixes"] == ["smoothed_targets_in_dtype"]
    assert found["linear__fix"]["burn_fixes"] == ["pytorch_schedule"]
    assert "PyTorch's recursive schedule written by hand" in found["linear__fix"]["description"]
    assert not {f"{kind}_by_hand__fix" for kind in SCHEDULES} & set(found)
    smooth = {r["hyperparameter"]: r for r in diff_rows(experiment_spec(
        small_config(3, **found), "smooth__fix"))}  # fmt: skip
    assert smooth["smoothed targets"]["status"] == "same"
