"""The verdict rule on synthetic gap series."""

from __future__ import annotations

import numpy as np
import pytest

import verdict as v

STEPS = 50
F32_NOISE = np.linspace(2e-8, 5e-7, STEPS)  # a typical f32-vs-f64 gap series


def test_rounding_sized_gap_is_equivalent():
    f64_gap = F32_NOISE * v.EPS_RATIO * 3  # well within SAFETY × rounding
    result = v.classify(f64_gap, F32_NOISE, F32_NOISE * 0.5)
    assert result.label == v.EQUIVALENT and result.first_above_floor is None


def test_growing_gap_above_floor_is_a_difference():
    f64_gap = np.geomspace(2e-10, 3.7e-6, STEPS)
    result = v.classify(f64_gap, F32_NOISE, F32_NOISE)
    assert result.label == v.UNEXPLAINED
    assert result.first_above_floor == 1
    assert result.f64_gap == pytest.approx(3.7e-6)


def test_replay_that_closes_the_gap_explains_it():
    f64_gap = np.geomspace(2e-10, 3.7e-6, STEPS)
    replay = np.full(STEPS, 2e-16)
    result = v.classify(f64_gap, F32_NOISE, F32_NOISE, replay, cause="f32 factors")
    assert result.label == v.EXPLAINED and result.cause == "f32 factors"
    assert result.replay_gap == pytest.approx(2e-16)


def test_replay_that_does_not_close_it_leaves_it_unexplained():
    f64_gap = np.geomspace(2e-10, 3.7e-6, STEPS)
    result = v.classify(f64_gap, F32_NOISE, F32_NOISE, f64_gap / 2, cause="f32 factors")
    assert result.label == v.UNEXPLAINED


def test_gap_that_leaves_the_floor_late_is_located():
    f64_gap = np.full(STEPS, 1e-16)
    f64_gap[30:] = 1e-9
    result = v.classify(f64_gap, F32_NOISE, F32_NOISE)
    assert result.first_above_floor == 31


def test_nan_gap_is_never_equivalent():
    f64_gap = np.full(STEPS, 1e-16)
    f64_gap[10] = np.nan
    result = v.classify(f64_gap, F32_NOISE, F32_NOISE)
    assert result.label == v.UNEXPLAINED and result.first_above_floor == 11


def test_floor_never_falls():
    noise = np.array([1e-7, 1e-9, 1e-9])
    floor = v.rounding_floor(noise, noise)
    assert (np.diff(floor) >= 0).all()


def test_growth_and_first_step_above_tolerance():
    assert v.growth(np.array([1e-10, 1e-8, 1e-6])) == pytest.approx(1e4)
    assert v.first_step_above(np.array([1e-7, 5e-7, 2e-6]), 1e-6) == 3
    assert v.first_step_above(np.array([1e-7]), 1e-6) is None


def test_every_replay_must_close_the_gap():
    f64_gap = np.geomspace(2e-10, 3.7e-6, STEPS)
    closes, stays = np.full(STEPS, 1e-16), f64_gap
    assert v.classify(f64_gap, F32_NOISE, F32_NOISE, [closes, closes]).label == v.EXPLAINED
    assert v.classify(f64_gap, F32_NOISE, F32_NOISE, [closes, stays]).label == v.UNEXPLAINED


ARITHMETIC = "Burn's f32 arithmetic"


def test_causes_are_shared_out_by_the_held_values_replay():
    # adam: Burn's held values alone leave 1.18e-07 of a 3.71e-06 gap (3.2 %).
    found = v.causes(3.71e-6, 1.18e-7, [], ["betas", "eps"], ARITHMETIC)
    assert [name for name, *_ in found] == [ARITHMETIC, "Burn's f32 storage of betas, eps"]
    assert [how for *_, how in found] == ["the remainder", "measured"]
    assert found[0][1] == pytest.approx(1 - 1.18e-7 / 3.71e-6)
    assert found[1][1] == pytest.approx(1.18e-7 / 3.71e-6)


def test_a_differing_config_line_that_accounts_for_the_gap_is_the_only_cause():
    row = {"hyperparameter": "eps", "torch": "1e-08", "burn": "1e-05"}
    found = v.causes(8.985446133e-3, 8.985446074e-3, [row], ["betas"], ARITHMETIC)
    name = "config diff: eps (torch 1e-08, burn 1e-05), with f32 storage of betas"
    assert found == [(name, pytest.approx(1.0), "measured")]
    assert v.cause_text(found) == f"{name} (100.0% of the gap, measured)"


def test_the_optimizer_does_not_choose_the_cause():
    # Same evidence, whatever the label of the arithmetic: values explain all of it.
    found = v.causes(1e-6, 1e-6, [], ["momentum"], "anything")
    assert found == [("Burn's f32 storage of momentum", 1.0, "measured")]


@pytest.mark.parametrize(
    ("share", "named"),
    [(v.MIN_SHARE * 0.99, 1), (v.MIN_SHARE * 1.01, 2)],
)
def test_a_cause_under_the_minimum_share_is_not_named(share, named):
    found = v.causes(1.0, 1.0 - share, [], ["eps"], ARITHMETIC)
    assert len(found) == named
