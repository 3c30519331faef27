"""What each framework will actually do for one experiment, before anything runs.

    python -m torch_burn_parity.analysis.config_diff --spec results/specs/adam.json \\
        --csv results/tables/config_diff_adam.csv --md results/tables/config_diff_adam.md \\
        [--torch-run results/runs/adam/torch-f64.json --burn-run results/runs/adam/burn-f64.json]

From the experiment's settings and what is known of the two frameworks (parity_config's
FRAMEWORK_DEFAULTS and the facts below, read from burn-optim 0.22.1 and PyTorch 2.15), one
row per hyperparameter or numeric detail, then the learning-rate schedule and the gradient
clipping when the experiment has them, then the model's layer hyperparameters (BatchNorm's
momentum and epsilon, LayerNorm's epsilon, GELU's form, the estimator of BatchNorm's running
variance) as each framework's run file records them (`meta.layer_hyperparameters`, read back
from the module; none for the seed's cnn1d), then the backend running the tensors, with a
status:

  same         both frameworks use the same value
  f32 storage  Burn holds the f32 rounding of PyTorch's value
  differs      the values differ (e.g. a framework default kept on one side), or the rule does
  precision    the same formula evaluated at different precision
  formula      the same quantity at the same precision by different arithmetic (e.g. a
               recursive vs a closed-form schedule, both in f64): apart by rounding only
  unused       not used by this configuration (e.g. dampening without momentum)
  kernels      the same operations run by different tensor kernels (PyTorch's ATen vs the
               Burn backend): an implementation, not a hyperparameter; apart by rounding only

Burn 0.22.1 holds its learning rate, SGD dampening and AdaGrad lr_decay as f64 and every
other number below as f32 (AdamConfig, AdamWConfig, AdaGradConfig, RmsPropConfig fields,
WeightDecayConfig.penalty, Momentum's momentum, GradientClippingConfig's threshold). A
schedule gives step k the schedule's value at k − 1 in both frameworks (PyTorch steps its
scheduler after the optimizer step, Burn before, its first call giving the initial lr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from torch_burn_parity.config import burn_fixes
from torch_burn_parity.config.parity_config import BURN_BACKENDS, ConfigError
from torch_burn_parity.config.resolve import read_spec
from torch_burn_parity.config.spec import Group, Spec
from torch_burn_parity.io.parity_io import FormatError, experiment_block, write_text_atomic
from torch_burn_parity.models.model_specs import spec as model_spec
from torch_burn_parity.optimizers import REGISTRY
from torch_burn_parity.optimizers.muon import ratio

COLUMNS = ["hyperparameter", "torch", "burn", "status", "note"]


def fact(name: str, torch: str, burn: str, status: str, note: str = "") -> dict:
    return {"hyperparameter": name, "torch": torch, "burn": burn, "status": status, "note": note}


# ---------------------------------------------------------------- facts per optimizer

# How each optimizer applies weight decay, in both frameworks (shown when either has some),
# and the numbers its update computes from its hyperparameters at another precision: from
# the optimizer registry (optimizers/).
WEIGHT_DECAY_STYLE = {name: o.weight_decay for name, o in REGISTRY.items()}
NUMERIC_DETAILS = {name: [fact(*f) for f in o.precision_facts] for name, o in REGISTRY.items()}
CENTERED = fact("centered gradient average", "lerp(ḡ, g, 1 − α)", "α·ḡ + (1 − α)·g", "formula",
                "the running mean of the gradient, by different arithmetic")  # fmt: skip

# ---------------------------------------------------------------- schedules and clipping

# Each schedule kind as PyTorch (torch/optim/lr_scheduler.py) and Burn (burn-optim
# src/lr_scheduler/*.rs) compute it: torch, burn, note; {names} are the spec's values, lr the
# initial lr, end_factor final_lr / lr as train_torch.py passes it. k counts from 0.
SCHEDULE_FACTS = {
    "linear": (
        "LinearLR(start_factor=1.0, end_factor={end_factor}, total_iters={num_steps}), recursive",
        "Linear(initial_lr={lr}, final_lr={final_lr}, num_iters={num_steps}), closed form",
        "PyTorch: previous lr·(1 + Δ/(N + (k−1)·Δ)), Δ = end_factor − 1;"
        " Burn: final − (final − initial)/N·(N − k), which at k = 0 can be an ulp off initial",
    ),
    "cosine": (
        "CosineAnnealingLR(T_max={num_steps}, eta_min={min_lr}), recursive",
        "CosineAnnealing(initial_lr={lr}, min_lr={min_lr}, num_iters={num_steps}), closed form",
        "PyTorch: previous lr − min scaled by (1 + cos(πk/N))/(1 + cos(π(k−1)/N)), plus min;"
        " Burn: min + (initial − min)·(1 + cos(k/N·π))/2",
    ),
    "exponential": (
        "ExponentialLR(gamma={gamma}), recursive",
        "Exponential(initial_lr={lr}, gamma={gamma}), recursive from initial/γ",
        "both: previous lr·γ; Burn's first lr is (initial/γ)·γ, which can be an ulp off initial",
    ),
    "step": (
        "StepLR(step_size={step_size}, gamma={gamma}), recursive",
        "Step(initial_lr={lr}, step_size={step_size}, gamma={gamma}), closed form",
        "PyTorch: previous lr·γ every step_size steps; Burn: initial·γ.powi(⌊k/step_size⌋)",
    ),
}
# Burn's schedule with `burn_fixes: [pytorch_schedule]` (rust/src/by_hand.rs).
BY_HAND_SCHEDULE = "PyTorch's recursion by hand (TorchSchedule), its lr passed to Burn's step"
# How each clipping mode is applied (torch.nn.utils.clip_grad_norm_ / clip_grad_value_;
# burn-optim src/grad_clipping/base.rs): torch, burn, status, note.
CLIP_SCOPE = {
    "norm": (
        "one norm over all parameters: max/(‖g‖ + 1e-6)",
        "each parameter tensor alone: max/(‖g‖ + smallest positive normal)",
        "differs",
        "the same only while the total norm stays below the threshold (nothing clipped)",
    ),
    "value": ("each element clamped to [−v, v]", "each element clamped to [−v, v]", "same", ""),
}
# Burn's scope with `burn_fixes: [clip_by_global_norm]` (rust/src/by_hand.rs).
BY_HAND_CLIP = "one norm over all parameters, by hand before Burn's step: max/(‖g‖ + 1e-6)"


# How each framework smooths the cross-entropy's target (burn-nn loss/cross_entropy.rs
# 202–216; analysis/burn_loss.py).
LOSS_NOTE = (
    "PyTorch: (1 − ε)·(−log p_label) + ε·mean over classes of (−log p_c); Burn: targets"
    " one-hot·(1 − ε) + ε/C with 1 − ε and ε/C computed in f32, whose sum over the classes"
    " is not exactly 1, in f64 runs too"
)


def f32(x):
    """x as an f32 field holds it, widened back (lists elementwise; not a number: as is)."""
    if isinstance(x, list):
        return [f32(v) for v in x]
    return float(np.float32(x)) if isinstance(x, int | float) and not isinstance(x, bool) else x


def show(x, as_f32: bool = False) -> str:
    """A value as the config would write it; f32-held values by their shortest f32 digits."""
    if isinstance(x, list):
        return "[" + ", ".join(show(v, as_f32) for v in x) + "]"
    if as_f32 and not isinstance(x, bool):
        return str(np.float32(x))  # numpy prints the shortest digits that identify the f32
    return json.dumps(x)


def value_row(name: str, t, requested, in_f32: bool, notes: list[str], unused: bool = False):
    """One value as PyTorch holds it (t) and as Burn holds what it is asked for (requested)."""
    b = f32(requested) if in_f32 else requested
    if unused:
        status = "unused"
    elif t == b:
        status = "same"
    elif b == f32(t) and requested == t:
        status = "f32 storage"
    else:
        status = "differs"
    if in_f32 and t != b:
        notes.append(f"Burn holds the f32 value {json.dumps(b)}")
    return fact(name, show(t), show(b, in_f32), status, "; ".join(notes))


def hyperparameter_rows(entry: Spec | Group) -> list[dict]:
    """The rows of an optimizer entry (the experiment's own, or a group's): each
    hyperparameter as each framework is asked for it, then the optimizer's numeric details."""
    torch_values, burn_requested = entry.requested["torch"], entry.requested["burn"]
    optimizer = REGISTRY[entry.optimizer]
    momentum_used = optimizer.name == "sgd" and (
        torch_values["momentum"] or burn_requested["momentum"]
    )
    rows = []
    for key in entry.hyperparameters:
        notes = [f"{fw} keeps its default" for fw in ("torch", "burn")
                 if key in entry.keep_defaults[fw]]  # fmt: skip
        unused = optimizer.name == "sgd" and key in ("dampening", "nesterov") and not momentum_used
        if unused:
            notes.append("no momentum")
        requested = burn_requested[key]
        if key in optimizer.burn_fixed:
            requested, why = optimizer.burn_fixed[key]
            notes.append(why)
        in_f32 = key in optimizer.burn_f32
        rows.append(value_row(key, torch_values[key], requested, in_f32, notes, unused))
    if torch_values["weight_decay"] or burn_requested["weight_decay"]:
        style = WEIGHT_DECAY_STYLE[optimizer.name]
        rows.append(fact("weight decay style", style, style, "same"))
    if optimizer.name == "rmsprop" and (torch_values["centered"] or burn_requested["centered"]):
        rows.append(CENTERED)
    return rows + NUMERIC_DETAILS[optimizer.name]


