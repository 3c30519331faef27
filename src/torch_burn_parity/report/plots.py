"""Plots of one experiment: the four gaps against the rounding floor, and |Δloss| per step.

    python -m torch_burn_parity.report.plots --experiment adam \\
        --steps results/tables/steps_adam.csv --tol 1e-6 --tol-f64 1e-12 \\
        --gaps results/plots/gaps_adam.png --losses results/plots/losses_adam.png

Both plots use a log scale and say in their title what the reader should see, computed
from the data: whether the f64 gap leaves the rounding floor of verdict.py (and at which
step), and how large |Δloss| between the two f32 runs gets. Exact zeros, which a log scale
cannot show, are drawn on the bottom edge.

layers_plot draws a layers table (layers_table.py, which calls it with --png): both dtypes'
torch-vs-burn differences along the quantities of each probe step, each quantity's rounding
floor, the phases, and the row where the f64 difference first leaves its floor.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from torch_burn_parity.io.parity_io import FormatError, read_table_text, write_atomic
from torch_burn_parity.judgement import verdict
from torch_burn_parity.judgement.judge import read_record
from torch_burn_parity.models.model_specs import spec
from torch_burn_parity.report.log_axis import log_y

# column: (legend label, colour, line style, marker). Colour, style and marker all differ,
# so two series lying on top of each other stay distinguishable.
GAPS = {
    "dparam": ("f32: torch vs burn", "tab:blue", "-", "o"),
    "torch_f64": ("torch: f32 vs f64", "tab:orange", (0, (5, 2)), "s"),
    "burn_f64": ("burn: f32 vs f64", "tab:green", (0, (1, 1.5)), "^"),
    "f64_f64": ("f64: torch vs burn", "tab:red", (0, (6, 2, 1, 2)), "D"),
}
# The f32 torch-vs-burn gap can equal the f64 one (when an algorithmic difference dwarfs
# rounding): drawn wide underneath, it shows on both sides of the dash-dotted f64 line.
WIDTH = {"dparam": 3.4, "f64_f64": 1.8}
MARKERS = 10  # markers per series; each series starts at another step (see markevery)
FLOOR_COLOUR = "0.55"
# Fixed metadata so the same data give the same PNG bytes.
PNG_METADATA = {"Software": None}
# zlib's fastest level: 16 ms instead of 22 ms to encode a plot, for files 1-9 % larger.
PNG_OPTIONS = {"compress_level": 1}
DPI = 110


def save(fig, path: Path) -> None:
    """Write `fig` as a PNG: the bytes `fig.savefig(path, dpi=DPI)` writes (with
    PNG_OPTIONS), drawn once.

    savefig draws a figure that has a layout engine twice, once without rendering to lay it
    out and once to render it; the canvas's print_png lays it out inside its one draw (the
    figure's dpi set first, as savefig sets it): 0.08 of 0.64 CPU seconds for an
    experiment's three plots.
    """
    buffer = io.BytesIO()
    fig.set_dpi(DPI)
    fig.canvas.print_png(buffer, metadata=PNG_METADATA, pil_kwargs=dict(PNG_OPTIONS))
    plt.close(fig)
    write_atomic(path, buffer.getvalue())


def e(value: float) -> str:
    return f"{value:.2g}"


def count(value: float) -> str:
    """Two significant digits, written out: 0.5, 3.2, 90, 28,000."""
    rounded = float(f"{value:.2g}")
    return f"{rounded:,.0f}" if rounded >= 10 else f"{rounded:g}"


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# ------------------------------------------------------------------------------ titles


def first_nonfinite_row(*series: np.ndarray) -> int | None:
    """The first row (0-based) at which any of the series is NaN or infinite."""
    bad = ~np.isfinite(np.column_stack([np.asarray(s, float) for s in series]))
    rows = bad.any(axis=1)
    return int(np.argmax(rows)) if rows.any() else None


def back_within(f64: np.ndarray, floor: np.ndarray, steps: np.ndarray | None = None) -> str:
    """What the f64 gap does after it first leaves the floor, true over the whole curve:
    '' (above it from then to the last step), ', back within it from step k' (above it
    last at the recorded step before k), and '(above it at n of N steps)' when it goes in
    and out. steps: each row's step (the recorded steps; absent: row i is step i + 1)."""
    above = ~(np.asarray(f64, float) <= floor)
    steps = np.arange(1, len(above) + 1) if steps is None else np.asarray(steps)
    rows = np.flatnonzero(above)
    first, last = int(rows[0]), int(rows[-1])
    text = f", back within it from step {steps[last + 1]}" if last < len(above) - 1 else ""
    recorded = "steps" if steps[-1] == len(steps) else "recorded steps"
    if len(rows) < last - first + 1:
        text += f" (above it at {len(rows)} of {len(above)} {recorded})"
    return text


