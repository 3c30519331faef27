"""The layers table along its rows: panels of each probe step's rows, each quantity's f32
and f64 differences (accumulated, and introduced by a Burn layer on PyTorch's input) against
its rounding floor, the phases as coloured bands; a deep model's is depth_plot.py's instead.

    python -m torch_burn_parity.report.layers_plot --experiment cnn_bn_sgd \\
        --csv results/tables/layers_cnn_bn_sgd.csv --png results/plots/layers_cnn_bn_sgd.png

Drawn from the CSV that analysis/layers_table.py writes: the numbers do not depend on how
they are drawn.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from torch_burn_parity.report import depth_plot  # noqa: E402
from torch_burn_parity.report.log_axis import log_y  # noqa: E402
from torch_burn_parity.report.plots import (  # noqa: E402
    FLOOR_COLOUR,
    bottom_edge,
    e,
    save,
    top_of,
    zero_note,
)

# Background of each phase of a probe step (layers_table.py's rows), light enough that the
# markers stay readable on it.
PHASE_COLOURS = {
    "forward": "#e8f0fa",
    "loss": "#f3e8f7",
    "backward": "#fbeee2",
    "update": "#e6f4e6",
}
LAYER_SERIES = {
    "max_abs_diff_f32": ("f32: torch vs burn", "tab:blue", "o", 7),
    "max_abs_diff_f64": ("f64: torch vs burn", "tab:red", "D", 5),
    "local_f64": ("f64: torch vs burn's layer\non torch's input (introduced)", "tab:green", "s", 5),
}


def row_labels(frame: pd.DataFrame) -> list[str]:
    """Each row's name; a layer's input gradient as 'fc (input)', apart from its output."""
    what = frame["what"] if "what" in frame else pd.Series("", index=frame.index)
    return [
        f"{layer} (input)" if kind == "input gradient" else str(layer)
        for layer, kind in zip(frame["layer"], what, strict=True)
    ]


def layers_title(experiment: str, frame: pd.DataFrame) -> tuple[str, str]:
    """(title, subtitle): where the f64 difference first leaves its floor, and the sizes."""
    first = frame[frame["first_above_floor"].astype(bool)]
    labels = row_labels(frame)
    f32 = frame["max_abs_diff_f32"].to_numpy(float)
    worst32 = int(np.nanargmax(f32)) if np.isfinite(f32).any() else 0
    sizes = (
        f"largest f32 max|Δ| {e(f32[worst32])} ({labels[worst32]},"
        f" {frame['phase'].iloc[worst32]}, step {frame['step'].iloc[worst32]})"
    )
    if first.empty:
        f64 = frame["max_abs_diff_f64"].to_numpy(float)
        return (
            f"{experiment}: every f64 difference stays within rounding at the probe steps",
            f"largest f64 max|Δ| {e(np.nanmax(f64, initial=0.0))} · {sizes}",
        )
    row = first.iloc[0]
    step = frame[frame["step"] == row["step"]]
    above = step[~(step["max_abs_diff_f64"] <= step["floor"]) & (step["phase"] == "update")]
    if row["phase"] == "update" and len(above) > 1:  # no order among update rows
        largest = above["max_abs_diff_f64"].fillna(np.inf).idxmax()
        return (
            f"{experiment}: the f64 difference enters in the update of step {row['step']},"
            f" {len(above)} rows together",
            f"largest there {labels[frame.index.get_loc(largest)]}: f64 max|Δ|"
            f" {e(frame.loc[largest, 'max_abs_diff_f64'])} · {sizes}",
        )
    # A value after the step (a parameter, or a buffer the train-mode forward updated).
    when = (
        f"after step {row['step']}"
        if row["phase"] == "update"
        else f"{row['phase']}, step {row['step']}"
    )
    return (
        f"{experiment}: the f64 difference enters at {labels[frame.index.get_loc(first.index[0])]}"
        f" ({when})",
        f"there f64 max|Δ| {e(row['max_abs_diff_f64'])} against a rounding floor of"
        f" {e(row['floor'])} · {sizes}",
    )


# At most this many rows per panel: a probe step of more rows wraps onto further panels, so
# that the figure stays within 12.5 inches (1,375 px at 110 dpi), readable at 1,400 px.
PANEL_ROWS = 28


def panels(frame: pd.DataFrame) -> list[tuple[int, int, pd.DataFrame]]:
    """(step, part, rows) of each panel: each probe step's rows in runs of PANEL_ROWS."""
    found = []
    for step in dict.fromkeys(frame["step"]):
        rows = frame[frame["step"] == step]
        for part, start in enumerate(range(0, len(rows), PANEL_ROWS)):
            found.append((step, part, rows.iloc[start : start + PANEL_ROWS]))
    return found


