"""Compare two run files key by key, in the seed's format.

    python workflow/scripts/compare.py results/runs/adam/torch-f32.json \\
        results/runs/adam/burn-f32.json --tol 1e-6

Prints one line per compared key (`sgd.losses  n=100  max|diff|=1.79e-07`), then
`worst=… tol=… OK|MISMATCH`. Compares the seed's fields (losses, final loss and correct
count, final params) of every experiment the first file holds, so the seed's own
pt.json/burn.json work unchanged. A non-finite value on either side is never a match:
its difference is NaN and the verdict is MISMATCH.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parity_io import FormatError, read_run, write_text_atomic  # noqa: E402


def numbers(value) -> list[float]:
    if isinstance(value, list):
        return [float(v) for v in value]
    return [float(value)]


def compared_keys(block: dict) -> list[tuple[str, object]]:
    """The seed's keys of one experiment block, in the seed's order."""
    keys = [("losses", block.get("losses"))]
    final = block.get("final", {})
    keys += [("final.loss", final.get("loss")), ("final.correct", final.get("correct"))]
    keys += [(f"params.{name}", v) for name, v in block.get("params", {}).items()]
    return keys


def max_abs_diff(a: list[float], b: list[float]) -> float:
    """max |a − b|; NaN if any value on either side is not finite."""
    if not all(math.isfinite(x) for x in a + b):
        return math.nan
    return max((abs(x - y) for x, y in zip(a, b, strict=True)), default=0.0)


def compare(a: dict, b: dict, a_name: str, b_name: str) -> list[tuple[str, int, float]]:
    rows = []
    for experiment, block_a in a.items():
        if experiment not in b:
            raise FormatError(f"{b_name}: no experiment {experiment!r} (it is in {a_name})")
        b_keys = dict(compared_keys(b[experiment]))
        for key, value_a in compared_keys(block_a):
            label = f"{experiment}.{key}"
            if value_a is None or b_keys.get(key) is None:
                missing = a_name if value_a is None else b_name
                raise FormatError(f"{missing}: no {label}")
            va, vb = numbers(value_a), numbers(b_keys[key])
            if len(va) != len(vb):
                raise FormatError(f"{label}: {len(va)} values in {a_name}, {len(vb)} in {b_name}")
            rows.append((label, len(va), max_abs_diff(va, vb)))
    return rows


def render(rows: list[tuple[str, int, float]], tol: float) -> str:
    width = max(len(label) for label, _, _ in rows) + 2
    lines = [f"{label:<{width}}n={n:3d}  max|diff|={d:.2e}" for label, n, d in rows]
    diffs = [d for _, _, d in rows]
    worst = math.nan if any(math.isnan(d) for d in diffs) else max(diffs)
    verdict = "OK" if worst <= tol else "MISMATCH"  # NaN <= tol is False
    lines.append(f"worst={worst:.2e} tol={tol:g} {verdict}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="first run file (e.g. PyTorch's)")
    parser.add_argument("b", type=Path, help="second run file (e.g. Burn's)")
    parser.add_argument("--tol", type=float, default=1e-6, help="tolerance on max|diff|")
    parser.add_argument("--out", type=Path, help="also write the output to this file")
    parser.add_argument("--strict", action="store_true", help="exit with status 1 on MISMATCH")
    args = parser.parse_args(argv)
    if not args.tol > 0:
        parser.error(f"--tol must be a positive number, got {args.tol}")
    try:
        rows = compare(read_run(args.a), read_run(args.b), str(args.a), str(args.b))
    except FormatError as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    text = render(rows, args.tol)
    sys.stdout.write(text)
    if args.out:
        write_text_atomic(args.out, text)
    return 1 if args.strict and text.rstrip().endswith("MISMATCH") else 0


if __name__ == "__main__":
    sys.exit(main())
