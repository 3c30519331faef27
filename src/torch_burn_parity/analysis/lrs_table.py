"""Per-step learning rates of one experiment: the lr PyTorch used and the lr Burn used.

    python -m torch_burn_parity.analysis.lrs_table --experiment adamw_recipe \\
        --torch-f64 results/runs/adamw_recipe/torch-f64.json \\
        --burn-f64 results/runs/adamw_recipe/burn-f64.json --report-steps 1 2 5 10 \\
        --csv results/tables/lrs_adamw_recipe.csv --md results/tables/lrs_adamw_recipe.md

Both come from the run files' `lrs` (one lr per step, as the optimizer step read it; a
schedule is computed in f64 in both frameworks, so the f64 runs hold the same values as the
f32 ones). CSV: every step, `step, lr_torch, lr_burn, rel_diff` with rel_diff
= |lr_burn − lr_torch| / |lr_torch|. Markdown: one sentence (the first step where they
differ, or that they never do; how many steps differ and by how much at most, relative and
in f64 ulps), then the report steps (and the last step).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from torch_burn_parity.analysis.gaps import add_run_arguments, load_runs, report_steps_of, run_paths
from torch_burn_parity.io.parity_io import FormatError, write_text_atomic

RUNS = ("torch_f64", "burn_f64")
COLUMNS = ["step", "lr_torch", "lr_burn", "rel_diff"]
HEADER = "step  torch lr                burn lr                 rel diff"


def lrs_of(block: dict, path: Path) -> np.ndarray:
    """The run's lr per step, or a FormatError naming the file and the key."""
    if "lrs" not in block:
        raise FormatError(f"{path}: no 'lrs' field (the lr of each step; an older run file)")
    lrs, steps = block["lrs"], len(block["losses"])
    numbers = isinstance(lrs, list) and all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in lrs
    )
    if not numbers or len(lrs) != steps:
        raise FormatError(f"{path}: 'lrs' must hold one number per step ({steps})")
    return np.asarray(lrs, dtype=np.float64)


def rel_diff(torch_lr: np.ndarray, burn_lr: np.ndarray) -> np.ndarray:
    """|burn − torch| / |torch|: 0 where they are equal (also both 0), inf where only torch is 0."""
    diff = np.abs(burn_lr - torch_lr)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = diff / np.abs(torch_lr)
    return np.where(diff == 0, 0.0, rel)


def lrs_frame(torch_lr: np.ndarray, burn_lr: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "step": np.arange(1, len(torch_lr) + 1),
            "lr_torch": torch_lr,
            "lr_burn": burn_lr,
            "rel_diff": rel_diff(torch_lr, burn_lr),
        }
    )


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many f64 values apart a and b are (0 when equal); inf across a sign or non-finite."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    apart = np.abs(a.view(np.int64) - b.view(np.int64)).astype(np.float64)
    comparable = np.isfinite(a) & np.isfinite(b) & (np.signbit(a) == np.signbit(b))
    return np.where(a == b, 0.0, np.where(comparable, apart, np.inf))


def summary(frame: pd.DataFrame) -> dict:
    """The first step where the lrs differ (None), how many differ, the largest difference
    (relative, and its step; in f64 ulps)."""
    differ = frame[frame["lr_torch"] != frame["lr_burn"]]
    if differ.empty:
        return {"first": None, "count": 0, "max_rel": 0.0, "max_step": None, "max_ulps": 0,
                "max_ulps_step": None}  # fmt: skip
    worst = differ.loc[differ["rel_diff"].idxmax()]
    ulps = ulp_distance(differ["lr_torch"].to_numpy(), differ["lr_burn"].to_numpy())
    return {
        "first": int(differ["step"].iloc[0]),
        "count": len(differ),
        "max_rel": float(worst["rel_diff"]),
        "max_step": int(worst["step"]),
        "max_ulps": float(ulps.max()),
        "max_ulps_step": int(differ["step"].iloc[int(ulps.argmax())]),
    }


def exact(x: float) -> str:
    """The shortest digits that identify the f64 (0.01, 0.010000000000000002)."""
    return repr(float(x))


def where(facts: dict) -> str:
    """The steps of the largest difference in ulps and relative, said once if the same."""
    rel = f"{facts['max_rel']:.2e}"
    if facts["max_ulps_step"] == facts["max_step"]:
        return f"at step {facts['max_step']}, relative difference {rel}"
    return (
        f"at step {facts['max_ulps_step']}; the largest relative difference, {rel},"
        f" is at step {facts['max_step']}"
    )


def sentence(frame: pd.DataFrame, facts: dict) -> str:
    steps = len(frame)
    if facts["first"] is None:
        return f"PyTorch and Burn use the same lr at every step ({steps} steps)."
    first = frame.iloc[facts["first"] - 1]
    ulps = facts["max_ulps"]
    if math.isfinite(ulps) and ulps < 1e6:
        ulps = f"{ulps:.0f} f64 ulp" + ("" if round(ulps) == 1 else "s")
    else:
        ulps = "over 1e6 f64 ulps"
    return (
        f"The lr first differs at step {facts['first']} (PyTorch {exact(first.lr_torch)},"
        f" Burn {exact(first.lr_burn)}); it differs at {facts['count']} of {steps} steps,"
        f" by at most {ulps} ({where(facts)})."
    )


def render_md(frame: pd.DataFrame, title: str, report_steps: list[int]) -> str:
    shown = frame[report_steps_of(frame["step"], report_steps)]
    rows = [
        f"{r.step:4d}  {exact(r.lr_torch):<22}  {exact(r.lr_burn):<22}  {r.rel_diff:.2e}"
        for r in shown.itertuples()
    ]
    table = "```text\n" + "\n".join([HEADER, *rows]) + "\n```\n"
    return f"### {title}\n\n{sentence(frame, summary(frame))}\n\n{table}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", required=True, help="name shown in the table title")
    add_run_arguments(parser, RUNS)
    parser.add_argument("--report-steps", type=int, nargs="+", default=[1, 2, 5, 10])
    parser.add_argument("--csv", required=True, type=Path)
    parser.add_argument("--md", required=True, type=Path)
    args = parser.parse_args(argv)
    paths = run_paths(args, RUNS)
    try:
        blocks = load_runs(paths)
        torch_lr, burn_lr = (lrs_of(blocks[key], paths[key]) for key in RUNS)
    except FormatError as exc:
        sys.exit(f"lrs_table: {exc}")
    frame = lrs_frame(torch_lr, burn_lr)
    kind = blocks["torch_f64"]["meta"].get("schedule", {}).get("kind", "constant")
    title = f"Learning rates: {args.experiment} ({kind} schedule)"
    write_text_atomic(args.csv, frame.to_csv(index=False, float_format="%.17g"))
    write_text_atomic(args.md, render_md(frame, title, args.report_steps))
    facts = summary(frame)
    first = facts["first"] or "none"
    print(
        f"{args.experiment}: {len(frame)} steps, lr first differs at step {first},"
        f" max rel diff {facts['max_rel']:.2e} -> {args.csv}, {args.md}"
    )


if __name__ == "__main__":
    main()
