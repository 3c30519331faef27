"""The readings of an experiment's section that take a page of reasoning: the gradient probe
at step 1 and the train-mode against eval-mode losses of a model with buffers.

The probe's thresholds are here, with what each sentence says of its numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from torch_burn_parity.analysis import probe
from torch_burn_parity.io.parity_io import FRAMEWORK_NAMES as NAMES
from torch_burn_parity.io.parity_io import RUNS
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.report.markdown import md_table, setting
from torch_burn_parity.report.verdict_text import e

if TYPE_CHECKING:
    from torch_burn_parity.report.experiment_files import ExperimentFiles


def eval_reading(x: ExperimentFiles) -> str:
    """The last train-mode loss (`losses[-1]`, batch statistics) beside the final
    eval-mode loss and correct count (`final`, running statistics, whole dataset)."""
    n = len(x.steps)
    rows, loss, evaluated = [], {}, {}
    for fw, dt in RUNS:
        run = x.runs[fw, dt]
        final = run["final"]
        loss[fw, dt], evaluated[fw, dt] = float(run["losses"][-1]), float(final["loss"])
        rows.append({
            "run": f"{NAMES[fw]} {dt}",
            f"train-mode loss, step {n}": f"{loss[fw, dt]:.8g}",
            "eval-mode loss": f"{evaluated[fw, dt]:.8g}",
            "eval-mode correct": "—" if final["correct"] is None  # a regression (mse)
            else f"{final['correct']} of {len(final['predictions'])}",
        })  # fmt: skip
    losses = x.record["losses"]  # judged in judgement/step_one.py
    d_train, d_eval, floor = losses["d_train"], losses["d_eval"], losses["floor"]
    correct = {fw: x.runs[fw, "f64"]["final"]["correct"] for fw in ("torch", "burn")}
    counts = f"in eval mode PyTorch gets {correct['torch']} right, Burn {correct['burn']}."
    if None in correct.values():  # a regression (mse): no classes to get right
        counts = "neither predicts classes (a regression)."
    intro = f"\n\nIn f64, PyTorch's and Burn's losses at the last step, {n}, in train mode"
    if losses["agree"]:
        only = (
            ": only the running statistics separate them"
            if x.verdict.split and x.verdict.split.scope == vd.EVALUATION
            else ""
        )
        return (
            md_table(pd.DataFrame(rows))
            + f"{intro} (each batch's own statistics) agree to rounding ({e(d_train)}, under"
            f" the rounding floor of {e(floor)}); their final losses in eval mode (the"
            f" running statistics, the whole dataset) differ by {e(d_eval)}{only}; {counts}"
        )
    ratio = f" ({d_eval / d_train:.3g}× the train-mode difference)"
    return (
        md_table(pd.DataFrame(rows))
        + f"{intro} (each batch's own statistics) differ by {e(d_train)}; their final losses"
        f" in eval mode (the running statistics, the whole dataset) by {e(d_eval)}{ratio};"
        f" {counts}"
    )


def probe_reading(x: ExperimentFiles) -> str:
    """What the step-1 probe shows, computed from its rows; names both frameworks.

    'update' is the parameter after step 1 minus its initial value. An f32 update is
    the difference of two f32 numbers near the parameter, so it moves in steps of the
    parameter's f32 ulp: an f32 gradient error smaller than that cannot reach it.
    """
    p = x.probe.set_index(["framework", "dtype"])
    name = p["parameter"].iloc[0]
    row = {key: p.loc[key] for key in p.index}
    u = {key: float(r["update"]) for key, r in row.items()}
    ulp = float(np.spacing(np.float32(abs(float(row["torch", "f32"]["initial"])))))
    text = [
        f"At step 1, `{name}` (initial value {row['torch', 'f32']['initial']:.6g}) has an"
        f" f64 gradient of {row['torch', 'f64']['grad']:.4g} in PyTorch and"
        f" {row['burn', 'f64']['grad']:.4g} in Burn."
    ]
    judged = x.record["probe"]  # judged in judgement/step_one.py
    noise = judged["noise"]
    if noise:
        text.append(
            f"That is rounding noise: at most {probe.NOISE_ULPS} f64 ulps of the largest"
            f" |f64 gradient| of its tensor ({e(noise)}), the residue of terms that cancel"
            " exactly. Its f32 gradients and updates have nothing to be compared with."
        )
        return " ".join(text)
    rel = {fw: float(row[fw, "f32"]["grad_rel_err"]) for fw in ("torch", "burn")}
    text += [
        f"The f32 gradients are off by {rel['torch']:.2e} (PyTorch) and {rel['burn']:.2e}"
        " (Burn) relative to their own f64 gradient: "
        + (
            "a small gradient made of terms that nearly cancel keeps few correct f32 digits."
            if judged["few_digits"]
            else "ordinary f32 accumulation error."
        ),
        f"Its update (parameter after step 1 minus the initial value) is"
        f" {u['torch', 'f64']:.4g} in PyTorch and {u['burn', 'f64']:.4g} in Burn (f64).",
    ]
    if u["torch", "f64"] == 0 or u["burn", "f64"] == 0:
        if u["torch", "f64"] == u["burn", "f64"]:
            text.append("Neither framework moves it in f64: nothing to compare.")
        else:
            moves = "Burn" if u["burn", "f64"] else "PyTorch"
            text.append(
                f"Only {moves} moves it: the two frameworks do not take the same step from"
                " the same gradient, which rounding cannot do — look for a `differs` row in"
                " the config diff."
            )
        return " ".join(text)
    ratio = u["burn", "f64"] / u["torch", "f64"]
    if not judged["same_step"]:
        text.append(
            f"Burn's update is {ratio:.3g}× PyTorch's: the two frameworks do not take the"
            " same step from the same gradient, which rounding cannot do — look for a"
            " `differs` row in the config diff."
        )
        return " ".join(text)
    hp = x.runs["torch", "f64"]["meta"]["hyperparameters"]
    lr, g = hp["lr"], abs(float(row["torch", "f64"]["grad"]))
    clip = x.spec.clip_grad
    if clip:
        d = x.config_diff
        scope = d[
            d["hyperparameter"].str.startswith("clip_grad")
            & d["hyperparameter"].str.endswith(" scope")
        ]
        alike = (
            "and the frameworks clip differently"
            if (scope["status"] == "differs").any()
            else "which both frameworks take by the same scope"
        )
        text.append(
            f"These are the gradients before clipping ({setting('clip_grad', clip)}); the"
            f" update uses the clipped ones, {alike} (the config diff's clipping scope)."
        )
    if judged["full_step"]:
        decay = (
            " (AdamW first decays the parameter by lr·weight_decay·p, included here)"
            if x.optimizer == "adamw" and hp.get("weight_decay")
            else ""
        )
        tiny = " although the gradient is tiny" if judged["tiny_gradient"] else ""
        text.append(
            f"That is {abs(u['torch', 'f64']) / lr:.3f} of a full step of lr = {lr:g}{tiny}:"
            f" {x.optimizer}'s first update is −lr·g/(|g| + ε){decay}, which depends on"
            f" |g| only through |g|/ε (here {g / hp['eps']:.3g})."
        )
    if u["torch", "f64"] != u["burn", "f64"]:
        d = u["burn", "f64"] - u["torch", "f64"]
        text.append(
            f"Burn's f64 update differs from PyTorch's by {e(abs(d))} (relative"
            f" {d / u['torch', 'f64']:.3g})."
        )
    diffs = {fw: abs(u[fw, "f32"] - u[fw, "f64"]) for fw in ("torch", "burn")}
    same32 = u["torch", "f32"] == u["burn", "f32"]
    if judged["within_ulp"]:
        text.append(
            f"In f32 the stored update moves in steps of the parameter's f32 ulp ({e(ulp)}),"
            f" and both frameworks' f32 updates are within one ulp of the f64 update"
            f" (off by {e(diffs['torch'])} in PyTorch, {e(diffs['burn'])} in Burn): the"
            " gradient's error does not reach the parameter"
            + (
                f"; PyTorch and Burn even store the same f32 update ({u['torch', 'f32']:.8g})"
                " from their different f32 gradients."
                if same32
                else "."
            )
        )
    else:
        column = x.steps["torch_f64"].iloc[0]
        text.append(
            f"The gradient's error reaches the update: the f32 update differs from the f64"
            f" one by {e(diffs['torch'])} in PyTorch ({diffs['torch'] / ulp:.3g} f32 ulps of"
            f" the parameter) and {e(diffs['burn'])} in Burn; PyTorch's is"
            f" {diffs['torch'] / column:.0%} of the `torch-f64` gap at step 1 ({e(column)})."
        )
    return " ".join(text)
