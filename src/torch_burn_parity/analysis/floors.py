"""The rounding floor: how far two frameworks' f64 values may be apart by rounding alone,
from how far each framework's own f32 run is from its own f64 run.

An f32 run's distance from the f64 run of the same framework measures the rounding the
computation amplifies; the same computation in f64 rounds 2^-29 times as much (EPS_RATIO).
SAFETY leaves room for two frameworks' different orders of operations, and ABSOLUTE_FLOOR
is the floor under the floor. The verdicts (judgement/verdict.py) and the layers table
(layers_table.py: one quantity's floor) both measure against it.
"""

from __future__ import annotations

import numpy as np

EPS_RATIO = 2.0**-52 / 2.0**-23  # f64 machine epsilon over f32 machine epsilon = 2^-29
SAFETY = 100.0  # headroom for the different order of operations in two frameworks
# Floor under the floor: a gap of a few f64 ulps of O(1) parameters is rounding whatever
# the f32 noise says (e.g. at step 1, where both f32 gaps can be tiny).
ABSOLUTE_FLOOR = 64 * 2.0**-52


def rounding_floor(torch_f64: np.ndarray, burn_f64: np.ndarray) -> np.ndarray:
    """Per-step f64 rounding floor from the two f32-vs-f64 gap series."""
    noise = np.fmax(np.asarray(torch_f64, float), np.asarray(burn_f64, float))
    noise = np.maximum.accumulate(np.nan_to_num(noise, nan=np.inf))
    return np.maximum(noise * EPS_RATIO * SAFETY, ABSOLUTE_FLOOR)
