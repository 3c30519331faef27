"""probe.py: the automatic choice of the probed gradient element."""

from __future__ import annotations

import numpy as np

from torch_burn_parity.analysis import probe


def test_the_choice_skips_gradients_that_are_rounding_noise():
    # A key bias of attention: its exact gradient is 0 (the softmax cancels it), its f64
    # gradient ±1e-19 of rounding, its f32 one 1e-10: a huge "relative error" of nothing.
    weight64 = np.array([1e-2, -3e-3, 2.9e-7, 5e-3])
    bias64 = np.array([2.7e-19, -5.4e-19, 4e-3, 0.0])
    g64 = np.concatenate([weight64, bias64])
    g32 = g64 * (1 + 1e-7)
    g32[2] = 2.9e-7 * (1 + 2e-3)  # the cancelling weight gradient: few correct f32 digits
    g32[4], g32[5], g32[7] = -2.3e-10, 2.9e-11, 1e-12
    noise = [False] * 4 + [True, True, False, True]  # an exact 0 is noise too
    assert probe.rounding_noise(g64, [4, 4]).tolist() == noise
    assert probe.most_inaccurate(g32, g64, [4, 4]) == 2


def test_the_noise_level_is_relative_to_the_elements_own_tensor():
    # 64 f64 ulps of 1e-1 are 1.4e-15: 1e-16 is noise beside it, but not beside 1e-15.
    g64 = np.array([1e-1, 1e-16, 1e-15, 1e-16])
    assert probe.rounding_noise(g64, [2, 2]).tolist() == [False, True, False, False]
    assert probe.rounding_noise(g64).tolist() == [False, True, True, True]