def layers_plot(frame: pd.DataFrame, experiment: str, path: Path) -> None:
    """Both dtypes' torch-vs-burn differences along the rows of the layers table: panels of
    each probe step's rows (PANEL_ROWS at most each), phases as coloured bands, each row's
    rounding floor as a grey bar."""
    cut = panels(frame)
    together = layers_title(experiment, frame)[0].endswith("rows together")
    columns = [c for c in LAYER_SERIES if c in frame and frame[c].notna().any()]
    series = [frame[c].to_numpy(float) for c in columns]
    floor = frame["floor"].to_numpy(float)
    bottom = bottom_edge(*series, floor)
    top = 10.0 ** (np.ceil(np.log10(top_of(*series, floor))) + 0.8)
    most = max(len(rows) for _, _, rows in cut)
    fig, axes = plt.subplots(
        len(cut), 1, figsize=(min(max(10.0, 0.3 * most + 3.5), 12.5), 1.2 + 3.6 * len(cut)),
        layout="constrained", squeeze=False,
    )  # fmt: skip
    for ax, (step, part, rows) in zip(axes[:, 0], cut, strict=True):
        zeros = False  # this panel's: its note goes in it
        rows = rows.reset_index(drop=True)
        x = np.arange(len(rows))
        for phase, group in rows.groupby("phase", sort=False):
            lo, hi = group.index.min() - 0.5, group.index.max() + 0.5
            ax.axvspan(lo, hi, color=PHASE_COLOURS.get(phase, "0.95"), linewidth=0, zorder=0)
            ax.text(
                (lo + hi) / 2, 0.985, phase, transform=ax.get_xaxis_transform(), ha="center",
                va="top", fontsize=8, color="0.3",
            )  # fmt: skip
        ax.bar(
            x, rows["floor"] - bottom, bottom=bottom, width=0.8, color=FLOOR_COLOUR, alpha=0.35,
            linewidth=0, label="rounding floor of each quantity:\nan f64 difference inside the"
            " grey bar is rounding", zorder=1,
        )  # fmt: skip
        for column in columns:
            label, colour, marker, size = LAYER_SERIES[column]
            values = rows[column].to_numpy(float)
            style = {"color": colour, "marker": marker, "markersize": size,
                     "markerfacecolor": "none", "markeredgewidth": 1.4, "zorder": 3}  # fmt: skip
            # Exact zeros as markers on the bottom edge, not joined to the line (a line down
            # to the edge would look like a value).
            ax.plot(x, np.where(values > 0, values, np.nan), label=label, linewidth=0.8, **style)
            zero = values == 0
            if zero.any():  # (an empty unclipped line would break the layout)
                zeros = True
                ax.plot(x[zero], np.full(zero.sum(), bottom), linestyle="none", clip_on=False,
                        **style)  # fmt: skip
        first = rows.index[rows["first_above_floor"].astype(bool)]
        ax.set_xticks(x, row_labels(rows), rotation=90, fontsize=8)
        if len(first) and not together:  # update rows that leave together: none is first
            i = int(first[0])
            ax.axvline(i, color="tab:red", linestyle="--", linewidth=1.2, zorder=2,
                       label="where the f64 difference\nfirst leaves its floor")  # fmt: skip
            tick = ax.get_xticklabels()[i]
            tick.set_color("tab:red")
            tick.set_fontweight("bold")
        log_y(ax)
        ax.set_ylim(bottom, top)
        ax.set_xlim(-0.6, len(rows) - 0.4)
        ax.set_ylabel(f"step {step}{' (continued)' if part else ''}: max |Δ|")
        ax.grid(True, axis="y", which="major", alpha=0.3)
        zero_note(ax, zeros)
    title, subtitle = layers_title(experiment, frame)
    # the subtitle's facts on lines of their own: a figure of few rows is narrow
    fig.suptitle(f"{title}\n" + subtitle.replace(" · ", "\n"), fontsize=10)
    legend = {}  # every panel's entries once: the marked row may be in any panel
    for ax in axes[:, 0]:
        legend.update(zip(*reversed(ax.get_legend_handles_labels()), strict=True))
    axes[0, 0].legend(
        legend.values(), legend.keys(), fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1),
        borderaxespad=0,
    )  # fmt: skip
    save(fig, path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", required=True, help="name shown in the title")
    parser.add_argument("--csv", required=True, type=Path, help="a layers table")
    parser.add_argument("--png", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        frame = pd.read_csv(args.csv)
        frame["first_above_floor"] = frame["first_above_floor"].astype(bool)
        frame["introduced_first"] = frame["introduced_first"].astype(bool)
        frame["what"] = frame["what"].fillna("")
    except (OSError, KeyError, ValueError, pd.errors.ParserError) as exc:
        sys.exit(f"layers_plot: {args.csv}: not a layers table ({exc})")
    if depth_plot.is_deep(frame):  # a summary along the depth: too many rows to read
        depth_plot.depth_plot(frame, args.experiment, args.png)
    else:
        layers_plot(frame, args.experiment, args.png)
    print(f"layers_plot: {args.experiment} -> {args.png}")


if __name__ == "__main__":
    main()
