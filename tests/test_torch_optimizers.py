"""The PyTorch trainer's optimizers, schedules and clipping, read back from short runs on the
real dataset: train() called directly, a few steps each (no Burn binary needed)."""

from __future__ import annotations

import inspect
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from conftest import ADAM, SGD, small_config
from optimizer_examples import ADAGRAD, ADAMW, RMSPROP
from torch_burn_parity.config.parity_config import FRAMEWORK_DEFAULTS, HYPERPARAMETERS
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.config.spec import Spec
from torch_burn_parity.io.parity_io import read_dataset
from torch_burn_parity.models import model_specs
from torch_burn_parity.training.train_torch import OPTIMIZERS, train

PARAM_NAMES = model_specs.CNN1D.param_names  # the seed model's

# Every hyperparameter away from PyTorch's default, so that one not passed would show.
GIVEN = {
    "sgd": dict(SGD, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=1e-3),
    "adam": dict(ADAM, lr=0.02, betas=[0.8, 0.99], eps=1e-6, weight_decay=1e-3, amsgrad=True),
    "adamw": dict(ADAMW, lr=0.02, betas=[0.8, 0.99], eps=1e-6, weight_decay=0.05, amsgrad=True),
    "adagrad": dict(ADAGRAD, lr_decay=0.01, eps=1e-6, weight_decay=1e-3),
    "rmsprop": dict(RMSPROP, alpha=0.9, eps=1e-6, weight_decay=1e-3, momentum=0.5, centered=True),
}
# Another value of each hyperparameter, to see it reach the update.
OTHER = {"lr": 0.03, "betas": [0.5, 0.9], "eps": 1e-2, "weight_decay": 0.1, "amsgrad": False,
         "momentum": 0.2, "dampening": 0.5, "nesterov": True, "lr_decay": 0.5, "alpha": 0.5,
         "centered": False, "initial_accumulator_value": 0.1}  # fmt: skip


@pytest.fixture(scope="module")
def arrays(dataset):
    torch.set_num_threads(1)
    return read_dataset(dataset)[0]


def spec_of(exp: dict, steps: int = 4) -> Spec:
    return experiment_spec(small_config(steps, e=exp), "e")


def run(arrays, exp: dict, steps: int = 4, dtype: str = "f64") -> dict:
    return train(spec_of(exp, steps), arrays, dtype)


def deltas(arrays, block: dict) -> list[np.ndarray]:
    """Each step's parameter change, all parameters flattened into one vector."""
    start = np.concatenate([np.asarray(arrays[n][1], dtype=np.float32) for n in PARAM_NAMES])
    after = [
        np.concatenate([block["trajectory"]["params"][n][t] for n in PARAM_NAMES])
        for t in range(len(block["losses"]))
    ]
    before = [start.astype(np.float64), *after[:-1]]
    return [a - b for a, b in zip(after, before, strict=True)]


def grads(block: dict, t: int) -> np.ndarray:
    return np.concatenate([block["trajectory"]["grads"][n][t] for n in PARAM_NAMES])


# --- optimizers -----------------------------------------------------------------------------


@pytest.mark.parametrize("optimizer", list(GIVEN))
def test_held_hyperparameters_are_those_given(arrays, optimizer):
    block = run(arrays, GIVEN[optimizer])
    held = block["meta"]["hyperparameters"]
    assert list(held) == list(HYPERPARAMETERS[optimizer])
    assert held == {k: v for k, v in GIVEN[optimizer].items() if k != "optimizer"}
    assert block["meta"]["optimizer"] == optimizer
    assert all(math.isfinite(x) for x in block["losses"])


@pytest.mark.parametrize(
    ("optimizer", "key"),
    [(o, k) for o in GIVEN for k in HYPERPARAMETERS[o] if not (o == "sgd" and k == "nesterov")],
)
def test_every_hyperparameter_reaches_the_update(arrays, optimizer, key):
    """Changed in the spec (past the config check: initial_accumulator_value 0.1), each value
    is held by PyTorch and changes the trajectory."""
    spec = spec_of(GIVEN[optimizer], steps=8)
    base = train(spec, arrays, "f64")
    other = replace(spec, hyperparameters={**spec.hyperparameters, key: OTHER[key]})
    changed = train(other, arrays, "f64")
    assert changed["meta"]["hyperparameters"][key] == OTHER[key]
    assert changed["trajectory"]["params"] != base["trajectory"]["params"]


