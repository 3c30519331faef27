"""Replay Burn's optimizer arithmetic on the PyTorch side, in f64, to explain the f64 gap.

    python -m torch_burn_parity.analysis.replay --experiment adam \\
        --data results/data/cnn1d.safetensors \\
        --torch-f64 results/runs/adam/torch-f64.json --burn-f64 results/runs/adam/burn-f64.json \\
        --replay-csv … --replay-md … --counterfactual-csv … --counterfactual-md …

The model (the runs' `meta.model`, from the registry models.py), data and gradients are
PyTorch's (f64), in train mode; only the update rule is Burn 0.22's (`burn-optim` sgd.rs,
momentum.rs, adam.rs, adamw.rs, adagrad.rs, rmsprop.rs, decay.rs: burn_rules.py;
grad_clipping/base.rs: below), and, where a variant says so, Burn's update of the running
statistics. Each step: gradients by PyTorch's autograd, then clipping (if the experiment
clips), then the update with that step's learning rate. The state compared after each step
is the parameters, then the buffers (running statistics, for a model that has them).
Variants:

replay          Burn's rule with the hyperparameters as Burn held them (f32 values widened),
                `1 − β` (Adam, AdamW) and `1 − α` (RMSProp) computed in f32 as Burn does, the
                per-step factors Burn recorded (Adam's `adam_factors`, AdamW's bias
                corrections in `burn_scalars`), Burn's recorded lrs, and Burn's clipping: each
                parameter tensor on its own, by Burn's formula (norm: coefficient
                t·recip(‖g‖ + smallest positive normal f64), clamped to 1; value: clamp to
                [−t, t]) with its f32-held threshold t; and Burn's running statistics (see
                below) with Burn's held momentum; and the layer settings Burn's module
                holds where they differ from PyTorch's (layer_settings.py). Compared with
                Burn's f64 run: if it matches to ~1e-16, Burn's update is fully understood.
burn_value[K]   (one per hyperparameter K whose value differs beyond its f32 storage:
                held_values.py) the counterfactual with Burn's value of K and of every
                differing value before it: column
                `dparam_burn_value[K]`, vs PyTorch's f64 run. held_f64 comes after them.
held_f64        Burn's rule and Burn's held values (the clipping threshold too), but every
                scalar computed in f64, with PyTorch's lrs and PyTorch's clipping scope.
                Compared with PyTorch's f64 run (column `dparam_held_f64`): what is left is
                the effect of the values themselves (f32-stored betas, a different default
                epsilon, dampening or momentum).
counterfactual  Burn's rule with PyTorch's hyperparameters, all in f64, PyTorch's recorded lrs
                and PyTorch's clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_
                themselves: one norm over all parameters, + 1e-6). Compared with PyTorch's
                f64 run: if it matches to rounding, changing those values, the lr sequence and
                the clipping (and the precision of Burn's factors) is all it takes.
burn_layer[K]   (one per layer setting K whose values differ and which the module can be
                given: a norm's eps, BatchNorm's momentum, GELU's form; layer_settings.py)
                held_f64 with Burn's value of K and of every setting before it: column
                `dparam_burn_layer[K]`, vs PyTorch's f64 run. Every later link keeps them.
burn_loss       (only with label smoothing) held_f64 with Burn's smoothed cross-entropy
                (burn_loss.py: its target weights 1 − ε and ε/C computed in f32) instead of
                PyTorch's: column `dparam_burn_loss`, vs PyTorch's f64 run. Every later link
                keeps it (held_f64 has ε's f32 storage, in PyTorch's formula).
burn_lrs        (only with a schedule) held_f64 (burn_loss) with Burn's recorded lrs instead
                of PyTorch's: column `dparam_burn_lrs`, vs PyTorch's f64 run.
burn_clipping   (only with clipping) burn_lrs (or held_f64 without a schedule) with Burn's
                clipping (per tensor, Burn's formula, its held threshold) instead of PyTorch's:
                column `dparam_burn_clipping`, vs PyTorch's f64 run. It has every choice of
                Burn's — values, lrs, clipping — and differs from the replay only in Burn's
                f32 arithmetic (and, with running statistics, Burn's estimator).
burn_running_stats  (only for a model with running statistics) the last of the above
                (burn_clipping, burn_lrs or held_f64) with Burn's running-statistics update
                instead of PyTorch's: column `dparam_burn_running_stats`, vs PyTorch's f64 run.
                Without a schedule and clipping it is held_f64 with Burn's estimator.
burn_lr_adjustment, burn_newton_schulz  (only with Muon, muon_rules.py) the last of the
                above with Muon's lr factor read from the shape Burn holds ([in, out] for a
                Linear weight; each part of a packed one), then also Burn's orthogonalisation
                (its summed momentum, Newton–Schulz in f64 on each tensor Burn holds):
                columns `dparam_burn_lr_adjustment`, `dparam_burn_newton_schulz`, vs
                PyTorch's f64 run. Before them every variant but the replay runs PyTorch's
                Muon arithmetic (its averaged momentum, Newton–Schulz in bfloat16) with its
                variant's values: the counterfactual reproduces PyTorch's run that way.

The running statistics. The counterfactual, held_f64, burn_lrs and burn_clipping keep
PyTorch's own update (BatchNorm1d's train-mode forward: running_var moves towards the
batch's unbiased variance, × n/(n−1)); the replay and burn_running_stats apply Burn's instead
(burn-nn 0.22.1 norm/batch.rs forward_train with burn-backend's batch_norm_train: the biased
variance, mean((x − mean)²), and `running·(1 − m) + stat·m` in that order, m as Burn holds it,
from the Burn run's `meta.layer_hyperparameters`). Either way the normalisation uses the
batch's own statistics, so the running statistics never change a parameter during training:
they show in the buffer columns (and in the eval-mode final loss) only.

held_f64, burn_loss, burn_lrs, burn_clipping and burn_running_stats add Burn's choices one at
a time to the counterfactual (which reproduces PyTorch): its values, then its smoothed
targets, then its lr sequence, then its clipping, then its running-statistics estimator. How much
each step moves the run further from PyTorch's is that choice's measured share of the gap
(later steps take the interactions with earlier ones); what separates the last of them from
the replay that reproduces Burn is Burn's f32 arithmetic (the verdict's remainder). With a
norm, Burn's clipping differs from PyTorch's in scope (each tensor by its own norm vs one norm
over all parameters) and, far less, in the constant under the norm (smallest positive normal
vs 1e-6); with a value both clamp each element, so only the f32-held threshold differs, and
that is a value.

What the counterfactual is, honestly: "Burn's update rule as Burn 0.22 writes it, with
PyTorch's numbers and PyTorch's gradient pre-processing". Where Burn's order of operations
differs from PyTorch's but the formula is the same (AdamW's (m/bc₁)/(√(v/bc₂) + ε) against
PyTorch's m·(−lr/bc₁)/(√v/√bc₂ + ε); Adam's m·β + g·(1 − β) against lerp), it keeps Burn's
order: the two differ by f64 rounding only, which the ≤ 1e-14 match shows. Of what it takes
from PyTorch, the lr sequence is just the `lr` argument of each `step()` (a Burn user can pass
PyTorch's), but one global clipping norm and AdaGrad's `initial_accumulator_value` (the sum
starting at PyTorch's value instead of the first g²) have no Burn setting: a counterfactual
that matches with them says they are what it takes, not that a Burn config can express it.

The gradients are PyTorch's, and the two frameworks' f64 backward passes differ by an f64
ulp or so. An update that divides a tiny gradient by a larger constant passes that on
magnified: AdaGrad with ε = 1e-5 and |g| ≈ 1e-6 (fc.weight[1,19] at step 1) moves by
lr·g/ε, so 2.5e-18 of gradient becomes 1e-14 of parameter. `run(…, grads=…)` replays on a
run's recorded gradients instead, which takes that out (a check of the update rule alone).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from torch_burn_parity.analysis import held_values, layer_settings
from torch_burn_parity.analysis.burn_loss import burn_cross_entropy
from torch_burn_parity.analysis.burn_rules import BurnUpdate, GroupedUpdate, scalar_sources
from torch_burn_parity.analysis.clip_and_stats import (
    BurnRunningStats,
    Clipping,
    burn_clipping,
    burn_running_stats_of,
    torch_clipping,
)
from torch_burn_parity.analysis.gaps import (
    add_run_arguments,
    flat_name,
    load_runs,
    recorded_steps,
    report_steps_of,
    run_paths,
    state_row,
)
from torch_burn_parity.analysis.muon_rules import MuonUpdate
from torch_burn_parity.io.parity_io import FormatError, read_dataset, row_of, write_text_atomic
from torch_burn_parity.io.run_file import loss_of, smoothing_of
from torch_burn_parity.models.losses import DEFAULT_LOSS
from torch_burn_parity.models.model_specs import (
    DEFAULT_MODEL,
    ModelError,
    ModelSpec,
    model_of,
    spec,
)
from torch_burn_parity.models.models import build, inputs, state
from torch_burn_parity.models.models import loss as torch_loss

# ---------------------------------------------------------------- running a variant


@dataclass
class Variant:
    """Burn's update rule with a set of values, an lr per step and a clipping (or none);
    Burn's running statistics, or PyTorch's own (None); the loss's label smoothing as one
    framework holds it."""

    update: BurnUpdate
    lrs: list[float]
    clip: Clipping | None = None
    running_stats: BurnRunningStats | None = None
    label_smoothing: float = 0.0
    burn_loss: bool = False  # Burn's smoothed targets (burn_loss.py), else PyTorch's loss
    loss: str = DEFAULT_LOSS  # the experiment's loss, the same on both sides
    layers: dict = field(default_factory=dict)  # Burn's layer settings given to the module


def lrs_of(block: dict) -> list[float]:
    """The lr of every step as the run recorded it (a constant lr for older run files)."""
    steps = len(block["losses"])
    return block.get("lrs") or [block["meta"]["hyperparameters"]["lr"]] * steps


def replayed(
    arrays: dict,
    variant: Variant,
    steps: int,
    batch: int,
    grads: dict | None = None,
    model: str | ModelSpec = DEFAULT_MODEL,
) -> Iterator[tuple[float, np.ndarray]]:
    """Train ``model`` in f64 (train mode) with PyTorch's autograd and Burn's update; after
    each step, its loss and the state (parameters, then buffers) as one flat vector.

    grads: a run's recorded `trajectory.grads` to use instead of autograd's (a check of the
    update rule alone: it takes the f64 rounding of the two frameworks' backward passes out).
    """
    declared = spec(model) if isinstance(model, str) else model
    x, y = inputs(arrays, torch.float64)
    module = build(declared.name, arrays, torch.float64, declared.size)
    layer_settings.apply(module, variant.layers)
    module.train()
    tensors = state(module)
    params = [tensors[name] for name in declared.param_names]
    burn_stats = variant.running_stats.install(module) if variant.running_stats else None
    variant.update.state.clear()  # each run starts from the optimizer's empty state
    batches = x.shape[0] // batch
    for step in range(steps):
        i = (step % batches) * batch
        out, labels = module(x[i : i + batch]), y[i : i + batch]
        if variant.loss != DEFAULT_LOSS:  # mse: the same arithmetic in both frameworks
            loss = torch_loss(out, labels, kind=variant.loss)
        elif variant.burn_loss:
            loss = burn_cross_entropy(out, labels, variant.label_smoothing)
        else:
            loss = torch_loss(out, labels, variant.label_smoothing)
        module.zero_grad()
        loss.backward()
        if burn_stats is not None:  # after backward: autograd saved the buffers PyTorch wrote
            burn_stats()
        with torch.no_grad():
            if grads is not None:
                for name, p in zip(declared.param_names, params, strict=True):
                    row = np.asarray(row_of(grads, name, step), dtype=np.float64)
                    p.grad = torch.from_numpy(row).reshape(p.shape)
            if variant.clip is not None:
                variant.clip(params)
            lr = variant.lrs[step]
            for name, p in zip(declared.param_names, params, strict=True):
                p.copy_(variant.update.step(name, p.detach().clone(), p.grad, step + 1, lr))
        flat = [tensors[name].detach().flatten().numpy() for name in declared.state_names]
        yield loss.item(), np.concatenate(flat)


def run(
    arrays: dict,
    variant: Variant,
    steps: int,
    batch: int,
    grads: dict | None = None,
    model: str | ModelSpec = DEFAULT_MODEL,
) -> tuple[list, np.ndarray]:
    """`replayed` with every step kept: the losses and a [steps, columns] state matrix (for
    small models and tests; the pipeline compares step by step, `gap_frame`)."""
    pairs = list(replayed(arrays, variant, steps, batch, grads, model))
    return [loss for loss, _ in pairs], np.array([s for _, s in pairs])


def gap_frame(
    steps: Iterator[tuple[float, np.ndarray]], reference: dict, shapes: dict[str, list[int]]
) -> pd.DataFrame:
    """Each replayed step the reference run recorded against that step's row (read a row at a
    time): |dloss|, max |dparam| and the column where it is largest."""
    rows = {step - 1: row for row, step in enumerate(recorded_steps(reference))}
    losses, gaps, where = [], [], []
    for k, (loss, snapshot) in enumerate(steps):
        if k not in rows:
            continue
        diff = np.abs(snapshot - state_row(reference, rows[k]))
        losses.append(loss)
        if not np.isfinite(diff).all():
            gaps.append(np.nan)
            where.append("non-finite")
        else:
            gaps.append(float(diff.max(initial=0.0)))
            where.append(flat_name(shapes, int(np.argmax(diff))) if diff.max() > 0 else "-")
    steps_kept = np.asarray(sorted(rows)) + 1
    reference_losses = np.asarray(reference["losses"], dtype=float)[steps_kept - 1]
    return pd.DataFrame(
        {
            "step": steps_kept,
            "dloss": np.abs(np.asarray(losses) - reference_losses),
            "dparam": np.asarray(gaps, dtype=float),
            "where": where,
        }
    )


def render_md(frame: pd.DataFrame, title: str, report_steps: list[int]) -> str:
    shown = frame[report_steps_of(frame["step"], report_steps)]
    lines = ["step  |dloss|   max|dparam|  where"]
    lines += [
        f"{r.step:4d}  {r.dloss:.2e}  {r.dparam:.2e}     {r.where}" for r in shown.itertuples()
    ]
    return f"### {title}\n\n```text\n" + "\n".join(lines) + "\n```\n"


def scheduled(torch_run: dict, burn_run: dict) -> bool:
    """Whether either run followed a learning-rate schedule (not a constant lr)."""
    runs = (torch_run, burn_run)
    return {(r["meta"].get("schedule") or {}).get("kind", "constant") for r in runs} != {"constant"}


def muon_run(burn_run: dict) -> bool:
    """Whether any parameter of the run is Muon's (the experiment's or a group's)."""
    meta = burn_run["meta"]
    return "muon" in {meta["optimizer"], *(g["optimizer"] for g in meta.get("param_groups") or [])}


