"""One sweep's summary: a row per experiment, the verdicts, and a parity map.

    python -m torch_burn_parity.report.sweep_summary --spec results/specs/sweeps/adam_grid.json \\
        --results results --out-dir results/sweeps/adam_grid

Reads each experiment's verdict record (results/verdicts/{experiment}.json, written by
judgement/judge.py: the same the report reads). Writes, under --out-dir:

experiments.csv  experiment name → axis values (the expansion of the sweep)
summary.csv      one row per experiment: axis values, verdict, cause, largest f64 and f32
                 gaps, and the first step where the f32 gap passes the f32 tolerance
summary.md       the same as a Markdown table
parity_map.png   log10 of the largest f64 gap over the two axes with the most values
                 (the largest over any other axis), one marker per verdict; for a sweep
                 over model sizes (a `model` axis), the f64 and f32 gaps and the rounding
                 floor against the parameter count instead, one marker per verdict

A sweep over model sizes also gets a `parameters` column (each point's parameter count).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from torch_burn_parity.io.parity_io import FormatError, write_atomic, write_text_atomic
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.judgement.judge import read_record
from torch_burn_parity.models.model_specs import spec_of_config
from torch_burn_parity.report.markdown import compact
from torch_burn_parity.report.summaries import axis_order
from torch_burn_parity.report.verdict_text import e

MARKERS = {vd.EQUIVALENT: "o", vd.EXPLAINED: "s", vd.UNEXPLAINED: "X", vd.DIVERGED: "^"}


def axis_text(value, axis: str = "") -> str:
    """An axis value as a cell: 0.001, [0.9, 0.999], burn: eps, none; a model as its tag."""
    if axis == "model":
        return spec_of_config(value).tag
    if isinstance(value, dict):
        return "; ".join(f"{k}: {', '.join(v)}" for k, v in value.items() if v) or "none"
    if isinstance(value, list):
        return "[" + ", ".join(f"{v:g}" for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def sizes(axes: dict) -> dict:
    """A sweep point's parameter count, when it sweeps the model ({} otherwise)."""
    return {"parameters": spec_of_config(axes["model"]).param_count} if "model" in axes else {}


def summary_row(results: Path, name: str) -> dict:
    """One experiment's row, from its verdict record (judgement/judge.py)."""
    record = read_record(results / "verdicts" / f"{name}.json")
    cause = record["cause"] or ""
    if record["verdict"] == vd.UNEXPLAINED:
        cause = record["unexplained_start"] or ""
    first32 = record["first_f32_step_above_tol"]
    return {
        "verdict": record["verdict"],
        "cause": cause,
        "f64_gap": record["f64_gap"],
        "floor": record["floor"],
        "f32_gap": record["f32_gap"],
        "first_f32_step_above_tol": first32 if first32 else "",
    }


def varying_axes(frame: pd.DataFrame, axes: list[str]) -> list[str]:
    """The axes ordered by how many distinct values they take, most first."""
    counts = {a: frame[a].nunique() for a in axes}
    return sorted((a for a in axes if counts[a] > 1), key=lambda a: -counts[a])


