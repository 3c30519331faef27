"""Train one experiment's model with PyTorch for each dtype asked; write a run file each.

    python -m torch_burn_parity.training.train_torch --spec results/specs/adam.json \\
        --dtype f32 f64 --data results/data/cnn1d.safetensors \\
        --out results/runs/adam/torch-f32.json results/runs/adam/torch-f64.json

The spec is one experiment resolved (config/resolve.py), taken as it is.

The model is the experiment's (`model`, default cnn1d) from the registry (models.py); data
and initial weights (parameters and buffers) come from that model's dataset file (f32). An
f64 run widens them exactly, so precision is the only thing that differs between the f32
and f64 runs. A dataset whose arrays are not the module's is refused before any step.

The optimizer is torch.optim's; with parameter groups (config/param_groups.py), one per
optimizer kind, each group one of its param_groups. A schedule is torch.optim.lr_scheduler's,
stepped after each optimizer step; clipping (clip_grad_norm_ / clip_grad_value_) acts
between backward and step.
The run file's `lrs` holds the lr each step used, `trajectory.grads` the gradients of
backward (before clipping), `trajectory.buffers` the running statistics after each step
(updated by the train-mode forward). At each of the experiment's `probe_steps` the run records
every layer's output and the gradient of the loss with respect to its input (`layers`), in that
step's own forward and backward. The final loss and predictions are computed in eval mode.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from torch_burn_parity.config import cpu_path
from torch_burn_parity.config.machine import cpu, git_state
from torch_burn_parity.config.parity_config import CLIP_SCOPES, ConfigError
from torch_burn_parity.config.resolve import read_spec
from torch_burn_parity.config.spec import Group, Spec
from torch_burn_parity.io.parity_io import DTYPES, FormatError, read_dataset, write_run
from torch_burn_parity.io.run_file import RunBlock
from torch_burn_parity.io.run_tensors import LAYER_FIELDS, PORT_LAYER_FIELDS, RunRecorder
from torch_burn_parity.models.losses import DEFAULT_LOSS
from torch_burn_parity.models.model_specs import ModelError
from torch_burn_parity.models.models import (
    build,
    inputs,
    layer_hyperparameters,
    loss,
    model_size,
    recorded_forward,
    state,
)
from torch_burn_parity.models.port_torch import is_port_module, layer_count
from torch_burn_parity.optimizers import REGISTRY

TORCH_DTYPE = {"f32": torch.float32, "f64": torch.float64}


# Each registered optimizer's class in torch.optim (optimizers/).
OPTIMIZERS = {name: getattr(torch.optim, o.torch_class) for name, o in REGISTRY.items()}


def torch_arguments(hyperparameters: dict[str, Any], kept: list[str]) -> dict[str, Any]:
    """Every hyperparameter as PyTorch takes it, except those left to PyTorch's defaults."""
    given = {k: v for k, v in hyperparameters.items() if k not in kept}
    for key in ("betas", "ns_coefficients"):
        if key in given:
            given[key] = tuple(given[key])
    return given


def parts(spec: Spec, names: list[str]) -> list[tuple[Spec | Group, list[str]]]:
    """(optimizer entry, its parameter names) of the experiment's own optimizer (the
    parameters in no group) and of each parameter group, in the spec's order."""
    groups = spec.param_groups
    taken = {n for g in groups for n in g.params}
    return [(spec, [n for n in names if n not in taken]), *((g, g.params) for g in groups)]


def make_optimizers(
    spec: Spec, model: nn.Module
) -> tuple[list[torch.optim.Optimizer], list[dict | None]]:
    """One torch.optim optimizer per optimizer kind, each param_group one of the spec's
    parts (the experiment's own first), with every hyperparameter passed explicitly except
    those the experiment leaves to PyTorch; and each part's param_group (None when it has
    no parameter)."""
    named = dict(model.named_parameters())
    by_kind: dict[str, list[dict]] = {}
    found: list[dict | None] = []
    for entry, names in parts(spec, list(named)):
        if not names:
            found.append(None)
            continue
        group = {"params": [named[n] for n in names]}
        group.update(torch_arguments(entry.hyperparameters, entry.keep_defaults["torch"]))
        by_kind.setdefault(entry.optimizer, []).append(group)
        found.append(group)
    # The first group's values are the constructor's too: some state is set up from the
    # constructor's values only (Adagrad's initial accumulator, adagrad.py __init__).
    optimizers = [
        OPTIMIZERS[kind](groups, **{k: v for k, v in groups[0].items() if k != "params"})
        for kind, groups in by_kind.items()
    ]
    # torch.optim copies each group dict and fills in its defaults: find the copies.
    held = {id(g["params"][0]): g for o in optimizers for g in o.param_groups}
    return optimizers, [held[id(g["params"][0])] if g else None for g in found]


