"""Per-step parameter gaps between runs: the numbers every table and verdict starts from.

A gap is max |a − b| over all parameters and buffers after a step. Non-finite values
propagate: a NaN anywhere makes that step's gap NaN (a diverged run never looks like a match).

The columns of a run's parameter matrix are its model's state: the parameters, then the
buffers (running statistics), each flattened in PyTorch's layout, in the model's order
(model_specs.py; the model is the run's `meta.model`, absent: cnn1d). Gradients exist for
parameters only, so a gradient matrix has the parameter columns alone (the same first
columns).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from torch_burn_parity.io.parity_io import FormatError, experiment_block, read_dataset
from torch_burn_parity.models.model_specs import model_of

RUNS = ("torch_f32", "burn_f32", "torch_f64", "burn_f64")


def add_run_arguments(parser, runs: tuple[str, ...] = RUNS) -> None:
    """--torch-f32 … --burn-f64: the run files of one experiment."""
    for key in runs:
        parser.add_argument(f"--{key.replace('_', '-')}", required=True, type=Path)


def run_paths(args, runs: tuple[str, ...] = RUNS) -> dict[str, Path]:
    return {key: getattr(args, key) for key in runs}


def report_steps_of(steps, report_steps: list[int]):
    """Boolean mask of the steps a Markdown table shows: the report steps, and the last."""
    last = int(steps.max())
    return steps.isin({s for s in report_steps if s <= last} | {last})


def param_matrix(block: dict, kind: str = "params") -> np.ndarray:
    """The trajectory as a [steps, columns] array in the model's order.

    kind "params": the parameters, then the buffers (trajectory.params, trajectory.buffers);
    kind "grads": the parameters' gradients alone.
    """
    model = model_of(block)
    trajectory = block["trajectory"]
    series = [trajectory[kind][name] for name in model.param_names]
    if kind == "params":
        series += [trajectory["buffers"][name] for name in model.buffer_names]
    return np.concatenate([np.asarray(s, dtype=np.float64) for s in series], 1)


def buffer_columns(block: dict) -> slice:
    """The columns of param_matrix(block) that are buffers (empty for cnn1d); the ones
    before them are the parameters."""
    model = model_of(block)
    shapes = model.shapes()
    start = sum(int(np.prod(shapes[name])) for name in model.param_names)
    return slice(start, start + sum(int(np.prod(shapes[name])) for name in model.buffer_names))


def flat_names(shapes: dict[str, list[int]]) -> list[str]:
    """Names of the columns of param_matrix by PyTorch index, e.g. 'fc.weight[1,19]'.

    shapes: each parameter's and buffer's PyTorch shape, in the model's order (params,
    then buffers), as dataset_shapes returns them.
    """
    return [
        f"{name}[{','.join(str(int(i)) for i in index)}]"
        for name, shape in shapes.items()
        for index in np.ndindex(*shape)
    ]


def dataset_shapes(path: str | Path) -> dict[str, list[int]]:
    """Each parameter's and buffer's PyTorch shape, read from the dataset file: every array
    but x and y, in the file's order (make_data.py writes the model's)."""
    arrays, _ = read_dataset(path)
    return {name: shape for name, (shape, _) in arrays.items() if name not in ("x", "y")}


def step_gaps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """max |a − b| per step (row); NaN where any difference is not finite."""
    diff = np.abs(a - b)
    gaps = diff.max(axis=1)
    gaps[~np.isfinite(diff).all(axis=1)] = np.nan
    return gaps


def load_runs(paths: dict[str, str | Path]) -> dict[str, dict]:
    """Read the four runs of one experiment and check that they belong together."""
    blocks = {key: experiment_block(path) for key, path in paths.items()}
    first_key = next(iter(blocks))
    first = blocks[first_key]
    for key, block in blocks.items():
        if model_of(block).name != model_of(first).name:
            raise FormatError(
                f"{paths[key]}: model {model_of(block).name}, but {paths[first_key]} trained"
                f" {model_of(first).name}"
            )
        if block["meta"]["input_sha256"] != first["meta"]["input_sha256"]:
            raise FormatError(
                f"{paths[key]}: input checksum {block['meta']['input_sha256'][:12]}… differs from"
                f" {paths[first_key]} ({first['meta']['input_sha256'][:12]}…): the runs did not"
                " read the same dataset"
            )
        if len(block["losses"]) != len(first["losses"]):
            raise FormatError(
                f"{paths[key]}: {len(block['losses'])} steps, but {paths[first_key]} has"
                f" {len(first['losses'])}"
            )
    return blocks


def ladder(blocks: dict[str, dict]) -> dict[str, np.ndarray]:
    """The precision ladder of one experiment, one value per step.

    dparam:    f32 torch vs f32 burn (what a port sees)
    torch_f64: torch f32 vs torch f64 (PyTorch's own f32 rounding)
    burn_f64:  burn f32 vs burn f64 (Burn's own f32 rounding)
    f64_f64:   torch f64 vs burn f64 (what is left when rounding is made ~1e9× smaller)
    """
    m = {key: param_matrix(block) for key, block in blocks.items()}
    return {
        "dparam": step_gaps(m["torch_f32"], m["burn_f32"]),
        "torch_f64": step_gaps(m["torch_f32"], m["torch_f64"]),
        "burn_f64": step_gaps(m["burn_f32"], m["burn_f64"]),
        "f64_f64": step_gaps(m["torch_f64"], m["burn_f64"]),
    }
