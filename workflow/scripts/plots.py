"""Plots of one experiment: the four gaps against step (log scale) and the loss curves.

    python workflow/scripts/plots.py --experiment adam --steps results/tables/steps_adam.csv \\
        --tol 1e-6 --gaps results/plots/gaps_adam.png --losses results/plots/losses_adam.png
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parity_io import write_atomic  # noqa: E402

GAPS = {
    "dparam": "f32: torch vs burn",
    "torch_f64": "torch: f32 vs f64",
    "burn_f64": "burn: f32 vs f64",
    "f64_f64": "f64: torch vs burn",
}
# Fixed metadata so the same data give the same PNG bytes.
PNG_METADATA = {"Software": None}


def save(fig, path: Path) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata=PNG_METADATA)
    plt.close(fig)
    write_atomic(path, buffer.getvalue())


def gap_plot(frame: pd.DataFrame, experiment: str, tol: float, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4))
    for column, label in GAPS.items():
        values = frame[column].to_numpy(dtype=float)
        # log scale: exact zeros are drawn at the bottom edge instead of vanishing
        ax.plot(frame["step"], np.where(values > 0, values, np.nan), label=label)
    ax.axhline(tol, color="black", linestyle="--", linewidth=1, label=f"f32 tolerance {tol:g}")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("max |Δ param|")
    ax.set_title(f"{experiment}: parameter gaps")
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    save(fig, path)


def loss_plot(frame: pd.DataFrame, experiment: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(frame["step"], frame["torch_loss"], label="PyTorch (f32)")
    ax.plot(frame["step"], frame["burn_loss"], linestyle="--", label="Burn (f32)")
    ax.set_xlabel("step")
    ax.set_ylabel("batch loss")
    ax.set_title(f"{experiment}: training loss")
    ax.legend()
    ax.grid(True, alpha=0.3)
    save(fig, path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--steps", required=True, type=Path, help="steps_{experiment}.csv")
    parser.add_argument("--tol", required=True, type=float)
    parser.add_argument("--gaps", required=True, type=Path)
    parser.add_argument("--losses", required=True, type=Path)
    args = parser.parse_args(argv)
    frame = pd.read_csv(args.steps)
    gap_plot(frame, args.experiment, args.tol, args.gaps)
    loss_plot(frame, args.experiment, args.losses)
    print(f"{args.experiment}: {args.gaps}, {args.losses}")


if __name__ == "__main__":
    main()
