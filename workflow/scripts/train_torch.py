"""Train the seed's 1-D CNN with PyTorch for one experiment and dtype; write a run file.

    python workflow/scripts/train_torch.py --experiment adam --dtype f64 \\
        --config config.yaml --data results/data/dataset.bin \\
        --out results/runs/adam/torch-f64.json

Data and initial weights come from the shared dataset file (f32). An f64 run widens them
exactly, so precision is the only thing that differs between the f32 and f64 runs.

The optimizer is torch.optim's; a schedule is torch.optim.lr_scheduler's, stepped after each
optimizer step; clipping (clip_grad_norm_ / clip_grad_value_) acts between backward and step.
The run file's `lrs` holds the lr each step used, `trajectory.grads` the gradients of
backward (before clipping).
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parity_config import (  # noqa: E402
    CLIP_SCOPES,
    DTYPES,
    ConfigError,
    experiment_spec,
    load_config,
)
from parity_io import PARAM_NAMES, FormatError, read_dataset, write_run  # noqa: E402
from provenance import cpu, git_state  # noqa: E402

TORCH_DTYPE = {"f32": torch.float32, "f64": torch.float64}


class Cnn(nn.Module):
    """Conv1d(1→C, k) → ReLU → flatten → Linear(C·(L−k+1) → classes), as in the seed."""

    def __init__(self, channels: int, kernel: int, flat: int, classes: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(1, channels, kernel)
        self.fc = nn.Linear(flat, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def build_model(arrays: dict[str, tuple[list[int], list]], dtype: torch.dtype) -> Cnn:
    channels, _, kernel = arrays["conv.weight"][0]
    classes, flat = arrays["fc.weight"][0]
    model = Cnn(channels, kernel, flat, classes).to(dtype)
    with torch.no_grad():
        for name, param in model.named_parameters():
            shape, values = arrays[name]
            # f32 values widened exactly to dtype: the same start for both precisions.
            param.copy_(torch.tensor(values, dtype=torch.float32).reshape(shape).to(dtype))
    return model


def inputs(arrays: dict, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The dataset's f32 inputs (widened exactly to dtype) and integer labels."""
    x = torch.tensor(arrays["x"][1], dtype=torch.float32).reshape(arrays["x"][0]).to(dtype)
    return x, torch.tensor(arrays["y"][1], dtype=torch.int64)


OPTIMIZERS = {
    "sgd": torch.optim.SGD,
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "adagrad": torch.optim.Adagrad,
    "rmsprop": torch.optim.RMSprop,
}


def make_optimizer(spec: dict[str, Any], params) -> torch.optim.Optimizer:
    """Pass every hyperparameter explicitly, except those the experiment leaves to PyTorch."""
    kept = set(spec["keep_defaults"]["torch"])
    given = {k: v for k, v in spec["hyperparameters"].items() if k not in kept}
    if "betas" in given:
        given["betas"] = tuple(given["betas"])
    return OPTIMIZERS[spec["optimizer"]](params, **given)


def held_hyperparameters(spec: dict[str, Any], optimizer: torch.optim.Optimizer) -> dict:
    """Every hyperparameter of the experiment's optimizer as PyTorch holds it, read back before
    a schedule changes the learning rate (the initial lr is recorded)."""
    group = optimizer.param_groups[0]
    return {k: (list(group[k]) if k == "betas" else group[k]) for k in spec["hyperparameters"]}


def make_scheduler(
    spec: dict[str, Any], optimizer: torch.optim.Optimizer
) -> tuple[torch.optim.lr_scheduler.LRScheduler | None, dict[str, Any]]:
    """PyTorch's scheduler for the experiment's schedule (None for a constant lr), and what it
    holds: its class and settings as read back from it, its base lr."""
    schedule = spec["schedule"]
    kind = schedule["kind"]
    sched = torch.optim.lr_scheduler
    if kind == "constant":
        return None, {"kind": kind}
    if kind == "linear":
        # LinearLR takes factors of the initial lr: from 1 to final_lr / lr over num_steps.
        lr = spec["hyperparameters"]["lr"]
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


def flat(t: torch.Tensor) -> list[float]:
    return t.detach().flatten().tolist()


def train(spec: dict[str, Any], arrays: dict, dtype: str) -> dict[str, Any]:
    torch_dtype = TORCH_DTYPE[dtype]
    x, y = inputs(arrays, torch_dtype)
    model = build_model(arrays, torch_dtype)
    optimizer = make_optimizer(spec, model.parameters())
    used = held_hyperparameters(spec, optimizer)
    scheduler, schedule = make_scheduler(spec, optimizer)
    clip = spec["clip_grad"]
    params = dict(model.named_parameters())
    n, batch = x.shape[0], spec["batch_size"]
    batches = n // batch
    losses: list[float] = []
    lrs: list[float] = []  # the lr of each step, as the optimizer step read it
    traj_params: dict[str, list] = {name: [] for name in PARAM_NAMES}
    traj_grads: dict[str, list] = {name: [] for name in PARAM_NAMES}
    for step in range(spec["steps"]):
        i = (step % batches) * batch  # no shuffling: the batches in rotation
        loss = nn.functional.cross_entropy(model(x[i : i + batch]), y[i : i + batch])
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        for name in PARAM_NAMES:  # the gradients of backward, before any clipping
            traj_grads[name].append(flat(params[name].grad))
        clip_gradients(clip, list(model.parameters()))
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        if scheduler is not None:
            scheduler.step()  # after optimizer.step(), as PyTorch documents
        for name in PARAM_NAMES:
            traj_params[name].append(flat(params[name]))
    with torch.no_grad():
        out = model(x)
        final = {
            "loss": nn.functional.cross_entropy(out, y).item(),
            "correct": int((out.argmax(1) == y).sum().item()),
            "predictions": out.argmax(1).tolist(),
        }
    return {
        "losses": losses,
        "lrs": lrs,
        "final": final,
        "params": {name: flat(params[name]) for name in PARAM_NAMES},
        "trajectory": {"params": traj_params, "grads": traj_grads},
        "meta": {
            "framework": "torch",
            "framework_version": torch.__version__,
            "dtype": dtype,
            "optimizer": spec["optimizer"],
            "hyperparameters": used,
            "kept_defaults": spec["keep_defaults"]["torch"],
            "schedule": schedule,
            "clip_grad": clip,
            "clip_scope": CLIP_SCOPES[next(iter(clip))] if clip else None,
            "steps": spec["steps"],
            "batch_size": batch,
            "threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "cpu": cpu(),
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--dtype", required=True, choices=DTYPES)
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        spec = experiment_spec(load_config(args.config), args.experiment)
        arrays, sha256 = read_dataset(args.data)
    except (ConfigError, FormatError, FileNotFoundError) as exc:
        sys.exit(f"train_torch: {exc}")
    torch.set_num_threads(spec["threads"])
    torch.use_deterministic_algorithms(True)
    started = time.perf_counter()
    block = train(spec, arrays, args.dtype)
    block["meta"]["input_sha256"] = sha256
    block["meta"]["config_sha256"] = hashlib.sha256(args.config.read_bytes()).hexdigest()
    block["meta"]["git"] = git_state()
    write_run(args.out, {args.experiment: block})
    print(
        f"torch {args.experiment} {args.dtype}: {spec['steps']} steps in "
        f"{time.perf_counter() - started:.2f}s, final loss {block['final']['loss']:.8f}, "
        f"correct {block['final']['correct']}/{len(arrays['y'][1])} -> {args.out}"
    )


if __name__ == "__main__":
    main()
