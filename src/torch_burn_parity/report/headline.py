"""The report's first lines: how many verdicts of each kind, which differences change the
outcome of training, which verdicts are marginal; and the verdict table's cells that say
what a difference does (effect, margin). From the verdict records only (judgement/effect.py
decides; this module says it)."""

from __future__ import annotations

from collections import Counter

from torch_burn_parity.config.proving import original
from torch_burn_parity.judgement import effect as ef
from torch_burn_parity.judgement import verdict as vd

# Each verdict counted: (one, several).
COUNTED = {
    vd.EQUIVALENT: ("equivalent up to rounding", "equivalent up to rounding"),
    vd.EXPLAINED: ("explained algorithmic difference", "explained algorithmic differences"),
    vd.UNEXPLAINED: ("unexplained algorithmic difference", "unexplained algorithmic differences"),
    vd.DIVERGED: ("diverged", "diverged"),
}


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def effect_cell(record: dict) -> str:
    """'changes what the model predicts (29 of 96 samples; right 69.8% vs 100.0%)'."""
    effect = record["effect"]
    t, b = effect["torch"], effect["burn"]
    if effect["predictions_differ"]:
        detail = (
            f"{effect['predictions_differ']} of {effect['samples']}"
            f" {effect.get('unit', 'samples')}; PyTorch right on"
            f" {pct(t['accuracy'])}, Burn on {pct(b['accuracy'])}"
        )
    else:
        # enough digits to show where they part
        n = max(4, (effect["loss_digits"] or 0) + 2)
        detail = f"final loss: PyTorch {t['loss']:.{n}g}, Burn {b['loss']:.{n}g}"
        if effect["loss_digits"] is None:
            detail = f"final loss {t['loss']:.4g} in both"
    return f"{effect['severity']} ({detail}{rounding_detail(effect)})"


def rounding_detail(effect: dict) -> str:
    """'; rounding alone: 0 and 2' — what each framework's own f32 and f64 runs differ by,
    in the terms of the effect (predictions, or the final loss); '' without an effect."""
    own = effect.get("rounding")
    if not own or effect["severity"] in (ef.NO_EFFECT, ef.DIVERGED, ef.BOTH_DIVERGED):
        return ""
    t, b = own["torch"], own["burn"]
    if effect["predictions_differ"]:
        return (
            f"; rounding alone: {t['predictions_differ']} (PyTorch's f32 vs f64 runs),"
            f" {b['predictions_differ']} (Burn's)"
        )
    return f"; rounding alone moves it by {t['d_loss']:.2g} (PyTorch), {b['d_loss']:.2g} (Burn)"


def within_rounding(effect: dict) -> bool:
    """An outcome changed by the rule's digits or predictions, but no more than rounding
    alone changes it (effect.py's noise floor): not counted as a change."""
    by_rule = effect["predictions_differ"] or (
        effect["loss_digits"] is not None and effect["loss_digits"] < ef.OUTCOME_DIGITS
    )
    finite = effect["severity"] not in (ef.DIVERGED, ef.BOTH_DIVERGED)
    return bool(by_rule) and finite and not effect.get("beyond_rounding", True)


def margin_cell(record: dict) -> str:
    """'×4.66' (the largest gap/floor ratio over the steps), 'marginal' within a factor 2,
    '; sensitive to rounding' for a run effect.py marks so."""
    ratio = record["gap_over_floor"]
    if ratio != ratio:
        return "—"
    sensitive = "; sensitive to rounding" if record.get("sensitivity") else ""
    return (f"×{ratio:.3g} marginal" if record["marginal"] else f"×{ratio:.3g}") + sensitive


def counts(records: list[dict]) -> str:
    """'17 experiments: 2 equivalent up to rounding; 14 explained algorithmic differences; …'."""
    found = Counter(r["verdict"] for r in records)
    parts = [f"{found[label]} {COUNTED[label][found[label] != 1]}" for label in COUNTED
             if found[label]]  # fmt: skip
    n = len(records)
    proving = sum(1 for r in records if original(r["experiment"]))
    of_them = f" ({proving} of them proving runs of a fix)" if proving else ""
    return f"{n} experiment{'s' if n != 1 else ''}{of_them}: " + "; ".join(parts)


def headline(records: list[dict]) -> str:
    """The report's first screen after its title: the counts, then what changes the outcome
    of training, then the marginal verdicts."""
    if not records:
        return ""
    lines = [f"**{counts(records)}.**"]
    changed = [r for r in records if r["effect"]["changes_outcome"]]
    rule = (
        f"a prediction, or the final loss in one of its first {ef.OUTCOME_DIGITS} significant"
        " digits, f32 runs, by more than rounding alone changes it"
    )
    if changed:
        named = "; ".join(f"`{r['experiment']}` — {effect_cell(r)}" for r in changed)
        lines.append(
            f"**The difference changes the outcome of training in {len(changed)}** ({rule}):"
            f" {named}."
        )
    else:
        lines.append(f"No difference changes the outcome of training ({rule}).")
    within = [r for r in records if within_rounding(r["effect"])]
    if within:
        named = "; ".join(f"`{r['experiment']}` — {effect_cell(r)}" for r in within)
        lines.append(
            "Not counted, as rounding alone changes the outcome as much (each framework's own"
            f" f32 run against its own f64 run): {named}."
        )
    marginal = [r for r in records if r["marginal"]]
    if marginal:
        named = ", ".join(f"`{r['experiment']}` ({margin_cell(r)})" for r in marginal)
        lines.append(
            f"Marginal verdicts (the f64 gap within a factor {ef.MARGINAL:g} of its rounding"
            f" floor, which holds a headroom factor of {vd.SAFETY:g}): {named}."
        )
    else:
        lines.append(
            f"No verdict is marginal: every f64 gap is more than a factor {ef.MARGINAL:g} away"
            " from its rounding floor (the `gap / floor` column)."
        )
    return "\n\n".join(lines) + "\n"