def schedule_rows(spec: Spec) -> list[dict]:
    """The schedule as each framework computes it; none for a constant lr (the lr row)."""
    schedule = spec.schedule
    if schedule["kind"] == "constant":
        return []
    lr = spec.hyperparameters["lr"]
    values = {**schedule, "lr": lr, "end_factor": schedule.get("final_lr", lr) / lr}
    shown = {key: json.dumps(value) for key, value in values.items()}
    torch, burn, note = SCHEDULE_FACTS[schedule["kind"]]
    if burn_fixes.SCHEDULE in spec.burn_fixes:  # the trainer's recursion by hand
        return [fact("schedule", torch.format(**shown), BY_HAND_SCHEDULE, "same",
                     f"burn_fixes: {burn_fixes.SCHEDULE}")]  # fmt: skip
    return [fact("schedule", torch.format(**shown), burn.format(**shown), "formula", note)]


def clip_rows(spec: Spec) -> list[dict]:
    """The clipping threshold (Burn: f32) and how each framework applies it."""
    if not spec.clip_grad:
        return []
    ((mode, threshold),) = spec.clip_grad.items()
    if burn_fixes.CLIP in spec.burn_fixes:  # the trainer clips by hand, in f64
        return [
            value_row(f"clip_grad.{mode}", threshold, threshold, False, []),
            fact(f"clip_grad.{mode} scope", CLIP_SCOPE[mode][0], BY_HAND_CLIP, "same",
                 f"burn_fixes: {burn_fixes.CLIP}"),
        ]  # fmt: skip
    return [
        value_row(f"clip_grad.{mode}", threshold, threshold, True, []),
        fact(f"clip_grad.{mode} scope", *CLIP_SCOPE[mode]),
    ]