def gap_title(experiment: str, frame: pd.DataFrame, record: dict | None = None) -> tuple[str, str]:
    """(title, subtitle) of the gap plot: what the f64 gap says, and the sizes behind it.

    Rounding only when the f64 torch-vs-burn gap stays under the rounding floor at every
    step; otherwise the step where it leaves it, and whether and when it comes back within
    it; a difference in the buffers alone (the verdict record's scope) says so. A run that
    went non-finite is named instead: gaps between overflowing numbers say nothing about
    the arithmetic.
    """
    f64 = frame["f64_f64"].to_numpy(float)
    floor = verdict.rounding_floor(frame["torch_f64"], frame["burn_f64"])
    steps = frame["step"].to_numpy()
    bad = first_nonfinite_row(*(frame[c] for c in ("torch_loss", "burn_loss", *GAPS)))
    if bad is not None:
        title = (
            f"{experiment}: a run went non-finite at step {steps[bad]}"
            " — gaps from there on say nothing"
        )
    elif (step := verdict.first_step_above(f64, floor, steps)) is None:
        title = f"{experiment}: f64 gap stays under the rounding floor — rounding only"
    elif record is not None and record.get("scope") == verdict.EVALUATION:
        title = (
            f"{experiment}: buffers leave the rounding floor at step {step},"
            " training matches to rounding"
        )
    else:
        title = (
            f"{experiment}: f64 gap leaves the rounding floor at step {step}"
            f"{back_within(f64, floor, steps)}"
            " — an algorithmic difference"
        )
    # the sizes behind it, over the steps before a run went non-finite
    shown = slice(0, len(f64) if bad is None else bad)
    f64, floor, f32 = f64[shown], floor[shown], frame["dparam"].to_numpy(float)[shown]
    if not len(f64):
        return title, "non-finite from the first step"
    worst = int(np.argmax(f64))
    subtitle = (
        f"max f64 gap {e(f64[worst])}, rounding floor at that step {e(floor[worst])}"
        f" · max f32 gap {e(f32.max())}"
    )
    return title, subtitle if bad is None else f"before step {steps[bad]}: {subtitle}"


def loss_title(experiment: str, frame: pd.DataFrame) -> tuple[str, str]:
    """(title, subtitle) of the |Δloss| plot: the largest |Δloss|, its step, and its size in
    f32 ulps of the loss there (1-2 ulps: the last bit; thousands: a different trajectory)."""
    dloss = frame["dloss"].to_numpy(float)
    head = f"{experiment}: |Δloss| torch vs burn (f32)"
    bad = first_nonfinite_row(dloss)
    if bad is not None:
        head = f"{head}: non-finite from step {int(frame['step'].iloc[bad])}"
        dloss = dloss[:bad]
    if not len(dloss):
        return head, ""
    worst = int(np.argmax(dloss))
    if dloss[worst] == 0:
        tail = "0 at every step" + ("" if bad is not None else " — identical losses")
    else:
        tail = f"max {e(dloss[worst])} at step {int(frame['step'].iloc[worst])}"
    if bad is not None:
        return head, f"before it: {tail}"
    if dloss[worst] == 0:
        return f"{head}: {tail}", ""
    ulps = dloss[worst] / loss_ulp(frame["torch_loss"].to_numpy(float))[worst]
    return f"{head}: {tail}", f"≈ {count(ulps)} f32 ulps of the loss at that step"


def loss_ulp(loss: np.ndarray) -> np.ndarray:
    """One f32 ulp of each loss value (NaN where the loss is not finite)."""
    loss = np.where(np.isfinite(loss), np.abs(loss), np.nan)
    return np.spacing(loss.astype(np.float32)).astype(float)


# ------------------------------------------------------------------------------ plotting


def bottom_edge(*series: np.ndarray) -> float:
    """A log-axis bottom below every positive finite value: where exact zeros are drawn."""
    values = np.concatenate([np.ravel(np.asarray(s, float)) for s in series])
    positive = values[np.isfinite(values) & (values > 0)]
    low = positive.min() if positive.size else 1.0
    return 10.0 ** (np.floor(np.log10(low)) - 1)


