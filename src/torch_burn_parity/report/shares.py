"""Two sentences of an explained experiment's section: how the measured shares split its f64
gap (replay.py's chain, link by link), and what to change in a port for each cause."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch_burn_parity.judgement import effect as ef
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.judgement.fixes import fixes
from torch_burn_parity.report.actions import anchor, proof_text
from torch_burn_parity.report.verdict_text import e

if TYPE_CHECKING:
    from torch_burn_parity.report.experiment_files import ExperimentFiles

# The chain's columns after the held values and Burn's layer settings, in its order.
FURTHER = (
    ("dparam_burn_loss", "with Burn's smoothed targets as well"),
    ("dparam_burn_lrs", "with Burn's learning rates as well"),
    ("dparam_burn_clipping", "with Burn's clipping as well"),
    ("dparam_burn_running_stats", "with Burn's running-variance estimator as well"),
    ("dparam_burn_lr_adjustment", "with Muon's lr factor of Burn's shapes as well"),
    ("dparam_burn_newton_schulz", "with Burn's Newton–Schulz (f64) as well"),
)


def arithmetic_remainder(x: ExperimentFiles) -> str:
    """What the share no variant measures is put down to."""
    if x.has_factors:
        return "the per-step factors Burn evaluated in f32."
    return "Burn's f32 arithmetic in its update."


def columns_from(c, prefix: str) -> list[str]:
    return [column for column in c.columns if column.startswith(prefix)]


def values_at_step_one(x: ExperimentFiles, values: list[str]) -> str:
    """Where the values one at a time stand at step 1, before a momentum or an average has
    carried anything over: a value that differs there alone shows it."""
    c, s = x.counterfactual, x.steps
    first = s.loc[s["step"] == 1, "f64_f64"]
    if not values or first.empty or float(first.iloc[0]) <= 0:
        return ""
    gap = float(first.iloc[0])
    row = c.loc[c["step"] == 1].iloc[0]
    stands = ", ".join(
        f"{'with' if i == 0 else 'then'} {column[len(vd.VALUE_COLUMN) : -1]}"
        f" {e(row[column])} ({min(row[column] / gap, 1.0):.1%})"
        for i, column in enumerate(values)
    )
    return f" At step 1, where the f64 gap is {e(gap)}: {stands} of it."


def share_sentence(x: ExperimentFiles, held: float) -> str:
    """How the measured shares split the f64 gap (the verdict's causes, in words)."""
    gap, c = x.verdict.f64_gap, x.counterfactual
    values = columns_from(c, vd.VALUE_COLUMN)  # Burn's differing values one at a time
    links = [
        (column, f"with Burn's {column[len(vd.VALUE_COLUMN) : -1]}" + (" as well" if i else ""))
        for i, column in enumerate(values)
    ]
    if values:
        links.append(("dparam_held_f64", "with every value as Burn holds it (f32 storage too)"))
    links += [  # Burn's layer settings, one at a time
        (column, f"with Burn's {column[len(vd.LAYER_COLUMN) : -1]} as well")
        for column in columns_from(c, vd.LAYER_COLUMN)
    ]
    links += [(column, label) for column, label in FURTHER if column in c]
    if links:
        further = [(label, float(c[column].max())) for column, label in links]
        last = further[-1][1]
        measured = "; ".join(f"{label} {e(gap_)}" for label, gap_ in further)
        held_first = "" if values else f" by {e(held)} with Burn's held values;"
        return (
            "Shares: Burn's choices added one at a time to the counterfactual (every scalar"
            f" in f64) move the run from PyTorch's{held_first} {measured} — of the {e(gap)} gap"
            " (measured, largest over the steps; each choice's share in the verdict is how"
            " much further it moves the run)."
            + values_at_step_one(x, values)
            + (
                f" The remaining {1 - min(last / gap, 1.0):.1%} is attributed to what"
                " separates the last of these from the replay that reproduces Burn: "
                + arithmetic_remainder(x)
                if 1 - min(last / gap, 1.0) >= vd.MIN_SHARE
                else ""
            )
        )
    return (
        f"Shares: Burn's held values alone (every scalar in f64) move the run {e(held)} from"
        f" PyTorch's, {min(held / gap, 1.0):.1%} of the {e(gap)} gap (measured)."
        + (
            " The remainder is attributed to what separates that variant from the replay"
            " that reproduces Burn: " + arithmetic_remainder(x)
            if 1 - min(held / gap, 1.0) >= vd.MIN_SHARE
            else ""
        )
    )


def fix_sentence(x: ExperimentFiles) -> str:
    """What to change in a port, per cause (judgement/fixes.py)."""
    parts = []
    for f in fixes(x.record, x.paired):
        action = f.fix if f.fix else f"no setting removes it ({f.why_not})"
        parts.append(f"{f.kind} ({f.share:.1%}): {action}. Evidence: {f.evidence}.")
    proof = (
        f" Proving run {anchor(x.proof)}, the same experiment with these fixes applied on"
        " Burn's side:"
        f" {proof_text(x.proof)}."
        if x.proof
        else ""
    )
    return (
        "What to change in your port — "
        + " ".join(f"({i}) {part}" for i, part in enumerate(parts, 1))
        + proof
    )


def sensitivity_sentence(sensitivity: dict) -> str:
    """How the run's own rounding compares with what is measured (judgement/effect.py)."""
    own, gap = sensitivity["own_gap"], sensitivity["f64_gap"]
    largest = max(own.values())
    out = [
        f"Sensitive to rounding: rounding alone moves this run by {e(own['torch'])} (PyTorch's"
        f" own f32 run against its f64 run) and {e(own['burn'])} (Burn's)"
    ]
    if sensitivity["within_rounding"]:
        out.append(
            f", within a factor {ef.SEPARABLE:g} of the {e(gap)} f64 gap between the frameworks"
        )
    named = "; ".join(f"`{c}`" for c in sensitivity["not_separable"])
    out.append(
        f". The shares of the rounding-sized causes ({named}) measure moves within a factor"
        f" {ef.SEPARABLE:g} of that {e(largest)}: of the order of what rounding alone does to"
        " this run, so not separable from it."
    )
    return "".join(out)
