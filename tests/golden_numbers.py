"""Golden numbers that hold on any CPU.

A golden file records the CPU path its numbers were computed on (`cpu_path.describe` of the
PyTorch and the Burn runs). On that path a test compares byte for byte. On another path the
same kernels run in another order, so every number may move by rounding, and only by
rounding: the test compares number by number against bounds made of the rounding floor the
verdicts use, never a literal one CPU happened to meet.

* A value of an f32 run (losses, f32 gaps, f32 compare outputs) may move by F32_MARGIN ×
  the f32 rounding noise of its step: the larger of the two frameworks' f32-vs-f64 parameter
  gaps (`torch_f64`, `burn_f64` of the golden steps table), or one f32 ulp of max(|value|, 1)
  where that is larger. A loss is bounded by the parameters' noise too: it is computed from
  them, and its own rounding is the ulp term.
* A value of an f64 comparison (`f64_f64`, f64 compare outputs) may move by F64_MARGIN × the
  rounding floor at its step (`verdict.rounding_floor`).
* A value computed once from scalars (the bias-correction factors) may move by ULP_MARGIN
  ulps of its own precision (libm's pow takes FMA or not with the CPU).
* Everything else — names, counts, steps, tolerances, the shape of each file — is equal.

The margins are measured on the small config's golden numbers: between this CPU's native
path (AVX-512), its avx2 and compatible cpu_path settings, and the machine the previous
golden file was written on, the largest move was 3.2 × the f32 noise (the other machine)
and 0.03 × the floor; each margin leaves a factor of at least 5 above that.
(benchmarks/cpu_paths.py measures the same over the default config: no verdict moves.)
"""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd

from torch_burn_parity.judgement.verdict import rounding_floor

F32_MARGIN = 16.0
F64_MARGIN = 1.0
ULP_MARGIN = 4.0
ULP = {"f32": 2.0**-23, "f64": 2.0**-52}

STEP_COLUMNS_F32 = ("torch_loss", "burn_loss", "dloss", "dparam", "torch_f64", "burn_f64")
KEY_LINE = re.compile(r"^(\S+)\s+n=\s*(\d+)\s+max\|diff\|=(\S+)$")
WORST_LINE = re.compile(r"^worst=(\S+) tol=(\S+) (OK|MISMATCH)$")


def noise_and_floor(steps_csv: str) -> tuple[np.ndarray, np.ndarray]:
    """Per step: the f32 rounding noise and the f64 rounding floor of a golden steps table."""
    table = pd.read_csv(io.StringIO(steps_csv))
    noise = np.fmax(table["torch_f64"].to_numpy(float), table["burn_f64"].to_numpy(float))
    return noise, rounding_floor(table["torch_f64"], table["burn_f64"])


def ulp(value: float, dtype: str) -> float:
    """One ulp of `value` in `dtype` (of 1 for values below 1: absolute rounding)."""
    return ULP[dtype] * max(abs(value), 1.0)


def rounding_bound(value: float, dtype: str, noise: float, floor: float) -> float:
    """How far rounding may move `value` of an f32 run, or of an f64 comparison."""
    if dtype == "f32":
        return F32_MARGIN * max(noise, ulp(value, "f32"))
    return F64_MARGIN * floor