def parity_map(frame: pd.DataFrame, axes: list[str], sweep: str, path: Path) -> None:
    """Heat map of log10(largest f64 gap) over the two axes that vary most."""
    shown = (varying_axes(frame, axes) + axes)[:2]
    x_axis, y_axis = shown if len(shown) == 2 else (shown[0], None)
    others = [a for a in axes if a not in shown]
    xs = axis_order(frame[x_axis])
    ys = axis_order(frame[y_axis]) if y_axis else [""]
    grid = np.full((len(ys), len(xs)), np.nan)
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(xs) + 3), max(3.5, 0.8 * len(ys) + 2)))
    for (yi, y), (xi, x) in ((a, b) for a in enumerate(ys) for b in enumerate(xs)):
        cell = frame[(frame[x_axis] == x) & ((frame[y_axis] == y) if y_axis else True)]
        if cell.empty:
            continue
        worst = cell.loc[cell["f64_gap"].fillna(np.inf).idxmax()]  # the largest over others
        gap = worst["f64_gap"]
        grid[yi, xi] = np.log10(gap) if gap > 0 else np.log10(np.finfo(float).tiny)
        ax.scatter(xi, yi, marker=MARKERS[worst["verdict"]], s=90, c="white",
                   edgecolors="black", linewidths=1.2, zorder=3)  # fmt: skip
        label = {"boxstyle": "round,pad=0.15", "fc": "black", "alpha": 0.5, "lw": 0}
        ax.annotate(e(gap), (xi, yi), xytext=(0, -16), textcoords="offset points",
                    ha="center", fontsize=8, color="white", bbox=label)  # fmt: skip
    image = ax.imshow(grid, cmap="viridis", aspect="auto", origin="lower")
    fig.colorbar(image, ax=ax, label="log10 of the largest f64 gap (torch vs burn)")
    ax.set_xticks(range(len(xs)), xs, rotation=30, ha="right")
    ax.set_yticks(range(len(ys)), ys)
    ax.set_xlabel(x_axis)
    ax.set_ylabel(y_axis or "")
    handles = [plt.Line2D([], [], marker=m, color="black", markerfacecolor="white",
                          linestyle="", label=label) for label, m in MARKERS.items()
               if label in set(frame["verdict"])]  # fmt: skip
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.25, 1.0))
    note = f" (largest over {', '.join(others)})" if others else ""
    ax.set_title(f"{sweep}: where torch and burn part in f64{note}", fontsize=10)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    write_atomic(path, buffer.getvalue())


def scale_plot(frame: pd.DataFrame, sweep: str, path: Path) -> None:
    """The f64 gap, its rounding floor and the f32 gap against the parameter count (log-log),
    one marker per verdict; several points at one count (other axes) are drawn side by side."""
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    order = frame.sort_values("parameters")
    tiny = np.finfo(float).tiny  # an exact 0 drawn on the bottom edge
    for column, colour, label in (("f64_gap", "tab:blue", "f64 gap (torch vs burn)"),
                                  ("floor", "tab:gray", "f64 rounding floor"),
                                  ("f32_gap", "tab:orange", "f32 gap")):  # fmt: skip
        ax.plot(order["parameters"], order[column].clip(lower=tiny), color=colour, lw=1,
                alpha=0.6, label=label)  # fmt: skip
        for verdict, marker in MARKERS.items():
            rows = order[order["verdict"] == verdict]
            ax.scatter(rows["parameters"], rows[column].clip(lower=tiny), marker=marker,
                       color=colour, s=40, zorder=3)  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("parameters")
    ax.set_ylabel("largest |Δ| over the steps")
    handles = [plt.Line2D([], [], marker=m, color="black", linestyle="", label=v)
               for v, m in MARKERS.items() if v in set(frame["verdict"])]  # fmt: skip
    lines = ax.get_legend_handles_labels()[0]
    ax.legend(handles=lines + handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1))
    ax.set_title(f"{sweep}: the gaps against the model's size", fontsize=10)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    write_atomic(path, buffer.getvalue())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, type=Path, help="sweep_{name}.json")
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--out-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        spec = json.loads(args.spec.read_text())
        points = spec["experiments"]
        axes = list(points[0]["axes"]) if points else []
        rows = [
            {"experiment": p["experiment"], **{a: axis_text(v, a) for a, v in p["axes"].items()},
             **sizes(p["axes"]), **summary_row(args.results, p["experiment"])}
            for p in points
        ]  # fmt: skip
    except (OSError, KeyError, ValueError, json.JSONDecodeError, FormatError) as exc:
        sys.exit(f"sweep_summary: {exc}")
    frame = pd.DataFrame(rows)
    out = args.out_dir
    write_text_atomic(out / "experiments.csv", frame[["experiment", *axes]].to_csv(index=False))
    write_text_atomic(out / "summary.csv", frame.to_csv(index=False, float_format="%.17g"))
    shown = frame.assign(**{c: frame[c].map(e) for c in ("f64_gap", "floor", "f32_gap")})
    table = compact(shown.to_markdown(index=False, disable_numparse=True))
    write_text_atomic(out / "summary.md", f"### Sweep {spec['sweep']}\n\n{table}\n")
    if "model" in axes:
        scale_plot(frame, spec["sweep"], out / "parity_map.png")
    else:
        parity_map(frame, axes, spec["sweep"], out / "parity_map.png")
    counts = frame["verdict"].value_counts().to_dict()
    print(f"sweep {spec['sweep']}: {len(frame)} experiments, {counts} -> {out}")


if __name__ == "__main__":
    main()