# The loss each framework computes for the experiment's `loss` (models/models.py, the
# Burn side's loss.rs): the same quantity, each framework's own kernels.
LOSSES = {
    "cross_entropy": ("cross_entropy (mean over rows)", "CrossEntropyLoss (mean over rows)"),
    "mse": ("mse_loss (mean of (out − y)²)", "MseLoss, Reduction::Mean (mean of (out − y)²)"),
}


def loss_rows(spec: Spec) -> list[dict]:
    """The loss both compute when it is not the default cross-entropy, then the label
    smoothing as each framework holds it (Burn: f32); no smoothing rows without smoothing,
    the loss then the plain cross-entropy."""
    kind = spec.loss
    rows = [fact("loss", *LOSSES[kind], "same")] if kind != "cross_entropy" else []
    smoothing = spec.label_smoothing
    if not smoothing:
        return rows
    if burn_fixes.SMOOTH in spec.burn_fixes:  # the trainer's loss by hand
        return rows + [
            value_row("label_smoothing", smoothing, smoothing, False, []),
            fact("smoothed targets", "the run's dtype", "the run's dtype, by hand", "same",
                 f"burn_fixes: {burn_fixes.SMOOTH}"),
        ]  # fmt: skip
    return rows + [
        value_row("label_smoothing", smoothing, smoothing, True, []),
        fact("smoothed targets", "the run's dtype", "f32", "precision", LOSS_NOTE),
    ]


