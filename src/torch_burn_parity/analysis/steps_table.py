"""Per-step table of one experiment: losses and the precision ladder of parameter gaps.

    python -m torch_burn_parity.analysis.steps_table --experiment adam \\
        --torch-f32 T32 --burn-f32 B32 --torch-f64 T64 --burn-f64 B64 --report-steps 1 2 5 10 \\
        --csv results/tables/steps_adam.csv --md results/tables/steps_adam.md

CSV: every step. Markdown: the report steps (and the last step), in the seed's layout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from torch_burn_parity.analysis.gaps import (
    add_run_arguments,
    ladder,
    load_runs,
    recorded_steps,
    report_steps_of,
    run_paths,
)
from torch_burn_parity.io.parity_io import FormatError, write_text_atomic

HEADER = "step  torch loss  burn loss   |dloss|   max|dparam|  torch-f64  burn-f64   f64-f64"


def steps_frame(blocks: dict[str, dict]) -> pd.DataFrame:
    """One row per recorded step (every step, unless the experiment's `record` or its size
    chose fewer: config/record.py)."""
    gaps = ladder(blocks)
    steps = np.asarray(recorded_steps(blocks["torch_f32"]))
    torch_loss = np.asarray(blocks["torch_f32"]["losses"], dtype=np.float64)[steps - 1]
    burn_loss = np.asarray(blocks["burn_f32"]["losses"], dtype=np.float64)[steps - 1]
    return pd.DataFrame(
        {
            "step": steps,
            "torch_loss": torch_loss,
            "burn_loss": burn_loss,
            "dloss": np.abs(torch_loss - burn_loss),
            **gaps,
        }
    )


def render_md(frame: pd.DataFrame, title: str) -> str:
    rows = [
        f"{r.step:4d}  {r.torch_loss:.8f}  {r.burn_loss:.8f}  {r.dloss:.2e}  {r.dparam:.2e}"
        f"     {r.torch_f64:.2e}   {r.burn_f64:.2e}  {r.f64_f64:.2e}"
        for r in frame.itertuples()
    ]
    return f"### {title}\n\n```text\n" + "\n".join([HEADER, *rows]) + "\n```\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", required=True, help="name shown in the table title")
    add_run_arguments(parser)
    parser.add_argument("--report-steps", type=int, nargs="+", default=[1, 2, 5, 10])
    parser.add_argument("--csv", required=True, type=Path)
    parser.add_argument("--md", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        blocks = load_runs(run_paths(args))
    except FormatError as exc:
        sys.exit(f"steps_table: {exc}")
    experiment = args.experiment
    frame = steps_frame(blocks)
    write_text_atomic(args.csv, frame.to_csv(index=False, float_format="%.17g"))
    md = render_md(
        frame[report_steps_of(frame["step"], args.report_steps)], f"Per-step gaps: {experiment}"
    )
    write_text_atomic(args.md, md)
    print(f"{experiment}: {len(frame)} steps -> {args.csv}, {args.md}")


if __name__ == "__main__":
    main()