def updates(
    values: dict, burn_run: dict, recorded: bool, f32_one_minus: bool, muon: tuple[str, str]
) -> BurnUpdate | GroupedUpdate:
    """Burn's update of every parameter with the hyperparameters ``values`` (a run's meta)
    holds, its own and its groups'; the per-step factors Burn's run recorded, or in f64; and
    Muon's (newton_schulz, shapes) choices (muon_rules.MuonUpdate)."""
    shapes = burn_run["meta"].get("burn_shapes") or {}

    def one(optimizer: str, hp: dict) -> BurnUpdate:
        from_run, in_f64 = scalar_sources(optimizer)
        factors = from_run(burn_run) if recorded else in_f64(hp)
        scales = burn_run["meta"].get("lr_scales")
        rule = MuonUpdate(hp, *muon, shapes, scales) if optimizer == "muon" else None
        return BurnUpdate(optimizer, hp, factors, f32_one_minus, rule)

    rest = one(values["optimizer"], values["hyperparameters"])
    groups = values.get("param_groups") or []
    if not groups:
        return rest
    # Under a constant schedule each group steps with its own lr (under another, with the
    # experiment's scheduled one: config/param_groups.py).
    constant = (burn_run["meta"].get("schedule") or {}).get("kind", "constant") == "constant"
    return GroupedUpdate(rest, [
        (g["params"], one(g["optimizer"], g["hyperparameters"]),
         g["hyperparameters"]["lr"] if constant else None)
        for g in groups
    ])  # fmt: skip


