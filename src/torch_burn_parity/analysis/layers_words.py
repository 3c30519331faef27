"""The layers table in words (analysis/layers_table.py): where the f64 difference first
leaves its rounding floor, which rows leave with it, the largest, and which layer run on
PyTorch's own input introduces a difference."""

from __future__ import annotations

import numpy as np
import pandas as pd

# What a row's quantity is, by phase and by whether its name is a layer's (layers_table.py
# writes each row's `what` with these).
OUTPUT, LOSS, INPUT_GRAD, GRAD, VALUE = "output", "loss", "input gradient", "gradient", "value"


def e(x: float) -> str:
    return "NaN" if x != x else f"{x:.2e}"


# What updates a buffer: the buffers the models have are BatchNorm's running statistics,
# which its train-mode forward updates (the optimizer never touches them).
BUFFER_UPDATES = {
    "running_mean": "BatchNorm updates it in the train-mode forward",
    "running_var": "BatchNorm updates it in the train-mode forward",
}


def is_buffer(row) -> bool:
    """A buffer's row: a value in the forward phase (layers_table.py puts each buffer after
    the output of the layer whose train-mode forward updates it)."""
    return row["phase"] == "forward" and str(row["layer"]).rsplit(".", 1)[-1] in BUFFER_UPDATES


def buffer_rows(frame: pd.DataFrame) -> pd.Series:
    """Which rows of a layers table (its CSV too) are buffers'."""
    last = frame["layer"].astype(str).str.rsplit(".", n=1).str[-1]
    return (frame["phase"] == "forward") & last.isin(list(BUFFER_UPDATES))


def buffer_note(row) -> str:
    """'a buffer: BatchNorm updates it in the train-mode forward' for a buffer's row, else ''."""
    return f"a buffer: {BUFFER_UPDATES[row['layer'].rsplit('.', 1)[-1]]}" if is_buffer(row) else ""


def quantity(row) -> str:
    """'`conv.weight` in the update of step 1', '`bn.running_var` after the forward pass of
    step 1' (a buffer: the optimizer does not update it), 'the loss of step 1', …"""
    step = row["step"]
    if is_buffer(row):
        return f"`{row['layer']}` after the forward pass of step {step}"
    return {
        OUTPUT: f"the output of `{row['layer']}` in the forward pass of step {step}",
        LOSS: f"the loss of step {step}",
        INPUT_GRAD: f"the input gradient of `{row['layer']}` in the backward pass of step {step}",
        GRAD: f"the gradient of `{row['layer']}` in the backward pass of step {step}",
        VALUE: f"`{row['layer']}` in the update of step {step}",
    }[row["what"]]


# Up to this many further rows of the first (step, phase) above their floor are named; more
# are counted, with the largest.
NAMED_UP_TO = 8


def sentence(frame: pd.DataFrame) -> str:
    """Where the f64 difference first leaves rounding, or that it never does; then the other
    rows of that step and phase that leave their floor, and the largest f64 difference of
    that step when it is at another row."""
    first = frame[frame["first_above_floor"]]
    if first.empty:
        steps = [str(s) for s in dict.fromkeys(frame["step"])]
        which = f"step {steps[0]}" if len(steps) == 1 else f"steps {', '.join(steps)}"
        return f"f64: every quantity stays within rounding at the probe {which}."
    index = first.index[0]
    row = frame.loc[index]
    if is_buffer(row):
        return buffer_first(frame, row)
    text = (
        f"f64: the difference enters at {quantity(row)} (max|Δ| {e(row['max_abs_diff_f64'])}"
        f" against a rounding floor of {e(row['floor'])})"
    )
    step = frame[frame["step"] == row["step"]]
    above = step[~(step["max_abs_diff_f64"] <= step["floor"])]
    more = above[(above["phase"] == row["phase"]) & (above.index != index)]
    if row["phase"] == "update" and len(more):
        # The update rows are one per parameter, none computed from another: several
        # leaving their floors in one step leave together, and none of them is "first".
        return together(frame, above[above["phase"] == row["phase"]], row["step"])
    if len(more):
        diffs = more["max_abs_diff_f64"]
        span = (
            f"max|Δ| {e(diffs.min())} to {e(diffs.max())}"
            if e(diffs.min()) != e(diffs.max())
            else f"max|Δ| {e(diffs.max())} each"
        )
        if len(more) <= NAMED_UP_TO:
            names = ", ".join(f"`{name}`" for name in more["layer"])
            leave = (
                f"rows of step {row['step']} leave their floors"
                if len(more) > 1
                else f"row of step {row['step']} leaves its floor"
            )
            text += f"; {len(more)} more {row['phase']} {leave}: {names} ({span})"
        else:
            text += (
                f"; {len(more)} more {row['phase']} rows of step {row['step']} leave their"
                f" floors ({span})"
            )
    # NaN (a non-finite difference) counts as the largest, as it counts as above the floor.
    # Named only when it prints apart from the first row's (not a tie to the digits shown).
    largest = step["max_abs_diff_f64"].fillna(np.inf).idxmax()
    if e(frame.loc[largest, "max_abs_diff_f64"]) != e(row["max_abs_diff_f64"]):
        big = frame.loc[largest]
        note = f" ({buffer_note(big)})" if is_buffer(big) else ""
        text += (
            f". The largest f64 difference of step {row['step']} is at {quantity(big)}{note}:"
            f" {e(big['max_abs_diff_f64'])}"
        )
    return text + "."