def held_hyperparameters(entry: Spec | Group, group: dict | None) -> dict:
    """Every hyperparameter of an optimizer entry as PyTorch holds it, read back from its
    param_group before a schedule changes the learning rate (the initial lr is recorded);
    for an entry without parameters, as PyTorch would hold it (built on a stand-in)."""
    if group is None:
        stand_in = nn.Parameter(torch.zeros(1, 1))
        kept = entry.keep_defaults["torch"]
        optimizer = OPTIMIZERS[entry.optimizer](
            [stand_in], **torch_arguments(entry.hyperparameters, kept)
        )
        group = optimizer.param_groups[0]
    return {k: (list(group[k]) if isinstance(group[k], tuple) else group[k])
            for k in entry.hyperparameters}  # fmt: skip


def make_scheduler(
    spec: Spec, optimizer: torch.optim.Optimizer
) -> tuple[torch.optim.lr_scheduler.LRScheduler | None, dict[str, Any]]:
    """PyTorch's scheduler for the experiment's schedule (None for a constant lr), and what it
    holds: its class and settings as read back from it, its base lr."""
    schedule = spec.schedule
    kind = schedule["kind"]
    sched = torch.optim.lr_scheduler
    if kind == "constant":
        return None, {"kind": kind}
    if kind == "linear":
        # LinearLR takes factors of the initial lr: from 1 to final_lr / lr over num_steps.
        lr = spec.hyperparameters["lr"]
        scheduler = sched.LinearLR(
            optimizer,
            start_factor=1.0,
            end_factor=schedule["final_lr"] / lr,
            total_iters=schedule["num_steps"],
        )
        held = ("start_factor", "end_factor", "total_iters")
    elif kind == "cosine":
        scheduler = sched.CosineAnnealingLR(
            optimizer, T_max=schedule["num_steps"], eta_min=schedule["min_lr"]
        )
        held = ("T_max", "eta_min")
    elif kind == "exponential":
        scheduler = sched.ExponentialLR(optimizer, gamma=schedule["gamma"])
        held = ("gamma",)
    else:
        scheduler = sched.StepLR(
            optimizer, step_size=schedule["step_size"], gamma=schedule["gamma"]
        )
        held = ("step_size", "gamma")
    meta = {"kind": kind, "class": type(scheduler).__name__}
    meta.update({key: getattr(scheduler, key) for key in held})
    meta["base_lr"] = scheduler.base_lrs[0]
    return scheduler, meta


def clip_gradients(clip: dict[str, float] | None, params: list[torch.Tensor]) -> None:
    """PyTorch's clipping between backward and step: one norm over all parameters, or each
    gradient value clamped."""
    if clip is None:
        return
    if "norm" in clip:
        torch.nn.utils.clip_grad_norm_(params, clip["norm"])
    else:
        torch.nn.utils.clip_grad_value_(params, clip["value"])


# The evaluation takes the dataset this many samples at a time (the text's 11,973 blocks at
# once would hold every position's activations: over 1.5 GB in f64). The Burn trainer
# takes the same chunks (rust/src/train.rs).
EVAL_CHUNK = 512


def evaluate(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    label_smoothing: float = 0.0,
    kind: str = DEFAULT_LOSS,
) -> dict[str, Any]:
    """Loss, correct count and predictions on the whole dataset, in eval mode (a batch norm
    uses its running statistics; cnn1d computes exactly what train mode would). The
    predictions are per row of the output: per sample, or per position of each sample;
    a regression (mse) has none: `correct` and `predictions` are None.

    The loss is the mean over every row: one chunk's own mean when the dataset is one chunk
    (sine's 96 samples), else Σ (chunk mean · chunk rows) / rows, summed in f64."""
    model.eval()
    classes = kind == "cross_entropy"
    means, rows, predictions, correct = [], [], [], 0
    with torch.no_grad():
        for i in range(0, x.shape[0], EVAL_CHUNK):
            out = model(x[i : i + EVAL_CHUNK])
            targets = y[i : i + EVAL_CHUNK]
            means.append(loss(out, targets, label_smoothing, kind).item())
            rows.append(out.shape[0])
            if classes:
                labels, predicted = targets.reshape(-1), out.argmax(1)
                correct += int((predicted == labels).sum().item())
                predictions += predicted.tolist()
    total = sum(m * n for m, n in zip(means, rows, strict=True))  # in chunk order, from 0
    mean = means[0] if len(means) == 1 else total / sum(rows)
    if not classes:
        return {"loss": mean, "correct": None, "predictions": None}
    return {"loss": mean, "correct": correct, "predictions": predictions}


