"""`sine`, the seed's problem: 96 sequences of length 16 in 3 classes, x [96, 1, 16].

Computed in f64 (Python floats) and rounded to f32 once, when make_data.py packs them: the
seed's values, bit for bit.
"""

from __future__ import annotations

import math

SAMPLES, LENGTH, CLASSES = 96, 16, 3


def arrays() -> tuple[list[float], list[int]]:
    """x[k][t] = sin(f·t + 0.37k) + 0.3·sin(2.3t + 1.1k), f = 0.3·(c+1), c = k mod 3; y = c."""
    xs, ys = [], []
    for k in range(SAMPLES):
        c = k % CLASSES
        f = 0.3 * (c + 1)
        xs.extend(
            math.sin(f * t + 0.37 * k) + 0.3 * math.sin(2.3 * t + 1.1 * k) for t in range(LENGTH)
        )
        ys.append(c)
    return xs, ys