# What runs the tensors: PyTorch's CPU kernels, and the Burn backend the experiment picks.
TORCH_KERNELS = "PyTorch CPU (ATen)"
BACKEND_NOTES = {
    "flex": "Burn's own CPU kernels (burn-flex, the default)",
    "ndarray": "Burn's kernels on the ndarray crate (burn-ndarray, deprecated in Burn 0.22)",
}


def backend_rows(spec: Spec) -> list[dict]:
    """The tensor kernels each framework runs: a choice of implementation, not a value."""
    backend = spec.burn_backend
    return [fact("backend", TORCH_KERNELS, BURN_BACKENDS[backend], "kernels",
                 BACKEND_NOTES[backend])]  # fmt: skip


# Notes on the layer hyperparameters (PyTorch's torch.nn BatchNorm1d, LayerNorm, GELU docs;
# burn-nn 0.22.1 src/modules/norm/batch.rs, layer.rs, src/activation/gelu.rs).
LAYER_NOTES = {
    "attn.sqrt_d_k": (
        "the square root attention's scores are divided by: PyTorch scales by 1/√d_k in the"
        " run's dtype, Burn's MultiHeadAttention divides by (d_k as f32).sqrt(), f32 also in"
        " f64 runs (burn-nn src/modules/attention/mha.rs line 290); the same where √d_k is"
        " exact in f32 (d_k 4, 16, 64)"
    ),
    "gelu.backward": (
        "the GELU whose derivative the backward takes (the forward is the exact one): Burn's"
        " NdArray backend keeps burn-backend's default gelu_backward, the tanh"
        " approximation's (src/backend/ops/activation.rs lines 98–128), which no setting"
        " reaches; Flex and PyTorch differentiate the erf GELU"
    ),
    "bn.momentum": "running stat ← (1 − momentum)·running stat + momentum·batch stat, in both",
    "bn.running_var_estimator": (
        "the batch variance the running variance is updated with: over n − 1 (unbiased) or"
        " n (biased) samples; training uses the batch statistics, evaluation the running ones"
    ),
}


# Layer options Burn has and PyTorch does not (by the option's name, after the layer's):
# the value that does what PyTorch always does, and the note. burn-nn 0.22.1's
# MultiHeadAttention `quiet_softmax` adds 1 to the softmax's denominator when on; PyTorch's
# attention always uses the standard softmax, i.e. quiet_softmax off.
BURN_ONLY = {
    "quiet_softmax": (False, "Burn-only option; off is PyTorch's softmax"),
}


