"""Every threshold of the judgement, tested on both sides of its edge.

The rule's numbers are written out here as the documentation and verdict.py state them, not
read from the modules: a test that took SAFETY from verdict.py would move with it. Each edge is hit
exactly (a gap equal to its limit is not above it) and one f64 ulp past it, so moving a
constant by any factor — 2, or 1e6 — flips one side of one test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from torch_burn_parity.analysis import compare
from torch_burn_parity.judgement import verdict as v

SAFETY = 100.0  # the f64 gap may be this many times the f64-scaled f32 noise
ABSOLUTE_FLOOR = 64 * 2.0**-52  # 64 f64 ulps of a parameter of size 1: 1.42e-14
F64_OVER_F32 = 2.0**-29  # f64 machine epsilon over f32 machine epsilon
COMPARE_TOL = 1e-6  # compare.py's default --tol
STEPS = 20


def past(x: float) -> float:
    """The next f64 above x: the smallest gap that exceeds a limit of x."""
    return float(np.nextafter(x, np.inf))


def test_the_absolute_floor_is_64_ulps_of_one():
    assert ABSOLUTE_FLOOR == 64 * np.spacing(1.0) == pytest.approx(1.42e-14, rel=1e-3)


# --------------------------------------------------------------------------- SAFETY


# f32 noise of 1e-6 (a typical f32-vs-f64 gap after a few steps): SAFETY × rounding is
# 1.86e-13, 13× the absolute floor, so the absolute floor stays out of the way even if
# SAFETY were halved.
NOISE = 1e-6
EDGE = NOISE * F64_OVER_F32 * SAFETY


@pytest.mark.parametrize("step", [1, 8, STEPS])
@pytest.mark.parametrize("noisier", ["torch", "burn"])
def test_f64_gap_at_safety_times_rounding_is_rounding_one_ulp_more_is_not(step, noisier):
    # The floor follows the noisier framework's f32 gap, whichever that is.
    loud, quiet = np.full(STEPS, NOISE), np.full(STEPS, NOISE / 8)
    noise = (loud, quiet) if noisier == "torch" else (quiet, loud)
    gaps = np.full(STEPS, EDGE / 3)

    gaps[step - 1] = EDGE
    result = v.classify(gaps, *noise)
    assert result.label == v.EQUIVALENT and result.first_above_floor is None
    assert result.f64_gap == EDGE and result.floor == EDGE

    gaps[step - 1] = past(EDGE)
    result = v.classify(gaps, *noise)
    assert result.label == v.UNEXPLAINED and result.first_above_floor == step
    assert result.f64_gap == past(EDGE) and result.floor == EDGE


def test_the_floor_keeps_the_largest_noise_so_far():
    # f32 noise that falls back (a transient) does not lower the floor: rounding that
    # happened stays in the parameters.
    noise = np.full(STEPS, NOISE / 10)
    noise[4] = NOISE
    gaps = np.zeros(STEPS)
    gaps[STEPS - 1] = EDGE
    assert v.classify(gaps, noise, noise).label == v.EQUIVALENT
    gaps[STEPS - 1] = past(EDGE)
    assert v.classify(gaps, noise, noise).first_above_floor == STEPS
    # ... but it does not reach back to the steps before the noise rose.
    gaps = np.zeros(STEPS)
    gaps[3] = EDGE
    assert v.classify(gaps, noise, noise).first_above_floor == 4


def test_rounding_floor_values():
    torch = np.array([1e-7, 1e-6, 5e-7, np.nan, 2e-6])
    burn = np.array([2e-7, np.nan, 1e-7, 1e-7, 1e-6])
    expected = np.array([2e-7, 1e-6, 1e-6, 1e-6, 2e-6]) * F64_OVER_F32 * SAFETY
    np.testing.assert_array_equal(v.rounding_floor(torch, burn), expected)


def test_no_finite_noise_at_a_step_leaves_no_floor_from_there_on():
    # Both f32 runs went non-finite: their gaps say nothing about rounding any more.
    noise = np.full(5, NOISE)
    noise[2] = np.nan
    floor = v.rounding_floor(noise, noise)
    assert (floor[:2] == EDGE).all() and np.isposinf(floor[2:]).all()


# --------------------------------------------------------------------------- ABSOLUTE_FLOOR


@pytest.mark.parametrize("noise", [0.0, 1e-12])
def test_f64_gap_at_the_absolute_floor_is_rounding_one_ulp_more_is_not(noise):
    # Tiny (or no) f32 noise, as at step 1: SAFETY × rounding is 1.9e-19 or 0, and the
    # absolute floor decides.
    quiet = np.full(STEPS, noise)
    gaps = np.zeros(STEPS)
    gaps[0] = ABSOLUTE_FLOOR
    result = v.classify(gaps, quiet, quiet)
    assert result.label == v.EQUIVALENT and result.floor == ABSOLUTE_FLOOR

    gaps[0] = past(ABSOLUTE_FLOOR)
    result = v.classify(gaps, quiet, quiet)
    assert result.label == v.UNEXPLAINED and result.first_above_floor == 1


def test_absolute_floor_and_safety_floor_meet_where_the_noise_says():
    # Noise at which SAFETY × rounding equals the absolute floor: 2^-46 · 2^29 / 100.
    crossing = ABSOLUTE_FLOOR / F64_OVER_F32 / SAFETY
    below, above = crossing / 2, crossing * 2
    floor = v.rounding_floor(np.array([below, above]), np.array([0.0, 0.0]))
    assert floor[0] == ABSOLUTE_FLOOR
    assert floor[1] == pytest.approx(2 * ABSOLUTE_FLOOR, rel=1e-15)


# --------------------------------------------------------------------------- first_step_above


def test_first_step_above_an_edge_and_with_nan():
    assert v.first_step_above([1e-7, COMPARE_TOL, COMPARE_TOL], COMPARE_TOL) is None
    assert v.first_step_above([1e-7, COMPARE_TOL, past(COMPARE_TOL)], COMPARE_TOL) == 3
    # A NaN gap exceeds any limit, even an infinite one (a diverged step is never a match).
    assert v.first_step_above([1e-9, np.nan, 1e-9], 1.0) == 2
    assert v.first_step_above([np.nan], np.inf) == 1
    # A per-step limit is compared step by step.
    limit = np.array([1e-9, 1e-8, 1e-7])
    assert v.first_step_above(limit, limit) is None
    assert v.first_step_above([1e-9, past(1e-8), 1e-9], limit) == 2


# --------------------------------------------------------------------------- compare tolerance


def rows(worst: float) -> list[tuple[str, int, float]]:
    return [("e.losses", 100, 1e-13), ("e.params.fc.weight", 144, worst), ("e.final.loss", 1, 0.0)]


@pytest.mark.parametrize("tol", [1e-6, 1e-5, 3e-12])
def test_compare_worst_equal_to_tol_is_ok_one_ulp_more_is_a_mismatch(tol):
    assert compare.render(rows(tol), tol).endswith(f"worst={tol:.2e} tol={tol:g} OK\n")
    assert compare.render(rows(past(tol)), tol).endswith(" MISMATCH\n")


def test_compare_nan_is_a_mismatch_at_any_tolerance():
    assert compare.render(rows(math.nan), math.inf).endswith("worst=nan tol=inf MISMATCH\n")


def seed_run(param: float) -> dict:
    return {
        "e": {
            "losses": [0.5, 0.25],
            "final": {"loss": 0.25, "correct": 3},
            "params": {"fc.bias": [0.0, param, 0.0]},
        }
    }


@pytest.mark.parametrize(
    ("param", "status", "code"), [(COMPARE_TOL, "OK", 0), (past(COMPARE_TOL), "MISMATCH", 1)]
)
def test_compare_default_tolerance_edge(tmp_path, capsys, param, status, code):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(compare.json.dumps(seed_run(0.0)))
    b.write_text(compare.json.dumps(seed_run(param)))
    assert compare.main([str(a), str(b), "--strict"]) == code
    assert capsys.readouterr().out.splitlines()[-1] == f"worst=1.00e-06 tol=1e-06 {status}"


# --------------------------------------------------------------------------- MIN_SHARE

MIN_SHARE = 0.01  # a cause that accounts for less than 1 % of the gap is not named


def test_a_cause_at_exactly_the_minimum_share_is_named_just_under_it_is_not():
    # Shares are of the largest f64 gap (here 1.0): held_gap is the values' share.
    named = v.causes(1.0, MIN_SHARE, [], ["eps"], "arithmetic")
    assert [share for _, share, _ in named] == [1 - MIN_SHARE, MIN_SHARE]
    unnamed = v.causes(1.0, float(np.nextafter(MIN_SHARE, 0)), [], ["eps"], "arithmetic")
    assert [name for name, *_ in unnamed] == ["arithmetic"]