def train(
    spec: Spec, arrays: dict, dtype: str, out: Path | None = None, bare: bool = False
) -> RunBlock:
    """One run: the block of the run file (io/run_file.py) but for the fields main() adds
    (input_sha256, config_sha256, git). With ``out`` (the run file to be) the tensors of the
    spec's `record_steps` are written to the tensors file beside it as the steps go
    (io/run_tensors.py), else kept in the block. ``bare``: nothing recorded per step (no
    tensors, layer record or norms): the training alone, for timing it."""
    torch_dtype = TORCH_DTYPE[dtype]
    model_name = spec.model
    probe_steps = set() if bare else set(spec.probe_steps)
    x, y = inputs(arrays, torch_dtype)
    smoothing, kind = spec.label_smoothing, spec.loss
    model = build(model_name, arrays, torch_dtype, spec.model_size)
    model.train()
    optimizers, groups = make_optimizers(spec, model)
    used = [held_hyperparameters(e, g) for e, g in zip(spec.entries(), groups, strict=True)]
    # One scheduler per optimizer (a group has the experiment's lr under a schedule).
    schedulers = [make_scheduler(spec, optimizer) for optimizer in optimizers]
    schedule = schedulers[0][1]
    clip = spec.clip_grad
    tensors = state(model)  # parameters, then buffers
    param_names = [name for name, _ in model.named_parameters()]
    if spec.port is not None:  # your own port: the weights file's order, as the Burn side's
        param_names = [p["name"] for p in spec.port.params]
    buffer_names = [name for name in tensors if name not in param_names]
    n, batch = x.shape[0], spec.batch_size
    batches = n // batch
    losses: list[float] = []
    lrs: list[float] = []  # the lr of each step, as the optimizer step read it
    shape = lambda name: list(tensors[name].shape)  # noqa: E731
    recorder = None
    if not bare:
        recorder = RunRecorder(
            out,
            dtype,
            {name: shape(name) for name in param_names},
            {name: shape(name) for name in buffer_names},
            spec.record_steps,
            sorted(p for p in probe_steps if p <= spec.steps),
            layer_count(model),
            PORT_LAYER_FIELDS if is_port_module(model) else LAYER_FIELDS,
        )
    numpy = lambda t: t.detach().numpy()  # noqa: E731
    # The L2 norm of each parameter and gradient after every step, in f64 (an f32 tensor
    # widened exactly first): the trend at the steps the trajectories leave out.
    norm = lambda t: torch.linalg.vector_norm(t.detach().to(torch.float64)).item()  # noqa: E731
    norms: dict[str, dict[str, list[float]]] = {
        kind: {name: [] for name in param_names} for kind in ("params", "grads")
    }
    for step in range(spec.steps):
        i = (step % batches) * batch  # no shuffling: the batches in rotation
        if step + 1 in probe_steps:
            out, record = recorded_forward(model, x[i : i + batch])
        else:
            out, record = model(x[i : i + batch]), None
        step_loss = loss(out, y[i : i + batch], smoothing, kind)
        losses.append(step_loss.item())
        for optimizer in optimizers:
            optimizer.zero_grad()
        step_loss.backward()
        if record is not None:
            recorder.layer(record(step + 1))
        kept = recorder is not None and recorder.records(step)
        for name in param_names if recorder else ():  # backward's, before any clipping
            norms["grads"][name].append(norm(tensors[name].grad))
            if kept:
                recorder.row("grads", name, step, numpy(tensors[name].grad))
        clip_gradients(clip, list(model.parameters()))
        lrs.append(optimizers[0].param_groups[0]["lr"])
        for optimizer, (scheduler, _) in zip(optimizers, schedulers, strict=True):
            optimizer.step()
            if scheduler is not None:
                scheduler.step()  # after optimizer.step(), as PyTorch documents
        for name in param_names if recorder else ():
            norms["params"][name].append(norm(tensors[name]))
            if kept:
                recorder.row("params", name, step, numpy(tensors[name]))
        for name in buffer_names if kept else ():  # running statistics, from the forward
            recorder.row("buffers", name, step, numpy(tensors[name]))
    final = evaluate(model, x, y, smoothing, kind)
    recorded = {}
    if recorder is not None:
        recorded = {"norms": norms} | recorder.finish(
            {name: numpy(tensors[name]) for name in param_names},
            {name: numpy(tensors[name]) for name in buffer_names},
        )
    block: RunBlock = {
        "losses": losses,
        "lrs": lrs,
        "final": final,
        **recorded,
        "meta": {
            "framework": "torch",
            "framework_version": torch.__version__,
            "dtype": dtype,
            "model": model_name,
            "model_size": model_size(model_name, model),
            "data": spec.data,
            "layer_hyperparameters": layer_hyperparameters(model_name, model),
            "loss": {"name": kind, "label_smoothing": smoothing},
            "optimizer": spec.optimizer,
            "hyperparameters": used[0],
            "param_groups": [
                {"params": g.params, "optimizer": g.optimizer, "hyperparameters": held}
                for g, held in zip(spec.param_groups, used[1:], strict=True)
            ],
            "kept_defaults": spec.keep_defaults["torch"],
            "schedule": schedule,
            "clip_grad": clip,
            "clip_scope": CLIP_SCOPES[next(iter(clip))] if clip else None,
            "steps": spec.steps,
            "batch_size": batch,
            "threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "cpu": cpu(),
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cpu_path": cpu_path.record(spec.cpu_path, cpu_path.torch_path(torch)),
        },
    }  # type: ignore[typeddict-item]  # main() adds the hashes and git
    return block


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, type=Path, help="a resolved experiment")
    parser.add_argument(
        "--dtype", required=True, nargs="+", choices=DTYPES, help="one run per dtype, in turn"
    )
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--out", required=True, nargs="+", type=Path, help="one per --dtype")
    parser.add_argument(
        "--bare",
        action="store_true",
        help="record nothing per step (no tensors file, layer record or norms): to time"
        " the training alone",
    )
    args = parser.parse_args(argv)
    if len(args.out) != len(args.dtype):
        parser.error(f"{len(args.dtype)} --dtype value(s) but {len(args.out)} --out file(s)")
    try:
        spec = read_spec(args.spec)
        arrays, sha256 = read_dataset(args.data)
    except (ConfigError, FormatError, FileNotFoundError) as exc:
        sys.exit(f"train_torch: {exc}")
    if not cpu_path.pinned(spec.cpu_path):
        # Run by hand without the setting's variables: PyTorch has started, so start again
        # with them (the pipeline sets them before any job starts).
        env = dict(os.environ)
        cpu_path.apply(spec.cpu_path, env)
        sys.stdout.flush()
        again = ["-m", __spec__.name] if __spec__ else [__file__]
        os.execve(sys.executable, [sys.executable, *again, *(argv or sys.argv[1:])], env)
    torch.set_num_threads(spec.threads)
    torch.use_deterministic_algorithms(True)
    # Each run starts from the random state a process of its own would start from: the
    # trainings here draw no random numbers, but a port's module might.
    random_state = torch.get_rng_state()
    config_sha256 = hashlib.sha256(args.spec.read_bytes()).hexdigest()
    git = git_state()
    for dtype, out in zip(args.dtype, args.out, strict=True):
        torch.set_rng_state(random_state)
        started = time.perf_counter()
        try:
            block = train(spec, arrays, dtype, out, args.bare)
        except ModelError as exc:  # refused before any step
            sys.exit(f"train_torch: {exc}")
        block["meta"]["input_sha256"] = sha256
        block["meta"]["config_sha256"] = config_sha256
        block["meta"]["git"] = git
        write_run(out, {spec.name: block})
        final = block["final"]
        correct = ""
        if final["correct"] is not None:  # a classifier's
            correct = f", correct {final['correct']}/{len(final['predictions'])}"
        print(
            f"torch {spec.name} {dtype}: {spec.steps} steps in "
            f"{time.perf_counter() - started:.2f}s, final loss {final['loss']:.8f}{correct}"
            f" -> {out}",
            flush=True,
        )


if __name__ == "__main__":
    main()
