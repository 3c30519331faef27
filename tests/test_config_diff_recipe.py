"""config_diff.py: the loss, label smoothing, and the rows of Burn's by-hand fixes (the
schedule and the clipping written by hand), row by row."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from conftest import SGD
from torch_burn_parity.analysis import config_diff as cd
from torch_burn_parity.config import burn_fixes
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.config.spec import Spec


def row(name, torch, burn, status, note=""):
    return {"hyperparameter": name, "torch": torch, "burn": burn, "status": status, "note": note}


# A resolved SGD experiment (cross-entropy, no smoothing, no schedule, no clipping, no fix).
PLAIN = experiment_spec({"steps": 3, "batch_size": 16, "experiments": {"e": SGD}}, "e")


def spec_with(**fields) -> Spec:
    return replace(PLAIN, **fields)


SMOOTHING_F32 = float(np.float32(0.1))  # 0.10000000149011612


def test_the_default_cross_entropy_without_smoothing_adds_no_row():
    assert cd.loss_rows(PLAIN) == []
    assert cd.loss_rows(spec_with(loss="cross_entropy", label_smoothing=0.0)) == []


def test_an_mse_loss_is_named_with_each_frameworks_function():
    assert cd.loss_rows(spec_with(loss="mse")) == [
        row("loss", "mse_loss (mean of (out − y)²)",
            "MseLoss, Reduction::Mean (mean of (out − y)²)", "same"),
    ]  # fmt: skip


def test_label_smoothing_is_held_in_f32_by_burn_and_its_targets_computed_in_f32():
    assert cd.loss_rows(spec_with(label_smoothing=0.1)) == [
        row("label_smoothing", "0.1", "0.1", "f32 storage",  # shown as the f32 reads
            f"Burn holds the f32 value {json.dumps(SMOOTHING_F32)}"),
        row("smoothed targets", "the run's dtype", "f32", "precision", cd.LOSS_NOTE),
    ]  # fmt: skip
    assert cd.LOSS_NOTE.startswith("PyTorch: (1 − ε)·(−log p_label)")


def test_smoothing_by_hand_holds_pytorchs_value_in_the_runs_dtype():
    spec = spec_with(label_smoothing=0.1, burn_fixes=[burn_fixes.SMOOTH])
    assert cd.loss_rows(spec) == [
        row("label_smoothing", "0.1", "0.1", "same"),
        row("smoothed targets", "the run's dtype", "the run's dtype, by hand", "same",
            "burn_fixes: smoothed_targets_in_dtype"),
    ]  # fmt: skip


def test_smoothing_follows_an_mse_loss_row_in_that_order():
    found = cd.loss_rows(spec_with(loss="mse", label_smoothing=0.1))
    assert [r["hyperparameter"] for r in found] == ["loss", "label_smoothing", "smoothed targets"]


SCHEDULE = {"kind": "step", "step_size": 10, "gamma": 0.5}


def schedule_spec(**more) -> Spec:
    return spec_with(schedule=SCHEDULE, hyperparameters={"lr": 0.01}, **more)


def test_a_schedule_by_hand_is_pytorchs_recursion_and_the_same():
    assert cd.schedule_rows(schedule_spec(burn_fixes=[burn_fixes.SCHEDULE])) == [
        row("schedule", "StepLR(step_size=10, gamma=0.5), recursive",
            "PyTorch's recursion by hand (TorchSchedule), its lr passed to Burn's step", "same",
            "burn_fixes: pytorch_schedule"),
    ]  # fmt: skip
    # another fix leaves Burn's own schedule
    assert cd.schedule_rows(schedule_spec(burn_fixes=[burn_fixes.CLIP]))[0]["status"] == "formula"
    assert cd.schedule_rows(schedule_spec())[0]["burn"].startswith("Step(initial_lr=0.01,")


@pytest.mark.parametrize("mode", ["norm", "value"])
def test_clipping_by_hand_holds_the_threshold_as_pytorch_does(mode):
    spec = spec_with(clip_grad={mode: 0.1}, burn_fixes=[burn_fixes.CLIP])
    assert cd.clip_rows(spec) == [
        row(f"clip_grad.{mode}", "0.1", "0.1", "same"),
        row(f"clip_grad.{mode} scope", cd.CLIP_SCOPE[mode][0],
            "one norm over all parameters, by hand before Burn's step: max/(‖g‖ + 1e-6)",
            "same", "burn_fixes: clip_by_global_norm"),
    ]  # fmt: skip
    held = cd.clip_rows(spec_with(clip_grad={mode: 0.1}, burn_fixes=[burn_fixes.SMOOTH]))
    assert held[0]["status"] == "f32 storage"
    assert held[1] == row(f"clip_grad.{mode} scope", *cd.CLIP_SCOPE[mode])
