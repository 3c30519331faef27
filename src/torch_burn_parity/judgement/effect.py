"""Does a difference matter? Its effect on what training produces, and a verdict's margin.

A verdict says whether the two frameworks compute the same thing; this module says what the
difference does to the trained model, in the terms a person porting a model cares about,
from the final evaluation both trainers record (the whole dataset, in eval mode where the
model has one). The effect is judged on the f32 runs (the precision people train in); the
f64 runs' effect is kept beside it (the arithmetic without f32 rounding).

Severity, the first that applies (after `one run diverged` / `both runs diverged`, when a
final loss is not finite):

* `changes what the model predicts`: some sample's predicted class differs;
* `changes the loss in the k-th digit`: the final losses first differ in their k-th
  significant digit, k ≤ NO_EFFECT_DIGITS;
* `no effect on the outcome`: the same predictions, and the final losses agree to more
  than NO_EFFECT_DIGITS significant digits.

A difference *changes the outcome* of training when it changes a prediction or the loss in
one of its first OUTCOME_DIGITS digits, and by more than rounding alone does: more
predictions, or a larger loss difference, than either framework's own f32 run differs from
its own f64 run by (`rounding`). What rounding alone changes is the noise floor of an
effect: 147 of a text model's predictions can flip between one framework's f32 and f64 runs.

A run is *sensitive* to rounding (`sensitivity`) when what rounding alone does to it (its
own f32-vs-f64 parameter gap, the larger of the two frameworks') is within a factor
SEPARABLE of the move a rounding-sized cause (an f32-stored value, f32 or bfloat16
arithmetic) is measured to make; `within_rounding` when it is within that factor of the
whole f64 gap between the frameworks (then every rounding-sized cause is). Such a cause's
share is of the order of what rounding alone does to this run, not separable from it: a
chaotic run (Muon's, whose own f32 and f64 losses differ by 9 %) gives an f32-stored beta a
share that any other rounding-sized change would take as well.

The margin of a verdict: the largest ratio over the steps of the f64 gap to its rounding
floor (the verdict turns on whether any step's ratio exceeds 1). Within a factor MARGINAL of
1, either side, the verdict is *marginal*: the floor carries a headroom factor of
verdict.SAFETY for the frameworks' different order of operations, and a verdict that a
factor of 2 in that estimate would flip is not one to lean on.
"""

from __future__ import annotations

import math

# The final losses agreeing to more than this many significant digits, with the same
# predictions: no effect on the outcome (f32 keeps about 7; a loss after 100 steps of f32
# rounding agrees to about 6).
NO_EFFECT_DIGITS = 5
# A difference in a prediction, or in one of the loss's first OUTCOME_DIGITS digits,
# changes the outcome of training.
OUTCOME_DIGITS = 2
# A verdict whose gap/floor ratio lies within this factor of 1 (either side) is marginal.
MARGINAL = 2.0
# A move within this factor of what rounding alone does is not separable from it.
SEPARABLE = 10.0
# The kinds of cause (fixes.py) that are of rounding's size: a value's f32 storage, or
# arithmetic in f32 or bfloat16.
ROUNDING_SIZED = ("f32 storage", "held values", "f32 arithmetic", "Muon precision",
                  "loss precision")  # fmt: skip

NO_EFFECT = "no effect on the outcome"
PREDICTIONS = "changes what the model predicts"
DIVERGED = "one run diverged (its final loss is not finite)"
BOTH_DIVERGED = "both runs diverged (no outcome to compare)"


def ordinal(k: int) -> str:
    """1st, 2nd, 3rd, 4th, …, 11th, 12th, 13th, 21st."""
    suffix = "th" if 11 <= k % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def agreeing_digits(a: float, b: float) -> int | None:
    """How many leading significant digits two losses share: ⌊−log10(|a − b| / |a|)⌋
    (None when they are equal; 0 when they differ by as much as they are)."""
    if a == b:
        return None
    scale = max(abs(a), abs(b))
    if not (math.isfinite(a) and math.isfinite(b)) or scale == 0:
        return 0
    return max(0, math.floor(-math.log10(abs(a - b) / scale)))