def variants(torch_run: dict, burn_run: dict) -> dict[str, tuple[Variant, dict]]:
    """Each variant and the run it is compared with, by name (see the docstring)."""
    burn_meta, torch_meta = burn_run["meta"], torch_run["meta"]
    burn_lrs, torch_lrs = lrs_of(burn_run), lrs_of(torch_run)
    burn_clip, torch_clip = burn_meta.get("clip_grad"), torch_meta.get("clip_grad")

    stats = burn_running_stats_of(burn_run)
    model = model_of(burn_run)
    # How many tensors Burn holds each parameter as: the Burn run's record of them (a port's
    # own mappings, port/resolve.rs), else the model's declaration.
    held_shapes = burn_meta.get("burn_shapes") or {}
    parts = [len(held_shapes.get(name) or []) or model.parts_of(name) for name in model.param_names]
    torch_muon, burn_muon = ("torch", "torch"), ("burn", "burn")

    burn_smoothing, torch_smoothing = (smoothing_of(m) for m in (burn_meta, torch_meta))
    # A trainer that smooths by hand in the run's dtype (rust/src/by_hand.rs) computes
    # PyTorch's loss: no Burn loss to follow.
    burns_loss = bool(burn_smoothing) and not (burn_meta.get("loss") or {}).get("by_hand")
    held = [(m.get("layer_hyperparameters") or {}) for m in (torch_meta, burn_meta)]
    burn_layers = layer_settings.differing(*held)
    layers: dict = {}  # Burn's layer settings the chain has reached so far

    def burn_choices(lrs, clip: Clipping | None, running=None, muon=torch_muon, loss=burns_loss):
        update = updates(burn_meta, burn_run, False, False, muon)
        return Variant(update, lrs, clip, running, burn_smoothing, burn_loss=loss,
                       layers=dict(layers))  # fmt: skip

    out = {
        "replay": (
            Variant(
                updates(burn_meta, burn_run, True, True, burn_muon),
                burn_lrs,
                burn_clipping(burn_clip, parts, burn_meta.get("clip_scope")),
                stats,
                burn_smoothing,
                burn_loss=burns_loss,
                layers=burn_layers,
            ),
            burn_run,
        ),
        "counterfactual": (
            Variant(updates(torch_meta, burn_run, False, False, torch_muon), torch_lrs,
                    torch_clipping(torch_clip), None, torch_smoothing),
            torch_run,
        ),
    }  # fmt: skip
    # Burn's differing values one at a time (held_values.py), before all of them as held.
    values: dict = {}
    for name, value in held_values.differing(torch_meta, burn_meta).items():
        values[name] = value
        update = updates(held_values.with_values(torch_meta, values), burn_run, False, False,
                         torch_muon)  # fmt: skip
        out[held_values.link(name)] = (
            Variant(update, torch_lrs, torch_clipping(torch_clip), None, torch_smoothing),
            torch_run,
        )
    last = (torch_lrs, torch_clipping(burn_clip), None)  # the chain's last link: held_f64's
    # Burn's values (ε's f32 storage too) in PyTorch's lrs, clipping scope and loss; then
    # Burn's smoothed targets (their weights in f32), the chain's first link after them.
    out["held_f64"] = (burn_choices(*last, loss=False), torch_run)
    # Then Burn's layer settings, one at a time (layer_settings.py), still PyTorch's loss.
    for key, value in burn_layers.items():
        layers[key] = value
        out[layer_link(key)] = (burn_choices(*last, loss=False), torch_run)
    if burns_loss:
        out["burn_loss"] = (burn_choices(*last), torch_run)
    if scheduled(torch_run, burn_run):
        last = (burn_lrs, torch_clipping(burn_clip), None)
        out["burn_lrs"] = (burn_choices(*last), torch_run)
    if burn_clip:
        last = (burn_lrs, burn_clipping(burn_clip, parts, burn_meta.get("clip_scope")), None)
        out["burn_clipping"] = (burn_choices(*last), torch_run)
    if stats:
        last = (*last[:2], stats)
        out["burn_running_stats"] = (burn_choices(*last), torch_run)
    if muon_run(burn_run):  # Muon's lr adjustment on Burn's shapes, then Burn's orthogonalisation
        out["burn_lr_adjustment"] = (burn_choices(*last, muon=("torch", "burn")), torch_run)
        out["burn_newton_schulz"] = (burn_choices(*last, muon=burn_muon), torch_run)
    for variant, _ in out.values():
        variant.loss = loss_of(burn_meta)
    return out


