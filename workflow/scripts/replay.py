"""Replay Burn's optimizer arithmetic on the PyTorch side, in f64, to explain the f64 gap.

    python workflow/scripts/replay.py --experiment adam --data results/data/dataset.bin \\
        --torch-f64 results/runs/adam/torch-f64.json --burn-f64 results/runs/adam/burn-f64.json \\
        --replay-csv … --replay-md … --counterfactual-csv … --counterfactual-md …

The model, data and gradients are PyTorch's (f64); only the update rule is Burn 0.22's
(`burn-optim` adam.rs, sgd.rs, momentum.rs, decay.rs), written out below. Three variants:

replay          Burn's rule with the hyperparameters as Burn held them (f32 values widened),
                `1 − β` computed in f32 as Burn does, and — for Adam — the per-step factors
                Burn recorded. Compared with Burn's f64 run: if it matches to ~1e-16, Burn's
                update is fully understood.
held_f64        Burn's rule and Burn's held values, but every scalar computed in f64.
                Compared with PyTorch's f64 run: what is left is the effect of the values
                themselves (f32-stored betas, a different default epsilon or dampening).
counterfactual  Burn's rule with PyTorch's hyperparameters, all in f64. Compared with
                PyTorch's f64 run: if it matches to rounding, changing those values (and the
                precision of Burn's factors) is all it takes to close the gap.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from gaps import (  # noqa: E402
    add_run_arguments,
    flat_names,
    load_runs,
    param_matrix,
    report_steps_of,
    run_paths,
    step_gaps,
)
from parity_io import PARAM_NAMES, FormatError, read_dataset, write_text_atomic  # noqa: E402
from train_torch import build_model, inputs  # noqa: E402


def f32(x: float) -> float:
    return float(np.float32(x))


class BurnUpdate:
    """Burn 0.22's SGD or Adam step on f64 tensors, with the given scalar values.

    factors(t) -> (combined_factor, epsilon·bias_correction2_sqrt) for Adam at step t.
    f32_one_minus: compute 1 − β₁ and 1 − β₂ in f32, as Burn does with its f32 betas.
    """

    def __init__(self, optimizer: str, hp: dict, factors=None, f32_one_minus=False) -> None:
        self.optimizer, self.hp, self.factors = optimizer, hp, factors
        self.state: dict[str, tuple] = {}
        if optimizer == "adam":
            # Burn's `1.0 - self.beta_1` is an f32 subtraction of f32 values (exact for
            # 0.5 ≤ β ≤ 1 by Sterbenz's lemma, but done the same way here regardless).
            one_minus = (
                (lambda b: f32(np.float32(1) - np.float32(b)))
                if f32_one_minus
                else (lambda b: 1.0 - b)
            )
            self.one_minus = tuple(one_minus(b) for b in hp["betas"])

    def step(self, name: str, p: torch.Tensor, g: torch.Tensor, t: int) -> torch.Tensor:
        hp = self.hp
        if hp["weight_decay"]:
            g = p * hp["weight_decay"] + g  # decay.rs: L2 penalty added to the gradient
        if self.optimizer == "adam":
            b1, b2 = hp["betas"]
            a1, a2 = self.one_minus
            if name not in self.state:  # first step: moments start from the gradient
                m, v = g * a1, g.square() * a2
            else:
                m, v = self.state[name]
                m, v = m * b1 + g * a1, v * b2 + g.square() * a2
            self.state[name] = (m, v)
            c, e = self.factors(t)
            return p - (m * c / (v.sqrt() + e)) * hp["lr"]
        if hp["momentum"]:
            if name not in self.state:
                velocity = g
            else:
                velocity = g * (1.0 - hp["dampening"]) + self.state[name] * hp["momentum"]
            self.state[name] = velocity
            g = velocity * hp["momentum"] + g if hp["nesterov"] else velocity
        return p - g * hp["lr"]


def f64_factors(hp: dict) -> Callable[[int], tuple[float, float]]:
    b1, b2 = hp["betas"]

    def factors(t: int) -> tuple[float, float]:
        bc2 = math.sqrt(1.0 - b2**t)
        return bc2 / (1.0 - b1**t), hp["eps"] * bc2

    return factors


def recorded_factors(block: dict) -> Callable[[int], tuple[float, float]]:
    rec = block["adam_factors"]
    c, e = rec["combined_factor"], rec["epsilon_bias_correction2_sqrt"]
    return lambda t: (c[t - 1], e[t - 1])


def run(arrays: dict, update: BurnUpdate, steps: int, batch: int) -> tuple[list, np.ndarray]:
    """Train in f64 with PyTorch's autograd and Burn's update; losses and per-step params."""
    x, y = inputs(arrays, torch.float64)
    model = build_model(arrays, torch.float64)
    params = dict(model.named_parameters())
    batches = x.shape[0] // batch
    losses, snapshots = [], []
    for step in range(steps):
        i = (step % batches) * batch
        loss = torch.nn.functional.cross_entropy(model(x[i : i + batch]), y[i : i + batch])
        losses.append(loss.item())
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for name in PARAM_NAMES:
                p = params[name]
                p.copy_(update.step(name, p.detach().clone(), p.grad, step + 1))
        flat = [params[n].detach().flatten().numpy() for n in PARAM_NAMES]
        snapshots.append(np.concatenate(flat))
    return losses, np.array(snapshots)


def gap_frame(losses, snapshots, reference: dict, names: list[str]) -> pd.DataFrame:
    ref = param_matrix(reference)
    diff = np.abs(snapshots - ref)
    where = []
    for row in diff:
        if not np.isfinite(row).all():
            where.append("non-finite")
        else:
            where.append(names[int(np.argmax(row))] if row.max() > 0 else "-")
    return pd.DataFrame(
        {
            "step": np.arange(1, len(losses) + 1),
            "dloss": np.abs(np.asarray(losses) - np.asarray(reference["losses"], dtype=float)),
            "dparam": step_gaps(snapshots, ref),
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
    torch_run, burn_run = blocks["torch_f64"], blocks["burn_f64"]
    if burn_run["meta"]["input_sha256"] != sha256:
        sys.exit(f"replay: {args.burn_f64} was trained on other inputs than {args.data}")
    torch.set_num_threads(burn_run["meta"]["threads"])
    optimizer = burn_run["meta"]["optimizer"]
    burn_hp, torch_hp = burn_run["meta"]["hyperparameters"], torch_run["meta"]["hyperparameters"]
    steps, batch = len(burn_run["losses"]), burn_run["meta"]["batch_size"]
    names = flat_names({name: arrays[name][0] for name in PARAM_NAMES})
    adam = optimizer == "adam"

    replay = BurnUpdate(optimizer, burn_hp, recorded_factors(burn_run) if adam else None, True)
    held = BurnUpdate(optimizer, burn_hp, f64_factors(burn_hp) if adam else None)
    counter = BurnUpdate(optimizer, torch_hp, f64_factors(torch_hp) if adam else None)

    replay_frame = gap_frame(*run(arrays, replay, steps, batch), burn_run, names)
    counter_frame = gap_frame(*run(arrays, counter, steps, batch), torch_run, names)
    held_losses, held_params = run(arrays, held, steps, batch)
    counter_frame["dparam_held_f64"] = step_gaps(held_params, param_matrix(torch_run))

    title = f"{args.experiment}: Burn's update replayed in PyTorch (f64) vs Burn f64"
    write_text_atomic(args.replay_csv, replay_frame.to_csv(index=False, float_format="%.17g"))
    write_text_atomic(args.replay_md, render_md(replay_frame, title, args.report_steps))
    title = f"{args.experiment}: Burn's update with PyTorch's hyperparameters in f64 vs PyTorch f64"
    write_text_atomic(
        args.counterfactual_csv, counter_frame.to_csv(index=False, float_format="%.17g")
    )
    write_text_atomic(args.counterfactual_md, render_md(counter_frame, title, args.report_steps))
    print(
        f"{args.experiment}: replay vs burn-f64 max {np.nanmax(replay_frame['dparam']):.2e};"
        f" counterfactual vs torch-f64 max {np.nanmax(counter_frame['dparam']):.2e};"
        f" Burn's values in f64 vs torch-f64 max {np.nanmax(counter_frame['dparam_held_f64']):.2e}"
    )


if __name__ == "__main__":
    main()
