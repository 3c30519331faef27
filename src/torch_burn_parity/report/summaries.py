"""Sections that sum up several experiments: a sweep's, and Adam's bias-correction table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from torch_burn_parity.analysis.gaps import (
    report_steps_of,
)
from torch_burn_parity.io.parity_io import (
    read_table,
)
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.report.markdown import md_table
from torch_burn_parity.report.verdict_text import e

# A sweep with more experiments than this is summed up in its own section only.
FULL_SECTIONS_UP_TO = 3


def axis_order(values: pd.Series) -> list:
    """The distinct values of an axis column, numerically sorted where they are numbers."""
    distinct = list(dict.fromkeys(values))
    try:
        return sorted(distinct, key=float)
    except (TypeError, ValueError):
        return distinct


def axis_reading(frame: pd.DataFrame, axis: str) -> str:
    """'lr: 1.2e-07 (0.001) → 3.7e-06 (0.01) …, grows with lr' from the summary rows."""
    order = axis_order(frame[axis].astype(str))
    medians = [float(frame[frame[axis].astype(str) == v]["f64_gap"].median()) for v in order]
    steps = " → ".join(f"{e(m)} ({v})" for v, m in zip(order, medians, strict=True))
    diffs = np.diff(medians)
    numeric = _numbers(order)
    if numeric and (diffs > 0).all():
        trend_text = f", grows with {axis}"
    elif numeric and (diffs < 0).all():
        trend_text = f", shrinks as {axis} grows"
    else:
        trend_text = ""
    return f"- `{axis}`: {steps}{trend_text}"


def _numbers(values: list) -> bool:
    try:
        [float(v) for v in values]
    except (TypeError, ValueError):
        return False
    return True


def sweep_section(results: Path, sweep: str, members: list[str], large: bool) -> str:
    """What one sweep shows, computed from its summary.csv, with links to its material."""
    folder = results / "sweeps" / sweep
    frame = read_table(folder / "summary.csv", keep_default_na=False, dtype={"cause": str})
    frame["f64_gap"] = pd.to_numeric(frame["f64_gap"], errors="coerce")
    fixed = {"experiment", "verdict", "cause", "f64_gap", "f32_gap", "first_f32_step_above_tol"}
    axes = [c for c in frame.columns if c not in fixed]
    varying = [a for a in axes if frame[a].nunique() > 1]
    counts = frame["verdict"].value_counts()
    parts = [
        f"## Sweep `{sweep}` ({len(frame)} experiments)\n",
        "Verdicts: " + "; ".join(f"{n} × {label}" for label, n in counts.items()) + ".\n",
    ]
    if varying:
        parts.append(
            "The largest f64 gap (torch vs burn, any step), median over the other axes, for"
            " each value of an axis:\n"
        )
        parts += [axis_reading(frame, a) for a in varying]
        parts.append("")
    rounding = frame["verdict"] == vd.EQUIVALENT
    if rounding.all():
        parts.append("Every setting of the sweep stays within rounding.\n")
    elif rounding.any():
        stay = [
            f"`{a}` = {v}"
            for a in varying
            for v in axis_order(frame[a].astype(str))
            if rounding[frame[a].astype(str) == v].all()
        ]
        parts.append(
            f"{int(rounding.sum())} of {len(frame)} experiments stay within rounding"
            + (f"; every experiment with {', '.join(stay)} does." if stay else ".")
            + "\n"
        )
    else:
        parts.append("No setting of the sweep stays within rounding.\n")
    causes = frame.loc[frame["cause"] != "", "cause"].str.replace(r" \(\d.*", "", regex=True)
    if len(causes):
        parts.append(
            "Leading causes: "
            + "; ".join(f"{c} ({n}×)" for c, n in causes.value_counts().items())
            + ".\n"
        )
    parts.append(f"![parity map of {sweep}](sweeps/{sweep}/parity_map.png)\n")
    parts.append(
        f"Every experiment with its axis values, verdict and cause: `sweeps/{sweep}/summary.csv`"
        f" (and `summary.md`); names → axis values: `sweeps/{sweep}/experiments.csv`. Each"
        " experiment's own tables and plots: `tables/steps_<experiment>.csv`,"
        " `tables/replay_<experiment>.csv`, `plots/gaps_<experiment>.png`, …"
        + (
            " (their full sections are left out of this report)."
            if large
            else " (their sections follow)."
        )
        + "\n"
    )
    if len(frame) <= 40:
        shown = frame.assign(f64_gap=frame["f64_gap"].map(e))
        shown["f32_gap"] = pd.to_numeric(shown["f32_gap"], errors="coerce").map(e)
        parts.append(md_table(shown.drop(columns=["cause"])) + "\n")
    return "\n".join(parts)


def bias_section(results: Path, report_steps: list[int]) -> str:
    """Burn's f32 Adam factor against f64, one table per distinct series of factors."""
    frame = pd.read_csv(results / "tables" / "bias_correction.csv")
    if frame.empty:
        return ""
    groups: dict[tuple, list[str]] = {}
    for name, group in frame.groupby("experiment", sort=False):
        groups.setdefault(tuple(group["burn_f32"]), []).append(name)
    parts = [
        "## Adam bias correction: Burn's f32 factor vs f64\n",
        "Burn keeps β₁, β₂ and ε as f32 and evaluates `sqrt(1 − β₂^t) / (1 − β₁^t)` in f32;"
        " PyTorch evaluates its factors in f64. `burn f32` is the factor Burn's run recorded,"
        " `f64` the same formula in f64 from the betas Burn held, `rel err` = (burn − f64) / f64."
        " Experiments with the same betas share one table.\n",
    ]
    for names in groups.values():
        group = frame[frame["experiment"] == names[0]].reset_index(drop=True)
        worst = int(group["rel_err"].abs().idxmax())
        shown = group[report_steps_of(group["t"], report_steps) | (group.index == worst)]
        table = md_table(
            pd.DataFrame(
                {
                    "t": shown["t"].astype(str),
                    "burn f32": shown["burn_f32"].map(lambda x: f"{x:.9f}"),
                    "f64": shown["f64"].map(lambda x: f"{x:.9f}"),
                    "rel err": shown["rel_err"].map(lambda x: f"{x:.2e}"),
                }
            )
        )
        reading = f"At t=1 the relative error is {e(group['rel_err'].iloc[0])}"
        signed = group[group["t"] >= 2]["rel_err"]
        if len(signed):
            reading += f"; from t=2 on it lies between {e(signed.min())} and {e(signed.max())}"
            if (signed < 0).all() or (signed > 0).all():
                side = "below" if (signed < 0).all() else "above"
                reading += f", {side} the f64 value at every step"
        reading += (
            f", largest at t={int(group['t'].iloc[worst])} ({e(group['rel_err'].iloc[worst])})."
        )
        title = ", ".join(f"`{n}`" for n in names)
        parts.append(f"{title} ({len(shown)} of {len(group)} steps):\n\n{table}\n\n{reading}\n")
    return "\n".join(parts)
