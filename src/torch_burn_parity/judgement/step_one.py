"""What the step-1 probe and the last losses show, judged: the thresholds the report's probe
and eval-mode readings rest on, decided here and written into the verdict record.

The probe follows one parameter element through step 1 in both frameworks and both
precisions (analysis/probe.py); 'update' is the parameter after step 1 minus its initial
value. An f32 update is the difference of two f32 numbers near the parameter, so it moves
in steps of the parameter's f32 ulp: an f32 gradient error smaller than that cannot reach it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from torch_burn_parity.analysis import probe
from torch_burn_parity.analysis.gaps import flat_names
from torch_burn_parity.io.parity_io import row_of
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.models.model_specs import model_of

# A relative f32 gradient error above FEW_DIGITS is "few correct digits" (terms that nearly
# cancel), under it ordinary accumulation error.
FEW_DIGITS = 1e-3
# A gradient under TINY_GRADIENT (100 f32 ulps of 1) is "tiny" beside Adam's full first step.
TINY_GRADIENT = 100 * 2.0**-23
# Two f64 updates within 1 % of each other are the same step from the same gradient.
SAME_STEP = (0.99, 1.01)
# Adam's (AdamW's) first update within 5 % of lr is "a full step": −lr·g/(|g| + ε) ≈ −lr.
FULL_STEP = 0.05


def gradient_noise(torch_f64: dict, label: str) -> float:
    """When PyTorch's f64 step-1 gradient of the probed element is rounding noise
    (probe.rounding_noise: at most NOISE_ULPS f64 ulps of its tensor's largest |gradient|),
    that largest |gradient|; else 0."""
    tensor = label.split("[")[0]
    grads = torch_f64["trajectory"]["grads"]
    if tensor not in grads:
        return 0.0
    g = np.abs(np.asarray(row_of(grads, tensor, 0), dtype=np.float64).ravel())  # step 1
    shape = model_of(torch_f64).shapes()[tensor]
    column = flat_names({tensor: shape}).index(label)
    return float(g.max()) if probe.rounding_noise(g)[column] else 0.0


def probe_judgement(frame: pd.DataFrame, torch_f64: dict) -> dict:
    """The probe's judgements: rounding noise, few correct f32 digits, the same step in
    both frameworks, a full Adam step, a tiny gradient, an f32 error within one ulp."""
    p = frame.set_index(["framework", "dtype"])
    name = str(p["parameter"].iloc[0])
    row = {key: p.loc[key] for key in p.index}
    u = {key: float(r["update"]) for key, r in row.items()}
    ulp = float(np.spacing(np.float32(abs(float(row["torch", "f32"]["initial"])))))
    rel = [float(row[fw, "f32"]["grad_rel_err"]) for fw in ("torch", "burn")]
    meta = torch_f64["meta"]
    lr, g = meta["hyperparameters"]["lr"], abs(float(row["torch", "f64"]["grad"]))
    moved = u["torch", "f64"] != 0 and u["burn", "f64"] != 0
    ratio = u["burn", "f64"] / u["torch", "f64"] if moved else None
    low, high = SAME_STEP
    diffs = [abs(u[fw, "f32"] - u[fw, "f64"]) for fw in ("torch", "burn")]
    return {
        "parameter": name,
        "noise": gradient_noise(torch_f64, name),
        "few_digits": bool(max(rel) > FEW_DIGITS),
        "same_step": bool(ratio is not None and low <= ratio <= high),
        "full_step": bool(
            meta["optimizer"] in ("adam", "adamw")
            and not meta.get("clip_grad")
            and abs(abs(u["torch", "f64"]) - lr) <= FULL_STEP * lr
        ),
        "tiny_gradient": bool(g < TINY_GRADIENT),
        "within_ulp": bool(max(diffs) <= ulp),
    }


def loss_judgement(steps: pd.DataFrame, torch_f64: dict, burn_f64: dict) -> dict:
    """The f64 losses at the last step in train mode (each batch's statistics) and the
    final eval-mode losses apart; whether the train-mode ones agree to rounding: within the
    experiment's rounding floor at that step, or 64 f64 ulps of the loss itself, whichever is
    larger (layers_table.floor_of's minimum)."""
    n = len(steps)
    last = (float(torch_f64["losses"][-1]), float(burn_f64["losses"][-1]))
    floor = max(
        float(vd.rounding_floor(steps["torch_f64"], steps["burn_f64"])[n - 1]),
        vd.ABSOLUTE_FLOOR * max(abs(last[0]), abs(last[1])),
    )
    d_train = abs(last[0] - last[1])
    d_eval = abs(float(torch_f64["final"]["loss"]) - float(burn_f64["final"]["loss"]))
    return {"d_train": d_train, "d_eval": d_eval, "floor": floor, "agree": bool(d_train <= floor)}