def layer_link(key: str) -> str:
    """The chain's variant that adds Burn's value of layer setting `key` (`norm.eps`)."""
    return f"burn_layer[{key}]"


# The variants after held_f64 (and Burn's layer settings), in the chain's order, as the
# print names them.
CHAIN = {
    "burn_loss": "Burn's smoothed targets",
    "burn_lrs": "Burn's lrs",
    "burn_clipping": "Burn's clipping",
    "burn_running_stats": "Burn's running stats",
    "burn_lr_adjustment": "Burn's Muon lr adjustment",
    "burn_newton_schulz": "Burn's Newton–Schulz",
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--data", required=True, type=Path)
    add_run_arguments(parser, ("torch_f64", "burn_f64"))
    parser.add_argument("--report-steps", type=int, nargs="+", default=[1, 2, 5, 10])
    for out in ("replay-csv", "replay-md", "counterfactual-csv", "counterfactual-md"):
        parser.add_argument(f"--{out}", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        blocks = load_runs(run_paths(args, ("torch_f64", "burn_f64")))
        arrays, sha256 = read_dataset(args.data)
    except (FormatError, FileNotFoundError) as exc:
        sys.exit(f"replay: {exc}")
    # The model's arrays held as f32 numpy arrays (exact: the dataset's are F32), not Python
    # floats: an 11 M-parameter model's weights take 45 MB so, 360 MB as a list.
    arrays = {n: (shape, values if n in ("x", "y") else np.asarray(values, dtype=np.float32))
              for n, (shape, values) in arrays.items()}  # fmt: skip
    torch_run, burn_run = blocks["torch_f64"], blocks["burn_f64"]
    if burn_run["meta"]["input_sha256"] != sha256:
        sys.exit(f"replay: {args.burn_f64} was trained on other inputs than {args.data}")
    torch.set_num_threads(burn_run["meta"]["threads"])
    steps, batch = len(burn_run["losses"]), burn_run["meta"]["batch_size"]
    model = model_of(burn_run)
    try:
        chosen = variants(torch_run, burn_run)
    except (FormatError, KeyError, IndexError) as exc:
        sys.exit(f"replay: {args.burn_f64}: cannot replay this run ({exc!r})")
    shapes = {name: arrays[name][0] for name in model.state_names if name in arrays}
    frames = {}
    try:  # the dataset's arrays are refused here unless they are the model's
        for key, (v, ref) in chosen.items():
            frames[key] = gap_frame(replayed(arrays, v, steps, batch, model=model), ref, shapes)
            # done with its optimizer state: each variant's would otherwise stay alive to the
            # end (an 11 M-parameter model's Adam moments are 180 MB a variant in f64)
            v.update.state.clear()
    except ModelError as exc:
        sys.exit(f"replay: {exc}")
    replay_frame, counter_frame = frames["replay"], frames["counterfactual"]
    # Further columns of the counterfactual table: each variant's gap to PyTorch's f64 run.
    for key in frames:  # held_f64 and the chain, in its order
        if key not in ("replay", "counterfactual"):
            counter_frame[f"dparam_{key}"] = frames[key]["dparam"]

    title = f"{args.experiment}: Burn's update replayed in PyTorch (f64) vs Burn f64"
    write_text_atomic(args.replay_csv, replay_frame.to_csv(index=False, float_format="%.17g"))
    write_text_atomic(args.replay_md, render_md(replay_frame, title, args.report_steps))
    title = f"{args.experiment}: Burn's update with PyTorch's hyperparameters in f64 vs PyTorch f64"
    write_text_atomic(
        args.counterfactual_csv, counter_frame.to_csv(index=False, float_format="%.17g")
    )
    write_text_atomic(args.counterfactual_md, render_md(counter_frame, title, args.report_steps))
    further = "".join(
        f"; {what} vs torch-f64 max {np.nanmax(counter_frame[f'dparam_{key}']):.2e}"
        for key, what in CHAIN.items()
        if key in frames
    )
    print(
        f"{args.experiment}: replay vs burn-f64 max {np.nanmax(replay_frame['dparam']):.2e};"
        f" counterfactual vs torch-f64 max {np.nanmax(counter_frame['dparam']):.2e};"
        f" Burn's values in f64 vs torch-f64 max {np.nanmax(counter_frame['dparam_held_f64']):.2e}"
        + further
    )


if __name__ == "__main__":
    main()
