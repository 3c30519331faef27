"""A verdict record in words: the verdict line, its cause or where it starts.

Every function takes one experiment's record as judgement/judge.py writes it and decides
nothing: the report's sections, its verdict table and the HTML landing page all say a
verdict through these, so they say it the same way.
"""

from __future__ import annotations

from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.models.layer_names import matches_any
from torch_burn_parity.models.model_specs import spec


def e(x: float) -> str:
    """A gap as the tables print it."""
    return "NaN" if x != x else f"{x:.2e}"


def buffer_names(record: dict) -> tuple[str, ...]:
    return spec(record["model"], record.get("model_size")).buffer_names


def evaluation_only(record: dict) -> bool:
    """A difference in the buffers alone: training matches, evaluation parts."""
    return record["scope"] == vd.EVALUATION


def short_verdict(record: dict) -> str:
    """`name`: verdict, and for an explained one its largest cause."""
    text = f"`{record['experiment']}`: {record['verdict']}"
    if evaluation_only(record):
        text += " (evaluation state only)"
    if record["verdict"] == vd.EXPLAINED and record["causes"]:
        text += f" — {record['causes'][0]['cause']}"
    return text


def evaluation_phrase(record: dict) -> str:
    """'in the evaluation state only: training matches up to rounding (…), the buffers
    leave the rounding floor at step 1 (…)', from the verdict's parameter/buffer split."""
    split = record["split"]
    return (
        "in the evaluation state only: training matches up to rounding (the f64 parameter"
        f" gap stays within the floor, at most {e(split['params_gap'])}), the buffers"
        f" ({', '.join(buffer_names(record))}) leave the rounding floor at step"
        f" {split['buffers_first']} (f64 gap up to {e(split['buffers_gap'])})"
    )


def divergence(record: dict) -> list[str]:
    """'torch f32 diverged at step 5' for each run whose loss or parameters went non-finite."""
    return [
        f"{d['framework']} {d['dtype']} diverged at step {d['step']} (loss {d['loss']:.3g}"
        " at that step)"
        for d in record["divergence"]
    ]


def model_entry(record: dict) -> str:
    """Where the layers table says the f64 difference enters, when that is before the
    update: in the model's own computation (forward, loss or backward). The replay re-runs
    only the update, on PyTorch's gradients, so it cannot follow it."""
    entry = record["entry"]
    if not entry:
        return ""
    layer, phase, step = entry["layer"], entry["phase"], entry["step"]
    what = {
        "forward": f"the output of `{layer}` in the forward pass",
        "loss": "the loss",
        "backward": (
            f"the input gradient of `{layer}` in the backward pass"
            if matches_any(layer, spec(record["model"], record.get("model_size")).layers)
            else f"the gradient of `{layer}` in the backward pass"
        ),
    }[phase]
    passes = {"forward": "the forward pass", "loss": "the loss",
              "backward": "the backward pass"}  # fmt: skip
    where = (
        f"Burn's `{layer}` introduces it, at {what} of step {step} (the layer run on"
        " PyTorch's input, layers table)"
        if entry.get("introduced")
        else f"it enters before the update, at {what} of step {step} (layers table)"
    )
    return (
        f"; {where}: the replay re-runs only the update on PyTorch's gradients, so it cannot"
        f" follow a difference in {passes[phase]}"
    )


def unexplained_start(record: dict) -> str:
    """Where no replay follows the gap any more (or where the f64 gap leaves the floor),
    and the layer where it enters."""
    where = record["unexplained_start"]
    if not where:
        step, at = record["first_above_floor"], record["where_first_above"]
        where = f"the f64 gap leaves the rounding floor at step {step} (`{at}`)"
    return where + model_entry(record)


def buffer_cause(record: dict) -> str:
    """What the counterfactual measures of the buffers' gap (`dparam_burn_running_stats`,
    Burn's running-variance estimator on PyTorch's gradients) against the f64 gap of the
    buffers: named as the cause when the judgement says it accounts for it."""
    found = record["buffers_cause"]
    if not found:
        return ""
    measured = (
        f"Burn's estimator alone moves PyTorch's run by {e(found['moved'])} (counterfactual,"
        f" `{vd.RUNNING_STATS_COLUMN}`), against the buffers' f64 gap of"
        f" {e(found['buffers_gap'])}"
    )
    if found["accounts_for_it"]:
        return f"caused by {found['name']}: {measured}"
    return f"not accounted for by {found['name']} alone: {measured}"


def unexplained_parts(record: dict) -> str:
    """Where an unexplained difference starts; when the parameters and the buffers both
    leave the floor, the parameters' start and what the counterfactual measures of the
    buffers, each under its own name."""
    buffers = buffer_cause(record) if record["both_parts"] else ""
    if not buffers:
        return unexplained_start(record)
    return f"parameters — {unexplained_start(record)}; buffers — {buffers}"


def verdict_detail(record: dict) -> str:
    """The verdict's cause (with shares), where it starts, or where a run diverged."""
    label = record["verdict"]
    if label == vd.DIVERGED:
        return "; ".join(divergence(record))
    scope = "evaluation state only (training matches up to rounding): "
    scope = scope if evaluation_only(record) else ""
    if label == vd.EXPLAINED:
        return scope + (record["cause"] or "")
    if label == vd.UNEXPLAINED:
        return scope + unexplained_parts(record)
    return ""


def verdict_line(record: dict) -> str:
    """The verdict of an experiment's section, with where and why."""
    label, cause, detail = record["verdict"], record["cause"], verdict_detail(record)
    if record["both_parts"]:
        split = record["split"]
        where = (
            "in training and in the evaluation state: the parameters leave the rounding"
            f" floor at step {split['params_first']} (f64 gap up to {e(split['params_gap'])}),"
            f" the buffers ({', '.join(buffer_names(record))}) at step"
            f" {split['buffers_first']} (up to {e(split['buffers_gap'])})"
        )
        if label == vd.EXPLAINED:
            return f"{label}, {where} — {cause}"
        parts = unexplained_parts(record)
        return f"{label}, {where}" + (
            f": {parts}" if parts.startswith("parameters — ") else f" — {parts}"
        )
    if evaluation_only(record):
        if label == vd.EXPLAINED:
            return f"{label}, {evaluation_phrase(record)} — caused by {cause}"
        return f"{label}, {evaluation_phrase(record)}; {unexplained_start(record)}"
    if label == vd.EXPLAINED:
        return f"{label} by {detail}"
    return f"{label}: {detail}" if detail else label