def test_nesterov_reaches_the_update(arrays):
    base = run(arrays, dict(GIVEN["sgd"], dampening=0.0))
    nesterov = run(arrays, dict(GIVEN["sgd"], dampening=0.0, nesterov=True))
    assert nesterov["meta"]["hyperparameters"]["nesterov"] is True
    assert nesterov["trajectory"]["params"] != base["trajectory"]["params"]


@pytest.mark.parametrize("optimizer", list(GIVEN))
def test_kept_defaults_are_pytorchs(arrays, optimizer):
    """Every hyperparameter but lr left to PyTorch: it holds the defaults parity_config lists,
    which are those of the torch.optim class's signature."""
    keepable = list(FRAMEWORK_DEFAULTS["torch"][optimizer])
    assert keepable == [k for k in HYPERPARAMETERS[optimizer] if k != "lr"]
    block = run(arrays, dict(GIVEN[optimizer], keep_defaults={"torch": keepable}), steps=2)
    held = block["meta"]["hyperparameters"]
    assert held == {"lr": GIVEN[optimizer]["lr"], **FRAMEWORK_DEFAULTS["torch"][optimizer]}
    signature = inspect.signature(OPTIMIZERS[optimizer]).parameters
    for key in keepable:
        default = signature[key].default
        assert held[key] == (list(default) if key == "betas" else default), key
    assert block["meta"]["kept_defaults"] == keepable


def test_adam_without_amsgrad_gets_pytorchs_default_explicitly(arrays):
    spec = spec_of(ADAM)
    assert "amsgrad" not in ADAM and spec.hyperparameters["amsgrad"] is False
    block = train(spec, arrays, "f32")
    assert block["meta"]["hyperparameters"]["amsgrad"] is False
    explicit = run(arrays, dict(ADAM, amsgrad=False), dtype="f32")
    assert explicit["trajectory"] == block["trajectory"]


# --- schedules ------------------------------------------------------------------------------


def scheduled(arrays, schedule: dict | None, lr: float = 0.5, steps: int = 12) -> dict:
    exp = dict(SGD, lr=lr) if schedule is None else dict(SGD, lr=lr, schedule=schedule)
    return run(arrays, exp, steps=steps)


def test_constant_schedule_when_absent(arrays):
    block = scheduled(arrays, None)
    assert block["lrs"] == [0.5] * 12
    assert block["meta"]["schedule"] == {"kind": "constant"}
    assert scheduled(arrays, {"kind": "constant"})["trajectory"] == block["trajectory"]


def test_linear_schedule(arrays):
    block = scheduled(arrays, {"kind": "linear", "final_lr": 0.05, "num_steps": 10})
    lrs = block["lrs"]
    assert lrs[0] == 0.5
    assert lrs[5] == pytest.approx((0.5 + 0.05) / 2, rel=1e-14)  # half way
    assert lrs[10] == pytest.approx(0.05, rel=1e-14)  # the last: final_lr (PyTorch: recursive)
    assert lrs[11] == lrs[10]  # then stays
    assert lrs == sorted(lrs, reverse=True)
    assert block["meta"]["schedule"] == {
        "kind": "linear", "class": "LinearLR", "start_factor": 1.0, "end_factor": 0.05 / 0.5,
        "total_iters": 10, "base_lr": 0.5,
    }  # fmt: skip
    assert block["meta"]["hyperparameters"]["lr"] == 0.5  # the initial lr


def test_cosine_schedule(arrays):
    block = scheduled(arrays, {"kind": "cosine", "min_lr": 0.1, "num_steps": 10})
    lrs = block["lrs"]
    assert lrs[0] == 0.5
    assert lrs[5] == pytest.approx((0.5 + 0.1) / 2, rel=1e-14)  # half way
    assert lrs[10] == pytest.approx(0.1, rel=1e-14)  # the minimum at num_steps
    assert lrs[11] > lrs[10]  # past num_steps it follows the curve back up
    assert lrs[11] == pytest.approx(0.1 + 0.2 * (1 + math.cos(11 * math.pi / 10)), rel=1e-12)
    assert block["meta"]["schedule"] == {
        "kind": "cosine", "class": "CosineAnnealingLR", "T_max": 10, "eta_min": 0.1,
        "base_lr": 0.5,
    }  # fmt: skip


