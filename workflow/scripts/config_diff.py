"""What each framework will actually do for one experiment, before anything runs.

    python workflow/scripts/config_diff.py --spec results/specs/adam.json \\
        --csv results/tables/config_diff_adam.csv --md results/tables/config_diff_adam.md

From the experiment's settings and what is known of the two frameworks (parity_config's
FRAMEWORK_DEFAULTS; Burn 0.22 stores Adam's betas and epsilon, the weight-decay penalty and
the momentum factor as f32, and computes Adam's bias-correction factors in f32), one row
per hyperparameter or numeric detail, with a status:

  same         both frameworks use the same value
  f32 storage  Burn holds the f32 rounding of PyTorch's value
  differs      the values differ (e.g. a framework default kept on one side)
  precision    the same formula evaluated at different precision
  unused       not used by this configuration (e.g. dampening without momentum)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from parity_config import (  # noqa: E402
    ConfigError,
    experiment_spec,
    load_config,
    requested_hyperparameters,
)
from parity_io import write_text_atomic  # noqa: E402

COLUMNS = ["hyperparameter", "torch", "burn", "status", "note"]
# Hyperparameters Burn 0.22 keeps as f32 (AdamConfig fields, WeightDecayConfig.penalty,
# Momentum::momentum); Burn's learning rate and SGD dampening are f64.
BURN_F32 = {"betas", "eps", "weight_decay", "momentum"}


def f32(x):
    if isinstance(x, list):
        return [f32(v) for v in x]
    return float(np.float32(x)) if not isinstance(x, bool) else x


def show(x, as_f32: bool = False) -> str:
    """A value as the config would write it; f32-held values by their shortest f32 digits."""
    if isinstance(x, list):
        return "[" + ", ".join(show(v, as_f32) for v in x) + "]"
    if as_f32 and not isinstance(x, bool):
        return str(np.float32(x))  # numpy prints the shortest digits that identify the f32
    return json.dumps(x)


def diff_rows(spec: dict) -> list[dict]:
    torch_values = requested_hyperparameters(spec, "torch")
    burn_requested = requested_hyperparameters(spec, "burn")
    rows = []
    momentum_used = spec["optimizer"] == "sgd" and (
        torch_values["momentum"] or burn_requested["momentum"]
    )
    for key in spec["hyperparameters"]:
        t = torch_values[key]
        b = f32(burn_requested[key]) if key in BURN_F32 else burn_requested[key]
        notes = [
            f"{fw} keeps its default"
            for fw in ("torch", "burn")
            if key in spec["keep_defaults"][fw]
        ]
        if key in ("dampening", "nesterov") and not momentum_used:
            status = "unused"
            notes.append("no momentum")
        elif t == b:
            status = "same"
        elif b == f32(t) and burn_requested[key] == t:
            status = "f32 storage"
        else:
            status = "differs"
        if key in BURN_F32 and t != b:
            notes.append(f"Burn holds the f32 value {json.dumps(b)}")
        rows.append({"hyperparameter": key, "torch": show(t), "burn": show(b, key in BURN_F32),
                     "status": status, "note": "; ".join(notes)})  # fmt: skip
    if spec["hyperparameters"]["weight_decay"] or burn_requested["weight_decay"]:
        rows.append({"hyperparameter": "weight decay style", "torch": "L2 (grad += wd·p)",
                     "burn": "L2 (grad += wd·p)", "status": "same", "note": ""})  # fmt: skip
    if spec["optimizer"] == "adam":
        rows.append({"hyperparameter": "bias-correction factors", "torch": "f64 (Python floats)",
                     "burn": "f32", "status": "precision",
                     "note": "sqrt(1-β₂^t)/(1-β₁^t) and ε·sqrt(1-β₂^t)"})  # fmt: skip
        exact = "exact in both for 0.5 ≤ β ≤ 1 (Sterbenz): only β's value counts"
        rows.append({"hyperparameter": "1 − β in moment updates", "torch": "f64", "burn": "f32",
                     "status": "precision", "note": exact})  # fmt: skip
    return rows


def render_md(frame: pd.DataFrame, experiment: str) -> str:
    return f"### Config diff: {experiment}\n\n" + frame.to_markdown(index=False) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, type=Path, help="an experiment's spec or config")
    parser.add_argument("--experiment", help="experiment name (default: the spec's only one)")
    parser.add_argument("--csv", required=True, type=Path)
    parser.add_argument("--md", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        config = load_config(args.spec)
        name = args.experiment or next(iter(config.get("experiments") or {}), "")
        spec = experiment_spec(config, name)
    except ConfigError as exc:
        sys.exit(f"config_diff: {exc}")
    frame = pd.DataFrame(diff_rows(spec), columns=COLUMNS)
    write_text_atomic(args.csv, frame.to_csv(index=False))
    write_text_atomic(args.md, render_md(frame, name))
    differs = frame[frame["status"] == "differs"]["hyperparameter"].tolist()
    print(f"{name}: {len(frame)} rows, differing: {differs or 'none'} -> {args.csv}")


if __name__ == "__main__":
    main()
