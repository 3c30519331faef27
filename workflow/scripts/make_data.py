"""Write the shared dataset file: the seed's inputs and initial weights, rounded to f32 once.

Every value is computed in f64 (Python floats) with the seed's formulas and rounded to
f32 exactly once, when it is packed. Both trainers read this one file, so neither can
regenerate the data or the weights slightly differently.

    python workflow/scripts/make_data.py --out results/data/dataset.bin
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parity_io import DTYPE_F32, DTYPE_I64, encode_dataset, write_atomic  # noqa: E402

# The seed's problem size: 96 sequences of length 16 in 3 classes; Conv1d(1→4, k=5).
N, LENGTH, CLASSES, CHANNELS, KERNEL = 96, 16, 3, 4, 5
FLAT = CHANNELS * (LENGTH - KERNEL + 1)  # 4 × 12 = 48


def inputs() -> tuple[list[float], list[int]]:
    """x[k][t] = sin(f·t + 0.37k) + 0.3·sin(2.3t + 1.1k), f = 0.3·(c+1), c = k mod 3."""
    xs, ys = [], []
    for k in range(N):
        c = k % CLASSES
        f = 0.3 * (c + 1)
        xs.extend(
            math.sin(f * t + 0.37 * k) + 0.3 * math.sin(2.3 * t + 1.1 * k) for t in range(LENGTH)
        )
        ys.append(c)
    return xs, ys


def initial_weights() -> dict[str, tuple[list[int], list[float]]]:
    """The seed's deterministic init, in PyTorch's names and layouts ([out, in, k], [out, in])."""
    return {
        "conv.weight": (
            [CHANNELS, 1, KERNEL],
            [0.4 * math.sin(i + 1) for i in range(CHANNELS * KERNEL)],
        ),
        "conv.bias": ([CHANNELS], [0.02 * o - 0.03 for o in range(CHANNELS)]),
        "fc.weight": ([CLASSES, FLAT], [0.15 * math.cos(i + 1) for i in range(CLASSES * FLAT)]),
        "fc.bias": ([CLASSES], [0.0] * CLASSES),
    }


def dataset_bytes() -> bytes:
    xs, ys = inputs()
    arrays = {"x": ([N, 1, LENGTH], DTYPE_F32, xs), "y": ([N], DTYPE_I64, ys)}
    for name, (shape, values) in initial_weights().items():
        arrays[name] = (shape, DTYPE_F32, values)
    return encode_dataset(arrays)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="dataset file to write")
    args = parser.parse_args(argv)
    blob = dataset_bytes()
    write_atomic(args.out, blob)
    print(f"wrote {args.out}: {len(blob)} bytes, sha256 {hashlib.sha256(blob).hexdigest()}")


if __name__ == "__main__":
    main()