def test_exponential_schedule(arrays):
    block = scheduled(arrays, {"kind": "exponential", "gamma": 0.8})
    assert block["lrs"][0] == 0.5
    assert block["lrs"] == pytest.approx([0.5 * 0.8**k for k in range(12)], rel=1e-14)
    assert block["meta"]["schedule"] == {
        "kind": "exponential", "class": "ExponentialLR", "gamma": 0.8, "base_lr": 0.5,
    }  # fmt: skip


def test_step_schedule(arrays):
    block = scheduled(arrays, {"kind": "step", "step_size": 4, "gamma": 0.5})
    lrs = block["lrs"]
    # The boundaries: steps 0-3 at lr, 4-7 at lr·γ, 8-11 at lr·γ².
    assert lrs == [0.5] * 4 + [0.25] * 4 + [0.125] * 4
    assert block["meta"]["schedule"] == {
        "kind": "step", "class": "StepLR", "step_size": 4, "gamma": 0.5, "base_lr": 0.5,
    }  # fmt: skip


@pytest.mark.parametrize(
    "schedule",
    [
        None,
        {"kind": "linear", "final_lr": 0.05, "num_steps": 10},
        {"kind": "cosine", "min_lr": 0.1, "num_steps": 10},
        {"kind": "exponential", "gamma": 0.8},
        {"kind": "step", "step_size": 4, "gamma": 0.5},
    ],
    ids=["constant", "linear", "cosine", "exponential", "step"],
)
def test_each_step_uses_the_recorded_lr(arrays, schedule):
    """Plain SGD in f64: each step moves the parameters by −lr·g with that step's lr."""
    block = scheduled(arrays, schedule)
    for t, delta in enumerate(deltas(arrays, block)):
        assert np.max(np.abs(delta + block["lrs"][t] * grads(block, t))) < 1e-15, t


# --- clipping -------------------------------------------------------------------------------


def clipped(arrays, clip: dict | None) -> dict:
    return run(arrays, dict(SGD, lr=1.0, clip_grad=clip), steps=6)


def test_no_clipping(arrays):
    block = clipped(arrays, None)
    assert (block["meta"]["clip_grad"], block["meta"]["clip_scope"]) == (None, None)
    for t, delta in enumerate(deltas(arrays, block)):
        assert np.max(np.abs(delta + grads(block, t))) < 1e-15


def test_clip_norm_is_one_norm_over_all_parameters(arrays):
    block = clipped(arrays, {"norm": 1e-3})
    assert block["meta"]["clip_grad"] == {"norm": 1e-3}
    assert block["meta"]["clip_scope"] == "all parameters (one norm)"
    sizes = [len(block["trajectory"]["grads"][n][0]) for n in PARAM_NAMES]
    for t, delta in enumerate(deltas(arrays, block)):
        g = grads(block, t)  # recorded before clipping
        total = np.linalg.norm(g)
        assert total > 1e-2
        # PyTorch: max_norm / (total + 1e-6), one coefficient for every parameter.
        assert np.max(np.abs(delta + g * (1e-3 / (total + 1e-6)))) < 1e-15
        assert np.linalg.norm(delta) == pytest.approx(1e-3, rel=1e-3)
        # Burn clips each parameter tensor to the norm separately: not what PyTorch did.
        per_tensor = np.split(delta, np.cumsum(sizes)[:-1])
        assert max(np.linalg.norm(d) for d in per_tensor) < 0.9e-3


def test_clip_value_is_elementwise(arrays):
    block = clipped(arrays, {"value": 1e-3})
    assert block["meta"]["clip_grad"] == {"value": 1e-3}
    assert block["meta"]["clip_scope"] == "elementwise"
    for t, delta in enumerate(deltas(arrays, block)):
        g = grads(block, t)
        assert (np.abs(g) > 1e-3).any() and (np.abs(g) < 1e-3).any()  # both kinds of element
        assert np.max(np.abs(delta + np.clip(g, -1e-3, 1e-3))) < 1e-15