def check_compare(name: str, new: str, gold: str, noise: float, floor: float) -> list[str]:
    """A compare output (`compare/{experiment}-{dtype}.txt`) against its golden text, with the
    experiment's largest f32 noise and f64 floor over its steps."""
    dtype = name.removesuffix(".txt").rsplit("-", 1)[1]
    lines, gold_lines = new.strip().splitlines(), gold.strip().splitlines()
    if len(lines) != len(gold_lines):
        return [f"{name}: {len(lines)} lines, golden {len(gold_lines)}"]
    problems = []
    for line, gold_line in zip(lines[:-1], gold_lines[:-1], strict=True):
        got, want = KEY_LINE.match(line), KEY_LINE.match(gold_line)
        if not got or not want or got.group(1, 2) != want.group(1, 2):
            problems.append(f"{name}: {line!r} where the golden file has {gold_line!r}")
            continue
        key, a, b = got.group(1), float(got.group(3)), float(want.group(3))
        # A sample at the decision boundary may flip class on another path: one, not more.
        limit = 1.0 if key.endswith(".correct") else rounding_bound(b, dtype, noise, floor)
        if abs(a - b) > limit:
            problems.append(f"{name}: {key} {a:.3g}, golden {b:.3g} (bound {limit:.2g})")
    got, want = WORST_LINE.match(lines[-1]), WORST_LINE.match(gold_lines[-1])
    if not got or not want or got.group(2) != want.group(2):
        return [*problems, f"{name}: last line {lines[-1]!r}, golden {gold_lines[-1]!r}"]
    worst = float(got.group(1))
    if got.group(3) != ("OK" if worst <= float(got.group(2)) else "MISMATCH"):
        problems.append(f"{name}: {lines[-1]!r} says the wrong status")
    return problems


def check_steps(name: str, new: str, gold: str) -> list[str]:
    """A per-step table (`tables/steps_{experiment}.csv`) against its golden text."""
    table, want = pd.read_csv(io.StringIO(new)), pd.read_csv(io.StringIO(gold))
    if list(table.columns) != list(want.columns) or list(table["step"]) != list(want["step"]):
        return [f"{name}: other columns or steps than the golden file's"]
    noise, floor = noise_and_floor(gold)
    problems = []
    for column in table.columns.drop("step"):
        dtype = "f32" if column in STEP_COLUMNS_F32 else "f64"
        for step, a, b, n, f in zip(table["step"], table[column], want[column], noise, floor,
                                    strict=True):  # fmt: skip
            limit = rounding_bound(b, dtype, n, f)
            if not abs(a - b) <= limit:
                problems.append(f"{name}: {column} at step {step} {a:.3g}, golden {b:.3g} "
                                f"(bound {limit:.2g})")  # fmt: skip
    return problems


def check_bias_correction(name: str, new: str, gold: str) -> list[str]:
    """The bias-correction table: factors computed once from scalars, in f32 and in f64."""
    table, want = pd.read_csv(io.StringIO(new)), pd.read_csv(io.StringIO(gold))
    keys = ["experiment", "t"]
    if list(table.columns) != list(want.columns) or not table[keys].equals(want[keys]):
        return [f"{name}: other columns or rows than the golden file's"]
    problems = []
    # rel_err = burn_f32 / f64 − 1 moves by an f32 ulp of the factor over the factor.
    for column, dtype in (("burn_f32", "f32"), ("f64", "f64"), ("rel_err", "f32")):
        limit = np.array([ULP_MARGIN * ulp(1.0 if column == "rel_err" else v, dtype)
                          for v in want[column]])  # fmt: skip
        bad = ~(np.abs(table[column] - want[column]) <= limit)
        problems += [f"{name}: {column} at row {i}" for i in np.flatnonzero(bad)]
    return problems


def check(files: dict[str, str], golden: dict[str, str]) -> list[str]:
    """Every golden file against the new text, within the bounds above."""
    problems = []
    for name, gold in golden.items():
        new = files[name]
        if name.startswith("compare/"):
            experiment = name.removeprefix("compare/").rsplit("-", 1)[0]
            noise, floor = noise_and_floor(golden[f"tables/steps_{experiment}.csv"])
            problems += check_compare(name, new, gold, float(noise.max()), float(floor.max()))
        elif name.startswith("tables/steps_"):
            problems += check_steps(name, new, gold)
        elif name == "tables/bias_correction.csv":
            problems += check_bias_correction(name, new, gold)
        else:
            raise ValueError(f"{name}: no rule for this golden file")
    return problems
