"""`digits`: scikit-learn's handwritten digits (`load_digits`), 1,797 real 8×8 images in 10
classes, x [1797, 1, 8, 8].

The images ship inside scikit-learn (sklearn/datasets/data/digits.csv.gz): nothing is
downloaded. Their pixels are integers 0–16; each is scaled by 1/16, which is exact in f32
(a power of two), so both frameworks start from exactly the values scikit-learn gives. The
samples keep scikit-learn's order, in which the classes come round in turn (0, 1, …, 9, 0,
…), so that batches taken in rotation each hold most classes.
"""

from __future__ import annotations

SAMPLES, SIDE, CLASSES = 1797, 8, 10


def arrays() -> tuple[list[float], list[int]]:
    """x: each image's 64 pixels / 16, row by row; y: its digit."""
    from sklearn.datasets import load_digits  # about 1 s: only where the file is written

    digits = load_digits()
    pixels = digits.images.reshape(len(digits.images), SIDE * SIDE) / 16.0
    if pixels.shape[0] != SAMPLES:
        raise ValueError(f"scikit-learn's digits have {pixels.shape[0]} images, not {SAMPLES}")
    return pixels.flatten().tolist(), [int(c) for c in digits.target]