def burn_only(name: str, torch_value, burn_value) -> dict | None:
    """The row of a Burn-only layer option PyTorch's run cannot record: `same` when Burn's
    value does what PyTorch always does, else `differs`; None for any other name."""
    option = name.rsplit(".", 1)[-1]
    if torch_value is not None or burn_value is None or option not in BURN_ONLY:
        return None
    pytorch, note = BURN_ONLY[option]
    status = "same" if burn_value == pytorch else "differs"
    return fact(name, "—", show(burn_value), status, note)


def layer_rows(torch_layers: dict, burn_layers: dict) -> list[dict]:
    """One row per layer hyperparameter either run records, PyTorch's order first.

    Numbers compare as value_row does (Burn holding the f32 rounding of PyTorch's value is
    `f32 storage`); anything else is `same` or `differs`; a value one framework does not
    record differs, except a Burn-only option (BURN_ONLY), which is `same` when Burn's value
    is what PyTorch always does, and a dropout of p 0 (the identity) that one side leaves
    out.
    """
    rows = []
    for name in dict.fromkeys([*torch_layers, *burn_layers]):
        t, b = torch_layers.get(name), burn_layers.get(name)
        if name.endswith(".backward") and None in (t, b):
            continue  # one side's GELU is not exact: its `approximate` row says so
        if (row := burn_only(name, t, b)) is not None:
            rows.append(row)
            continue
        # a note by the setting's name, at any layer's (a port's BatchNorms have their own)
        last = name.rsplit(".", 1)[-1]
        note = next(
            (v for k, v in LAYER_NOTES.items() if k == name or k.endswith("." + last)), None
        )
        notes = [note] if note else []
        missing = [fw for fw, v in (("torch", t), ("burn", b)) if v is None]
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (t, b))
        if missing and name.endswith(".p") and 0 in (t, b):
            # a dropout of p 0 is the identity: a port leaves such a layer out
            status = "same"
            notes.insert(0, f"{' and '.join(missing)} has no such layer; p 0 is the identity")
        elif missing:
            status = "differs"
            verb = "record" if len(missing) > 1 else "records"
            notes.insert(0, f"{' and '.join(missing)} {verb} no value")
        elif t == b:
            status = "same"
        elif numbers and b == f32(t):
            status = "f32 storage"
        else:
            status = "differs"
        shown = ["—" if v is None else show(v) if not isinstance(v, str) else v for v in (t, b)]
        rows.append(fact(name, *shown, status, "; ".join(notes)))
    return rows


def lr_adjustment_rows(
    group: Group, shapes: dict, burn_shapes: dict, scaled: bool = False
) -> list[dict]:
    """Muon's lr factor for each parameter whose shape Burn holds otherwise (its Linear
    weights are [in, out]): the factor each framework computes, from the Burn run's
    `meta.burn_shapes`; scaled: the trainer gives each Muon tensor the lr that makes its
    factor PyTorch's (`burn_fixes: [muon_lr_per_parameter]`); shapes: PyTorch's."""
    rows = []
    for name in group.params:
        if name not in burn_shapes or name not in shapes:
            continue
        torch_shape, burn_shape = shapes[name], burn_shapes[name][0]
        fn = group.hyperparameters["adjust_lr_fn"]
        t, b = ratio(fn, torch_shape), ratio(fn, burn_shape)
        note = f"{fn}: lr × factor of the shape each framework holds; measured apart by the replay"
        burn = f"{list(burn_shape)}: ×{b:.6g}"
        if scaled and t != b:
            burn += f", its lr × {t / b:.6g} by hand"
            note = f"burn_fixes: {burn_fixes.MUON_LR}; " + note
        rows.append(fact(
            "Muon lr adjustment", f"{name} {list(torch_shape)}: ×{t:.6g}", burn,
            "same" if t == b or scaled else "differs", note,
        ))  # fmt: skip
    return rows


