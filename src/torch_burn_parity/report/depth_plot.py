"""The layers table of a deep model, summarised: one plot along the depth, and the layers
that introduce the largest differences.

A model of DEPTH layers or more has too many rows per probe step for the row-by-row plot
(layers_plot.py) to be read: each layer's output and input gradient, every parameter's
gradient and update. Here each probe step is one panel along the layers in forward order:
the accumulated f64 difference of each layer's output (PyTorch's own forward vs Burn's own)
against Burn's layer run on PyTorch's input (what the layer introduces), with each output's
rounding floor, and the first layer that introduces a difference marked. The full table is
still in `tables/layers_{experiment}.csv` and its HTML page.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from torch_burn_parity.analysis.layers_words import buffer_rows  # noqa: E402
from torch_burn_parity.report.log_axis import log_y  # noqa: E402
from torch_burn_parity.report.plots import save  # noqa: E402
from torch_burn_parity.report.verdict_text import e  # noqa: E402

DEPTH = 40  # layers from which the report summarises the layers table
TOP = 5  # the layers with the largest local differences the summary names


def layer_count(frame: pd.DataFrame) -> int:
    """How many layers the layers table records (forward rows of its first probe step)."""
    first = frame[frame["step"] == frame["step"].iloc[0]]
    return int(((first["phase"] == "forward") & ~buffer_rows(first)).sum())


def is_deep(frame: pd.DataFrame) -> bool:
    return layer_count(frame) >= DEPTH


def largest_local(frame: pd.DataFrame, n: int = TOP) -> pd.DataFrame:
    """The n rows (a layer's output or input gradient at a probe step) whose local f64
    difference is largest against its floor, largest first; none without local values."""
    measured = frame[frame["local_f64"].notna()].copy()
    if measured.empty:
        return measured
    ratio = measured["local_f64"] / measured["floor"].where(measured["floor"] > 0, np.nan)
    measured["ratio"] = ratio.fillna(np.inf).where(measured["local_f64"] > 0, 0.0)
    return measured.sort_values("ratio", ascending=False, kind="stable").head(n)


def summary(frame: pd.DataFrame) -> str:
    """One sentence naming the layers with the largest local differences (against their
    floors), for the report's summary of a deep model."""
    top = largest_local(frame)
    if top.empty:
        return ""
    named = "; ".join(
        f"`{r.layer}` ({'output' if r.phase == 'forward' else 'input gradient'}, step"
        f" {r.step}: {e(r.local_f64)} against a floor of {e(r.floor)})"
        for r in top.itertuples()
    )
    return (
        f"The model has {layer_count(frame)} layers; the {len(top)} largest differences a"
        f" layer introduces on PyTorch's input: {named}."
    )


def depth_plot(frame: pd.DataFrame, experiment: str, path: Path) -> None:
    """One panel per probe step along the layers: accumulated and local f64 differences of
    each layer's output with its floor; the first layer that introduces one marked."""
    steps = list(dict.fromkeys(frame["step"]))
    fig, axes = plt.subplots(
        len(steps), 1, figsize=(12.5, 1.5 + 3.4 * len(steps)), layout="constrained", squeeze=False
    )
    for ax, step in zip(axes[:, 0], steps, strict=True):
        rows = frame[(frame["step"] == step) & (frame["phase"] == "forward") & ~buffer_rows(frame)]
        rows = rows.reset_index(drop=True)
        x = np.arange(len(rows))
        values = [rows[c].to_numpy(float) for c in ("max_abs_diff_f64", "local_f64", "floor")]
        positive = np.concatenate([v[np.isfinite(v) & (v > 0)] for v in values])
        low = 10.0 ** (np.floor(np.log10(positive.min())) - 1) if positive.size else 1e-20
        ax.fill_between(x, low, rows["floor"], color="0.55", alpha=0.3, linewidth=0,
                        label="rounding floor of each output")  # fmt: skip
        for column, label, colour in (
            ("max_abs_diff_f64", "f64: torch vs burn (accumulated)", "tab:red"),
            ("local_f64", "f64: burn's layer on torch's input (introduced)", "tab:green"),
        ):
            v = rows[column].to_numpy(float)
            ax.plot(x, np.where(v > 0, v, np.nan), color=colour, marker=".", linewidth=1,
                    label=label)  # fmt: skip
        entry = rows.index[rows["introduced_first"].astype(bool)]
        if len(entry):
            i = int(entry[0])
            ax.axvline(
                i,
                color="tab:green",
                linestyle="--",
                linewidth=1.2,
                label=f"first layer to introduce a difference: {rows['layer'][i]}",
            )
        stride = max(1, len(rows) // 40)
        ax.set_xticks(x[::stride], rows["layer"][::stride], rotation=90, fontsize=7)
        log_y(ax)
        ax.set_ylim(low, None)
        ax.set_xlim(-0.5, len(rows) - 0.5)
        ax.set_ylabel(f"step {step}: output max |Δ|")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    title = f"{experiment}: {layer_count(frame)} layers, each layer's output along the depth"
    fig.suptitle(title, fontsize=10)
    save(fig, path)