def final_effect(torch_final: dict, burn_final: dict) -> dict:
    """The effect of one precision's runs on the trained model (their `final` blocks)."""
    t_pred, b_pred = torch_final["predictions"], burn_final["predictions"]
    # A regression (loss mse) predicts no classes: its outcome is its final loss alone.
    classes = t_pred is not None and b_pred is not None
    n = len(t_pred) if classes else 0
    differ = sum(a != b for a, b in zip(t_pred, b_pred, strict=True)) if classes else 0
    accuracy = lambda final: final["correct"] / n if n else None  # noqa: E731
    t_loss, b_loss = float(torch_final["loss"]), float(burn_final["loss"])
    digits = agreeing_digits(t_loss, b_loss)
    finite = [math.isfinite(t_loss), math.isfinite(b_loss)]
    if not all(finite):
        # a diverged run: its loss and predictions say nothing about the arithmetic
        severity = DIVERGED if any(finite) else BOTH_DIVERGED
    elif differ:
        severity = PREDICTIONS
    elif digits is not None and digits < NO_EFFECT_DIGITS:
        severity = f"changes the loss in the {ordinal(digits + 1)} digit"
    else:
        severity = NO_EFFECT
    return {
        "torch": {"loss": t_loss, "accuracy": accuracy(torch_final)},
        "burn": {"loss": b_loss, "accuracy": accuracy(burn_final)},
        "d_loss": abs(t_loss - b_loss),
        "loss_digits": digits,
        "predictions_differ": differ,
        "samples": n,
        "severity": severity,
        "changes_outcome": severity != BOTH_DIVERGED
        and (bool(differ) or (digits is not None and digits < OUTCOME_DIGITS)),
    }


def rounding_effect(runs: dict) -> dict:
    """What rounding alone does to each framework's outcome: its own f32 run's final
    predictions and loss against its own f64 run's."""
    found = {}
    for fw in ("torch", "burn"):
        own = final_effect(runs[fw, "f32"]["final"], runs[fw, "f64"]["final"])
        found[fw] = {key: own[key] for key in ("predictions_differ", "d_loss", "loss_digits")}
    return found


def beyond_rounding(found: dict, rounding: dict) -> bool:
    """Whether the frameworks' f32 outcomes differ by more than rounding alone makes either
    framework's differ: in predictions when some differ, else in the final loss."""
    own = rounding.values()
    if found["predictions_differ"]:
        return found["predictions_differ"] > max(r["predictions_differ"] for r in own)
    return found["d_loss"] > max(r["d_loss"] for r in own)


def effect(runs: dict) -> dict:
    """The effect of the difference on training: per precision (runs keyed (framework,
    dtype)), the f32 one deciding the severity, against what rounding alone does."""
    found = {dt: final_effect(runs["torch", dt]["final"], runs["burn", dt]["final"])
             for dt in ("f32", "f64")}  # fmt: skip
    # What a prediction is of: a sample, or one position of a text block (next character).
    per_position = runs["torch", "f32"].get("meta", {}).get("data") == "text"
    rounding = rounding_effect(runs)
    beyond = math.isfinite(found["f32"]["d_loss"]) and beyond_rounding(found["f32"], rounding)
    diverged = found["f32"]["severity"] == DIVERGED
    return {
        **found["f32"],
        "changes_outcome": found["f32"]["changes_outcome"] and (beyond or diverged),
        "rounding": rounding,
        "beyond_rounding": beyond,
        "unit": "positions" if per_position else "samples",
        "f64": found["f64"],
    }


def sensitivity(parts: list[dict], own: dict[str, float], f64_gap: float) -> dict | None:
    """How a run's own rounding compares with what is measured of it (None when it is
    separable everywhere): `own` is each framework's own f32-vs-f64 parameter gap; `parts`
    the record's parts (record_parts.py), whose causes' moves are share × the part's gap."""
    from torch_burn_parity.judgement.fixes import kind_of

    largest = max(own.values())
    if not (math.isfinite(largest) and math.isfinite(f64_gap)):
        return None
    within = largest * SEPARABLE >= f64_gap
    not_separable = [
        c["cause"]
        for p in parts
        for c in p["causes"]
        if kind_of(c["cause"])[0] in ROUNDING_SIZED and c["share"] * p["gap"] < SEPARABLE * largest
    ]
    if not not_separable:  # no share to qualify: a run without rounding-sized causes
        return None
    return {"own_gap": own, "f64_gap": f64_gap, "within_rounding": within,
            "not_separable": not_separable}  # fmt: skip


def marginal(gap_over_floor: float) -> bool:
    """A verdict whose largest gap/floor ratio lies within MARGINAL of 1, either side."""
    ratio = float(gap_over_floor)
    return bool(math.isfinite(ratio) and 1 / MARGINAL <= ratio <= MARGINAL)