def group_rows(spec: Spec, burn_shapes: dict, shapes: dict) -> list[dict]:
    """Each parameter group's rows, named `param_groups[i].<row>`: its parameters, then its
    hyperparameters and numeric details as for the experiment's own optimizer."""
    rows = []
    for i, group in enumerate(spec.param_groups):
        names = ", ".join(group.params)
        found = [fact("params", names, names, "same", f"optimizer {group.optimizer}")]
        found += hyperparameter_rows(group)
        if group.optimizer == "muon":
            scaled = burn_fixes.MUON_LR in spec.burn_fixes
            found += lr_adjustment_rows(group, shapes, burn_shapes, scaled)
        rows += [{**row, "hyperparameter": f"param_groups[{i}].{row['hyperparameter']}"}
                 for row in found]  # fmt: skip
    return rows


def diff_rows(
    spec: Spec, layers: tuple[dict, dict] = ({}, {}), burn_shapes: dict | None = None
) -> list[dict]:
    """Every row; layers: the layer hyperparameters PyTorch's and Burn's runs recorded;
    burn_shapes: the Burn run's `meta.burn_shapes` (Muon's lr adjustment rows)."""
    shapes = model_spec(spec.model, spec.model_size).param_shapes()
    return (
        hyperparameter_rows(spec)
        + group_rows(spec, burn_shapes or {}, shapes)
        + schedule_rows(spec)
        + clip_rows(spec)
        + loss_rows(spec)
        + layer_rows(*layers)
        + backend_rows(spec)
    )


def recorded(paths: tuple[Path, Path], model: str) -> tuple[tuple[dict, dict], dict]:
    """The layer hyperparameters of PyTorch's and Burn's run, and the Burn run's
    `meta.burn_shapes` (FormatError naming a file)."""
    found, shapes = [], {}
    for path in paths:
        meta = experiment_block(path)["meta"]
        if meta.get("model", "cnn1d") != model:
            raise FormatError(
                f"{path}: a run of model {meta.get('model', 'cnn1d')}, the spec's is {model}"
            )
        layers = meta.get("layer_hyperparameters") or {}
        if not isinstance(layers, dict):
            raise FormatError(f"{path}: meta.layer_hyperparameters must be an object")
        found.append(layers)
        shapes = meta.get("burn_shapes") or shapes
    return (found[0], found[1]), shapes


def render_md(frame: pd.DataFrame, experiment: str) -> str:
    # Values as written (0.0 stays 0.0, 1e-10 stays 1e-10): no number parsing by tabulate.
    table = frame.to_markdown(index=False, disable_numparse=True)
    return f"### Config diff: {experiment}\n\n" + table + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, type=Path, help="a resolved experiment")
    parser.add_argument("--torch-run", type=Path, help="a PyTorch run file (its layer values)")
    parser.add_argument("--burn-run", type=Path, help="a Burn run file of the same experiment")
    parser.add_argument("--csv", required=True, type=Path)
    parser.add_argument("--md", required=True, type=Path)
    args = parser.parse_args(argv)
    if (args.torch_run is None) != (args.burn_run is None):
        parser.error("--torch-run and --burn-run go together")
    try:
        spec = read_spec(args.spec)
        name, model = spec.name, spec.model
        layers, burn_shapes = ({}, {}), {}
        if args.torch_run:
            layers, burn_shapes = recorded((args.torch_run, args.burn_run), model)
        elif model != "cnn1d":
            raise ConfigError(
                f"{name}: model {model} has layer hyperparameters: pass --torch-run and --burn-run"
            )
    except (ConfigError, FormatError) as exc:
        sys.exit(f"config_diff: {exc}")
    frame = pd.DataFrame(diff_rows(spec, layers, burn_shapes), columns=COLUMNS)
    write_text_atomic(args.csv, frame.to_csv(index=False))
    write_text_atomic(args.md, render_md(frame, name))
    differs = frame[frame["status"] == "differs"]["hyperparameter"].tolist()
    print(f"{name}: {len(frame)} rows, differing: {differs or 'none'} -> {args.csv}")


if __name__ == "__main__":
    main()
