"""Bias-correction error table: Burn's f32 Adam factor against the same formula in f64.

    python -m torch_burn_parity.analysis.bias_correction results/runs/adam/burn-f32.json \\
        --csv results/tables/bias_correction.csv --md results/tables/bias_correction.md

`burn_f32` is the combined_factor Burn's Adam used at step t (recorded in the Burn run),
`f64` is sqrt(1 − β₂^t) / (1 − β₁^t) evaluated in f64 with the same betas Burn held (f32
values, widened), and `rel_err = (burn_f32 − f64) / f64`. PyTorch computes its factors in
f64, so this relative error is what separates the two Adams.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd  # noqa: E402

from torch_burn_parity.analysis.gaps import report_steps_of
from torch_burn_parity.io.parity_io import FormatError, read_run, write_text_atomic

COLUMNS = ["experiment", "t", "burn_f32", "f64", "rel_err"]


def combined_factor_f64(beta_1: float, beta_2: float, t: int) -> float:
    return math.sqrt(1.0 - beta_2**t) / (1.0 - beta_1**t)


def factor_rows(path: Path) -> list[dict]:
    rows = []
    for experiment, block in read_run(path).items():
        factors = block.get("adam_factors", {}).get("combined_factor")
        if factors is None:
            raise FormatError(f"{path}: experiment {experiment!r} has no adam_factors")
        beta_1, beta_2 = block["meta"]["hyperparameters"]["betas"]
        for t, burn in enumerate(factors, start=1):
            exact = combined_factor_f64(beta_1, beta_2, t)
            rows.append(
                {
                    "experiment": experiment,
                    "t": t,
                    "burn_f32": burn,
                    "f64": exact,
                    "rel_err": (burn - exact) / exact,
                }  # fmt: skip
            )
    return rows


def render_md(frame: pd.DataFrame, report_steps: list[int]) -> str:
    parts = ["### Bias-correction factor: Burn (f32) vs f64\n"]
    if frame.empty:
        return parts[0] + "\nNo Adam experiment in the config.\n"
    for experiment, group in frame.groupby("experiment", sort=False):
        shown = group[report_steps_of(group["t"], report_steps)]
        lines = ["  t  burn f32     f64          rel err"]
        lines += [
            f"{r.t:3d}  {r.burn_f32:.9f}  {r.f64:.9f}  {r.rel_err:.2e}" for r in shown.itertuples()
        ]
        parts.append(f"\n`{experiment}`\n\n```text\n" + "\n".join(lines) + "\n```\n")
    return "".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="*", help="Burn Adam run files")
    parser.add_argument("--report-steps", type=int, nargs="+", default=[1, 2, 5, 10])
    parser.add_argument("--csv", required=True, type=Path)
    parser.add_argument("--md", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        rows = [row for path in args.runs for row in factor_rows(path)]
    except (FormatError, KeyError, ValueError) as exc:
        sys.exit(f"bias_correction: {exc}")
    frame = pd.DataFrame(rows, columns=COLUMNS)
    write_text_atomic(args.csv, frame.to_csv(index=False, float_format="%.17g"))
    write_text_atomic(args.md, render_md(frame, args.report_steps))
    print(f"{len(frame)} rows from {len(args.runs)} run(s) -> {args.csv}, {args.md}")


if __name__ == "__main__":
    main()
