"""Compare two run files key by key, in the seed's format.

    python -m torch_burn_parity.analysis.compare results/runs/adam/torch-f32.json \\
        results/runs/adam/burn-f32.json --tol 1e-6

Prints one line per compared key (`sgd.losses  n=100  max|diff|=1.79e-07`), then
`worst=… tol=… OK|MISMATCH`. Compares the seed's fields (losses, final loss and correct
count, final params) of every experiment the first file holds, so the seed's own
pt.json/burn.json work unchanged; and the final buffers (running statistics,
`cnn_bn_sgd.buffers.bn.running_var`) of a model that has any (no line for cnn1d). A
non-finite value on either side is never a match: its difference is NaN and the verdict is
MISMATCH.

Values are numbers or nested lists of numbers of any depth, flattened in row-major order:
the seed writes `p.tolist()` (conv.weight as [4][1][5]), the pipeline flat lists ([20]),
and the two compare with each other. Two nested values must have the same shape. Anything
else (a string, an object, null, true/false, ragged nesting, an experiment, `final` or
`params` that is not an object) stops with one line naming the file and the key, exit 2.
"""

from __future__ import annotations

import argparse
import json
import math
import reprlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from torch_burn_parity.config import machine
from torch_burn_parity.io.parity_io import FormatError, read_run, write_text_atomic

Shape = tuple[int, ...]


def describe(value: Any) -> str:
    """What a JSON value is, for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({json.dumps(value)})"
    if isinstance(value, str):
        return f"a string ({reprlib.repr(value)})"
    return "an object" if isinstance(value, dict) else f"a {type(value).__name__}"


def dims(shape: Shape) -> str:
    return f"a list of shape {''.join(f'[{n}]' for n in shape)}" if shape else "a number"


def flatten(value: Any, where: str) -> tuple[list[float], Shape]:
    """The numbers of a number or nested list, in row-major order, and its shape.

    ``where`` (``file: key``) names the value in the FormatError for anything else.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return [float(value)], ()
        except OverflowError:
            raise FormatError(f"{where}: integer too large for a float") from None
    if isinstance(value, np.ndarray):  # a tensors file's (flat)
        return value.reshape(-1).tolist(), value.shape
    if not isinstance(value, list):
        found = describe(value)
        raise FormatError(f"{where}: expected numbers or nested lists of numbers, found {found}")
    values: list[float] = []
    inner: Shape | None = None
    for i, item in enumerate(value):
        flat, shape = flatten(item, f"{where}[{i}]")
        if inner is not None and shape != inner:
            raise FormatError(
                f"{where}: ragged nesting, [0] is {dims(inner)} but [{i}] is {dims(shape)}"
            )
        values += flat
        inner = shape
    return values, (len(value), *(inner or ()))


def as_object(value: Any, where: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise FormatError(f"{where}: expected an object, found {describe(value)}")
    return value


def compared_keys(block: Any, where: str) -> list[tuple[str, Any]]:
    """The seed's keys of one experiment block, in the seed's order, then its buffers.

    ``where`` is ``file: experiment``; raises FormatError when the block, its ``final``,
    its ``params`` or its ``buffers`` is not an object.
    """
    block = as_object(block, where)
    final = as_object(block.get("final", {}), f"{where}.final")
    params = as_object(block.get("params", {}), f"{where}.params")
    buffers = as_object(block.get("buffers", {}), f"{where}.buffers")
    keys = [("losses", block.get("losses"))]
    keys += [("final.loss", final.get("loss"))]
    if not ("correct" in final and final["correct"] is None):  # null: a regression's (mse)
        keys += [("final.correct", final.get("correct"))]
    keys += [(f"params.{name}", v) for name, v in params.items()]
    keys += [(f"buffers.{name}", v) for name, v in buffers.items()]
    return keys


def max_abs_diff(a: list[float], b: list[float]) -> float:
    """max |a − b|; NaN if any value on either side is not finite."""
    if not all(math.isfinite(x) for x in a + b):
        return math.nan
    return max((abs(x - y) for x, y in zip(a, b, strict=True)), default=0.0)


def compare(a: dict, b: dict, a_name: str, b_name: str) -> list[tuple[str, int, float]]:
    """(key, n, max|diff|) for every compared key of every experiment of ``a``."""
    rows = []
    for experiment, block_a in a.items():
        if experiment not in b:
            raise FormatError(f"{b_name}: no experiment {experiment!r} (it is in {a_name})")
        a_keys = compared_keys(block_a, f"{a_name}: {experiment}")
        b_keys = dict(compared_keys(b[experiment], f"{b_name}: {experiment}"))
        for key, value_a in a_keys:
            label = f"{experiment}.{key}"
            if value_a is None or b_keys.get(key) is None:
                missing = a_name if value_a is None else b_name
                raise FormatError(f"{missing}: no {label}")
            va, shape_a = flatten(value_a, f"{a_name}: {label}")
            vb, shape_b = flatten(b_keys[key], f"{b_name}: {label}")
            # A flat list (the pipeline's) carries no shape; two nested ones must agree.
            nested = len(shape_a) > 1 and len(shape_b) > 1
            if len(va) != len(vb) or (nested and shape_a != shape_b):
                raise FormatError(
                    f"{label}: {dims(shape_a)} in {a_name}, {dims(shape_b)} in {b_name}"
                )
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


def run_cpu(run: dict) -> str | None:
    """The CPU a run file's first experiment ran on (model; SIMD flags), or None if unrecorded."""
    block = next(iter(run.values()), {})
    return machine.label(block.get("meta")) if isinstance(block, dict) else None


def cpu_note(a: dict, b: dict, a_name: str, b_name: str) -> str | None:
    """A one-line note when the two runs came from different CPUs, or one does not say: their
    differences then include each CPU's own rounding (docs/cpu.md: What depends on the CPU)."""
    ma, mb = run_cpu(a), run_cpu(b)
    if a_name == b_name or ma is not None and ma == mb:
        return None
    if ma is None or mb is None:
        which = " and ".join(n for n, m in ((a_name, ma), (b_name, mb)) if m is None)
        verb = "do not record the CPUs they" if ma is mb else "does not record the CPU it"
        what = f"{which} {verb} ran on"
    else:
        what = f"the runs came from different CPUs ({a_name}: {ma}; {b_name}: {mb})"
    return f"compare: note: {what}; the differences may include each CPU's own rounding"


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
        run_a, run_b = read_run(args.a), read_run(args.b)
        rows = compare(run_a, run_b, str(args.a), str(args.b))
    except FormatError as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    if (note := cpu_note(run_a, run_b, str(args.a), str(args.b))) is not None:
        print(note, file=sys.stderr)
    text = render(rows, args.tol)
    sys.stdout.write(text)
    if args.out:
        write_text_atomic(args.out, text)
    return 1 if args.strict and text.rstrip().endswith("MISMATCH") else 0


if __name__ == "__main__":
    sys.exit(main())