def top_of(*series: np.ndarray) -> float:
    """The largest finite value (1 when there is none)."""
    values = np.concatenate([np.ravel(np.asarray(s, float)) for s in series])
    finite = values[np.isfinite(values) & (values > 0)]
    return float(finite.max()) if finite.size else 1.0


def x_range(ax, steps: np.ndarray) -> None:
    """The steps with a little room, so markers at the first and last step are not cut."""
    pad = max(0.5, 0.01 * (steps[-1] - steps[0]))
    ax.set_xlim(steps[0] - pad, steps[-1] + pad)


def on_log_axis(values: np.ndarray, bottom: float) -> np.ndarray:
    """Exact zeros moved to the bottom edge; negative and non-finite values left out."""
    values = np.asarray(values, float)
    out = np.where(values > 0, values, np.nan)
    out[values == 0] = bottom
    return np.where(np.isfinite(out), out, np.nan)


def zero_note(ax, shown: bool) -> None:
    if shown:
        ax.text(
            0.99, 0.015, "exact 0 drawn on the bottom edge", transform=ax.transAxes,
            fontsize=7, color="0.3", ha="right", va="bottom",
        )  # fmt: skip


def gap_plot(
    frame: pd.DataFrame, experiment: str, tol: float, tol_f64: float, path: Path,
    record: dict | None = None,
) -> None:  # fmt: skip
    """The gap curves against the rounding floor; record: the experiment's verdict record
    (its model's buffers name the y axis, its scope the title)."""
    steps = frame["step"].to_numpy()
    floor = verdict.rounding_floor(frame["torch_f64"], frame["burn_f64"])
    # After a non-finite f32-vs-f64 gap the floor is a huge stand-in for infinity: not drawn.
    drawn = floor.copy()
    bad = first_nonfinite_row(frame["torch_f64"], frame["burn_f64"])
    if bad is not None:
        drawn[bad:] = np.nan
    series = {column: frame[column].to_numpy(float) for column in GAPS}
    bottom = bottom_edge(*series.values(), drawn, tol, tol_f64)
    top = 10.0 ** (np.ceil(np.log10(top_of(*series.values(), drawn, tol, tol_f64))) + 0.5)

    fig, ax = plt.subplots(figsize=(9, 5), layout="constrained")
    ax.fill_between(
        steps, bottom, drawn, color=FLOOR_COLOUR, alpha=0.25, linewidth=0,
        label="rounding floor: an f64 gap\ninside the grey band is rounding",
    )  # fmt: skip
    ax.plot(steps, drawn, color=FLOOR_COLOUR, linewidth=1)
    every = max(1, len(steps) // MARKERS)
    zeros = False
    for i, (column, (label, colour, style, marker)) in enumerate(GAPS.items()):
        values = series[column]
        zeros |= bool((values == 0).any())
        ax.plot(
            steps, on_log_axis(values, bottom), label=label, color=colour, linestyle=style,
            linewidth=WIDTH.get(column, 1.6), marker=marker, markersize=5,
            markevery=(i * every // len(GAPS), every), markerfacecolor="none",
            markeredgewidth=1.3, zorder=3 + i,
        )  # fmt: skip
    ax.axhline(tol, color="black", linestyle="--", linewidth=1, label=f"f32 tolerance {tol:g}")
    ax.axhline(
        tol_f64, color="black", linestyle=":", linewidth=1.2, label=f"f64 tolerance {tol_f64:g}"
    )

    f64 = series["f64_f64"]
    step = verdict.first_step_above(f64, floor, steps)
    row = int(np.searchsorted(steps, step)) if step is not None else None
    if row is not None and np.isfinite(f64[row]):
        # the text on the side with room: right of the point in the first half of the steps,
        # below it in the upper half of the axis
        y = max(f64[row], bottom)
        left = row < len(steps) / 2
        low = np.log(y / bottom) < np.log(top / bottom) / 2
        ax.annotate(
            f"f64 gap leaves\nthe floor at step {step}", xy=(steps[row], y),
            xytext=(30 if left else -30, 35 if low else -35), textcoords="offset points",
            ha="left" if left else "right", va="bottom" if low else "top", fontsize=8,
            color="tab:red", arrowprops={"arrowstyle": "->", "color": "tab:red"}, zorder=10,
        )  # fmt: skip

    log_y(ax)
    ax.set_ylim(bottom, top)
    x_range(ax, steps)
    zero_note(ax, zeros)
    ax.set_xlabel("step")
    buffers = record is not None and bool(spec(record["model"]).buffer_names)
    ax.set_ylabel("max |Δ| of parameters and buffers" if buffers else "max |Δ param|")
    titled(fig, ax, *gap_title(experiment, frame, record))
    save(fig, path)


def titled(fig, ax, title: str, subtitle: str) -> None:
    """The computed title above, the numbers under it, the legend outside the data."""
    fig.suptitle(title, fontsize=11)
    ax.set_title(subtitle, fontsize=9, color="0.25")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    ax.grid(True, which="major", alpha=0.3)


def loss_plot(frame: pd.DataFrame, experiment: str, path: Path) -> None:
    steps = frame["step"].to_numpy()
    torch_loss = frame["torch_loss"].to_numpy(float)
    dloss = frame["dloss"].to_numpy(float)
    # One f32 ulp of the loss: a |Δloss| this small is the last bit of the loss value.
    ulp = loss_ulp(torch_loss)
    bottom = bottom_edge(dloss, ulp)

    fig, (ax, ax_loss) = plt.subplots(
        2, 1, figsize=(9, 5.5), sharex=True, height_ratios=[3, 1], layout="constrained"
    )
    # Zeros as markers on the bottom edge, not joined to the line: a step with identical
    # losses would otherwise draw a spike down to the edge.
    ax.plot(
        steps, np.where(dloss > 0, dloss, np.nan), color="tab:purple", linewidth=1.6,
        marker="o", markersize=3, label="|torch loss − burn loss| (f32)",
    )  # fmt: skip
    zeros = dloss == 0
    if zeros.any():
        ax.plot(
            steps[zeros], np.full(zeros.sum(), bottom), color="tab:purple", linestyle="none",
            marker="v", markersize=5, clip_on=False, zorder=5,
            label=f"exactly 0 at {plural(int(zeros.sum()), 'step')}, on the bottom edge",
        )  # fmt: skip
    ax.plot(steps, ulp, color="0.5", linestyle="--", linewidth=1, label="1 f32 ulp of the loss")
    bad = first_nonfinite_row(dloss)
    before = dloss if bad is None else dloss[:bad]  # the steps the title's max is over
    if len(before) and before.max() > 0:
        worst = int(np.argmax(before))
        ax.plot(
            steps[worst], dloss[worst], marker="o", markersize=9, markerfacecolor="none",
            markeredgecolor="black", linestyle="none", label=f"max {e(dloss[worst])}",
        )  # fmt: skip
    log_y(ax)
    ax.set_ylim(bottom, 10.0 ** (np.ceil(np.log10(top_of(dloss, ulp))) + 0.5))
    ax.set_ylabel("|Δloss|")
    titled(fig, ax, *loss_title(experiment, frame))

    ax_loss.plot(steps, torch_loss, color="tab:blue", linewidth=1.2, label="torch (f32)")
    ax_loss.plot(
        steps, frame["burn_loss"], color="tab:orange", linewidth=1.2, linestyle="--",
        label="burn (f32)",
    )  # fmt: skip
    ax_loss.set_ylabel("loss")
    ax_loss.set_xlabel("step")
    x_range(ax_loss, steps)
    ax_loss.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    ax_loss.grid(True, alpha=0.3)
    save(fig, path)


COLUMNS = ("step", "torch_loss", "burn_loss", "dloss", *GAPS)


def read_steps(path: Path) -> pd.DataFrame:
    """The steps table, or SystemExit with one line naming the file and what is wrong."""
    try:
        frame = pd.read_csv(io.StringIO(read_table_text(path)))
    except FormatError as exc:
        sys.exit(f"plots: {exc}")
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing or frame.empty:
        sys.exit(f"plots: {path}: not a steps table (no {', '.join(missing) or 'rows'})")
    return frame


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--steps", required=True, type=Path, help="steps_{experiment}.csv")
    parser.add_argument("--tol", required=True, type=float, help="f32 compare tolerance")
    parser.add_argument("--tol-f64", required=True, type=float, help="f64 compare tolerance")
    parser.add_argument("--gaps", required=True, type=Path)
    parser.add_argument("--losses", required=True, type=Path)
    parser.add_argument("--record", type=Path, help="the experiment's verdict record")
    args = parser.parse_args(argv)
    frame = read_steps(args.steps)
    try:
        record = read_record(args.record) if args.record else None
    except FormatError as exc:
        sys.exit(f"plots: {exc}")
    gap_plot(frame, args.experiment, args.tol, args.tol_f64, args.gaps, record)
    loss_plot(frame, args.experiment, args.losses)
    print(f"{args.experiment}: {args.gaps}, {args.losses}")


if __name__ == "__main__":
    main()