def buffer_first(frame: pd.DataFrame, row) -> str:
    """A running statistic leaves its floor first (BatchNorm's train-mode forward updates
    it; the evaluation state's): it, then where the rest of the step's computation parts."""
    head = (
        f"f64: the difference enters at {quantity(row)} (max|Δ| {e(row['max_abs_diff_f64'])}"
        f" against a rounding floor of {e(row['floor'])}; {buffer_note(row)})."
    )
    rest = frame[~buffer_rows(frame)].copy()
    above = ~(rest["max_abs_diff_f64"] <= rest["floor"])
    rest["first_above_floor"] = False
    if above.any():
        rest.loc[above.idxmax(), "first_above_floor"] = True
    return f"{head} Apart from the running statistics, {sentence(rest).removeprefix('f64: ')}"


def together(frame: pd.DataFrame, rows: pd.DataFrame, step: int) -> str:
    """'f64: the difference enters in the update of step 1, where 4 rows leave their floors
    together: … (max|Δ| … to …). The largest f64 difference of step 1 is at …': update rows,
    one per parameter, have no order among themselves."""
    diffs = rows["max_abs_diff_f64"]
    tie = e(diffs.min()) == e(diffs.max())  # to the digits shown
    span = (
        f"max|Δ| {e(diffs.max())} each" if tie else f"max|Δ| {e(diffs.min())} to {e(diffs.max())}"
    )
    names = ""
    if len(rows) <= NAMED_UP_TO:
        names = ": " + ", ".join(f"`{name}`" for name in rows["layer"])
    text = (
        f"f64: the difference enters in the update of step {step}, where {len(rows)} rows leave"
        f" their floors together{names} ({span})"
    )
    # NaN (a non-finite difference) counts as the largest, as it counts as above the floor.
    in_step = frame[frame["step"] == step]
    largest = frame.loc[in_step["max_abs_diff_f64"].fillna(np.inf).idxmax()]
    if not tie or largest.name not in rows.index:
        note = f" ({buffer_note(largest)})" if is_buffer(largest) else ""
        text += (
            f". The largest f64 difference of step {step} is at {quantity(largest)}{note}:"
            f" {e(largest['max_abs_diff_f64'])}"
        )
    return text + "."


def local_sentence(frame: pd.DataFrame) -> str:
    """Where a layer run on PyTorch's input first leaves its floor (introduces a difference),
    and which layers only carry one in; '' without local values."""
    if frame["local_f64"].isna().all():
        return ""
    measured = frame[frame["local_f64"].notna()]
    accumulated = ~(measured["max_abs_diff_f64"] <= measured["floor"])
    local = ~(measured["local_f64"] <= measured["floor"])
    carried = measured[accumulated & ~local]
    first = frame[frame["introduced_first"]]
    if first.empty:
        text = "Each layer run on PyTorch's input stays within its floor (f64): no layer"
        text += " introduces a difference"
        if len(carried):
            text += (
                f"; the {len(carried)} layer outputs and input gradients above their floors"
                " only carry one in"
            )
        return text + "."
    row = first.iloc[0]
    last = frame[frame["phase"] == "forward"]["layer"].iloc[-1]
    loss = (
        ", the loss included: the last layer's backward starts from Burn's loss"
        if row["what"] == INPUT_GRAD and row["layer"] == last
        else ""
    )
    text = (
        f"Run on PyTorch's input, the first layer to introduce a difference is `{row['layer']}`:"
        f" {quantity(row)} differs by {e(row['local_f64'])} (its floor {e(row['floor'])}{loss})"
    )
    if len(carried):
        names = list(dict.fromkeys(carried["layer"]))
        shown = ", ".join(f"`{n}`" for n in names[:NAMED_UP_TO])
        more = f" and {len(names) - NAMED_UP_TO} more" if len(names) > NAMED_UP_TO else ""
        text += (
            f"; {shown}{more} only carry a difference in (above the floor in their own"
            " forward or backward, within it on PyTorch's input)"
        )
    return text + "."
