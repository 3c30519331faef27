"""Gradient precision probe at step 1: one parameter's gradient and update, f32 vs f64.

    python -m torch_burn_parity.analysis.probe --experiment adam \\
        --data results/data/cnn1d.safetensors \\
        --torch-f32 … --burn-f32 … --torch-f64 … --burn-f64 … [--parameter 'fc.weight[1,19]'] \\
        --csv results/tables/probe_adam.csv --md results/tables/probe_adam.md

Without --parameter, the probe takes the parameter whose f32 gradient (PyTorch's) has the
largest relative error against its f64 gradient at step 1, among those whose f64 gradient is
not rounding noise (64 f64 ulps of its tensor's largest gradient, or less: an exactly zero
gradient, such as a key bias's in attention, computes as ±1e-19). The chosen one is often a
small gradient born of cancellation: terms of both signs that nearly cancel keep few
correct f32 digits.
Any model: the parameters are the runs' model's (a buffer has no gradient: refused).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from torch_burn_parity.analysis.gaps import (
    add_run_arguments,
    column_of,
    flat_name,
    load_runs,
    run_paths,
    state_row,
)
from torch_burn_parity.io.parity_io import FormatError, read_dataset, write_text_atomic
from torch_burn_parity.models.model_specs import ModelSpec, model_of

# update = parameter after step 1 − initial value; update_diff = |update − the same
# framework's f64 update|; grad_rel_err = |grad − the same framework's f64 grad| / |f64 grad|.
COLUMNS = [
    "framework",
    "dtype",
    "parameter",
    "initial",
    "grad",
    "update",
    "grad_rel_err",
    "update_diff",
]


def parse_parameter(text: str, shapes: dict[str, list[int]]) -> tuple[str, int]:
    """'fc.weight[1,19]' or 'fc.weight[67]' -> ('fc.weight', 67)."""
    match = re.fullmatch(r"([\w.]+)\[([\d, ]+)\]", text.strip())
    if not match or match.group(1) not in shapes:
        raise ValueError(f"probe parameter {text!r}: expected e.g. 'fc.weight[1,19]'")
    name, shape = match.group(1), shapes[match.group(1)]
    index = [int(i) for i in match.group(2).split(",")]
    if len(index) == 1:
        flat = index[0]
    elif len(index) == len(shape):
        flat = int(np.ravel_multi_index(index, shape))
    else:
        raise ValueError(f"probe parameter {text!r}: {name} has shape {shape}")
    if not 0 <= flat < int(np.prod(shape)):
        raise ValueError(f"probe parameter {text!r}: index out of range for shape {shape}")
    return name, flat


def pretty(name: str, flat: int, shapes: dict[str, list[int]]) -> str:
    index = np.unravel_index(flat, shapes[name])
    return f"{name}[{','.join(str(int(i)) for i in index)}]"


# An f64 gradient below NOISE_ULPS f64 ulps of its tensor's largest |gradient| is rounding
# noise: an element whose exact gradient is zero (a key bias of attention, which the softmax
# cancels) comes out of f64 arithmetic as ±1e-19 or so, and its "relative error" is then
# the error of the f32 sum over nothing. The scale is the element's own tensor: gradients of
# different tensors differ by orders of magnitude, and the cancelling terms of one element
# are of the size of its tensor's gradients.
NOISE_ULPS = 64
F64_EPS = 2.0**-52


def rounding_noise(g64: np.ndarray, sizes: list[int] | None = None) -> np.ndarray:
    """Which f64 gradients are rounding noise: |g| ≤ NOISE_ULPS·2⁻⁵²·max|g| of its tensor.

    sizes: the number of elements of each parameter tensor, in the order of g64's columns
    (None: all of g64 is one tensor). An exactly zero gradient is noise as well.
    """
    g64 = np.abs(np.asarray(g64, dtype=np.float64))
    sizes = [g64.size] if sizes is None else sizes
    if sum(sizes) != g64.size:
        raise ValueError(f"tensor sizes {sizes} do not add up to {g64.size} gradients")
    starts = np.cumsum([0, *sizes[:-1]])
    scale = np.concatenate(
        [np.full(n, g64[a : a + n].max(initial=0.0)) for a, n in zip(starts, sizes, strict=True)]
    )
    return g64 <= NOISE_ULPS * F64_EPS * scale


def most_inaccurate(g32: np.ndarray, g64: np.ndarray, sizes: list[int] | None = None) -> int:
    """The column whose f32 gradient is furthest, relative to the f64 one, from it; gradients
    that are rounding noise (rounding_noise, with sizes its tensors) are never chosen."""
    noise = rounding_noise(g64, sizes)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(noise, -1.0, np.abs(g32 - g64) / np.abs(g64))
    return int(np.nanargmax(rel))


def probe_rows(blocks: dict, initial: np.ndarray, column: int, label: str) -> list[dict]:
    rows = []
    for fw in ("torch", "burn"):
        g64 = state_row(blocks[f"{fw}_f64"], 0, "grads")[column]
        u64 = state_row(blocks[f"{fw}_f64"], 0)[column] - initial[column]
        for dt in ("f32", "f64"):
            block = blocks[f"{fw}_{dt}"]
            grad = state_row(block, 0, "grads")[column]
            update = state_row(block, 0)[column] - initial[column]
            rows.append({"framework": fw, "dtype": dt, "parameter": label,
                         "initial": initial[column], "grad": grad,
                         "update": update, "grad_rel_err": abs(grad - g64) / abs(g64),
                         "update_diff": abs(update - u64)})  # fmt: skip
    return rows


def render_md(frame: pd.DataFrame, experiment: str) -> str:
    """The probe rows as a Markdown table, 8 significant digits (enough to tell f32 apart)."""
    shown = pd.DataFrame(
        {
            "framework": frame["framework"],
            "dtype": frame["dtype"],
            "gradient": frame["grad"].map(lambda x: f"{x:.8g}"),
            "update": frame["update"].map(lambda x: f"{x:.8g}"),
            "gradient rel. error": frame["grad_rel_err"].map(lambda x: f"{x:.2e}"),
            "update − own f64 update": frame["update_diff"].map(lambda x: f"{x:.2e}"),
        }
    )
    title = f"### Gradient probe at step 1: {experiment}, `{frame['parameter'].iloc[0]}`"
    table = shown.to_markdown(index=False, disable_numparse=True)
    return f"{title}\n\n{table}\n"


def model_arrays(
    model: ModelSpec, arrays: dict
) -> tuple[dict[str, list[int]], dict[str, list[int]], np.ndarray]:
    """The shapes of the model's parameters, of its parameters and buffers (the columns of
    param_matrix), and their initial values as one vector, from the dataset's arrays."""
    missing = [name for name in model.state_names if name not in arrays]
    if missing:
        raise FormatError(f"the dataset has no array {missing[0]!r} (model {model.name})")
    shapes = {name: arrays[name][0] for name in model.state_names}
    initial = np.concatenate(
        [np.asarray(arrays[name][1], dtype=np.float64) for name in model.state_names]
    )
    return {name: shapes[name] for name in model.param_names}, shapes, initial


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--data", required=True, type=Path)
    add_run_arguments(parser)
    parser.add_argument("--parameter", help="e.g. 'fc.weight[1,19]' (default: chosen)")
    parser.add_argument("--csv", required=True, type=Path)
    parser.add_argument("--md", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        blocks = load_runs(run_paths(args))
        arrays, _ = read_dataset(args.data)
        model = model_of(blocks["torch_f64"])
        params, shapes, initial = model_arrays(model, arrays)
        if args.parameter and args.parameter.split("[")[0].strip() in model.buffer_names:
            raise ValueError(f"probe parameter {args.parameter!r} is a buffer: it has no gradient")
        if args.parameter:
            name, flat = parse_parameter(args.parameter, params)
            pretty(name, flat, shapes)  # ValueError past the parameter's last element
            column = column_of(shapes, name, flat)
        else:
            g32 = state_row(blocks["torch_f32"], 0, "grads")
            g64 = state_row(blocks["torch_f64"], 0, "grads")
            sizes = [int(np.prod(shapes[name])) for name in params]
            column = most_inaccurate(g32, g64, sizes)
    except (FormatError, ValueError) as exc:
        sys.exit(f"probe: {exc}")
    label = flat_name(shapes, column)
    frame = pd.DataFrame(probe_rows(blocks, initial, column, label), columns=COLUMNS)
    write_text_atomic(args.csv, frame.to_csv(index=False, float_format="%.17g"))
    write_text_atomic(args.md, render_md(frame, args.experiment))
    print(f"{args.experiment}: probe {label} -> {args.csv}")


if __name__ == "__main__":
    main()
