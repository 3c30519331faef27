"""Per-step parameter gaps between runs: the numbers every table and verdict starts from.

A gap is max |a − b| over all parameters and buffers after a step. Non-finite values
propagate: a NaN anywhere makes that step's gap NaN (a diverged run never looks like a match).

Runs are read a block of columns at a time (`column_blocks`: at most CHUNK_BYTES per run),
or a row at a time (`state_row`), from their tensors files: the memory an analysis needs does
not grow with steps × parameters. `param_matrix` (the whole [steps, columns] matrix) is for
small models and tests.

The columns of a run's parameter matrix are its model's state: the parameters, then the
buffers (running statistics), each flattened in PyTorch's layout, in the model's order
(model_specs.py; the model is the run's `meta.model`, absent: cnn1d). Gradients exist for
parameters only, so a gradient matrix has the parameter columns alone (the same first
columns).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from torch_burn_parity.io.parity_io import FormatError, experiment_block, read_dataset, row_of
from torch_burn_parity.io.run_tensors import Tensors
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


# The most a block of columns holds per run, in bytes (f64): four runs at a time stay far
# under the analyses' memory budget at any model size.
CHUNK_BYTES = 16 * 2**20


def state_names(block: dict, kind: str = "params") -> list[tuple[str, str]]:
    """(name, the trajectory it is in) of each column group of a run's matrix, in its order:
    kind "params": the parameters, then the buffers; kind "grads": the parameters."""
    model = model_of(block)
    names = [(name, kind) for name in model.param_names]
    if kind == "params":
        names += [(name, "buffers") for name in model.buffer_names]
    return names


def _columns(series, name: str, start: int, stop: int) -> np.ndarray:
    """Rows [:, start:stop] of one trajectory's first dimension (its tensor's), as [steps, m]
    f64: read from a tensors file that block only."""
    if isinstance(series, Tensors):
        return series.columns(name, start, stop)
    values = np.asarray(series[name], dtype=np.float64)
    shape = values.shape[1] // max(1, _first_dim(series, name, values))
    return values[:, start * shape : stop * shape]


def _first_dim(series, name: str, values: np.ndarray | None = None) -> int:
    """The first dimension of the tensor ``name`` holds (its flat length for inline lists,
    which carry no shape)."""
    if isinstance(series, Tensors):
        shape = series.file.shape(series.prefix + name)
        return shape[1] if len(shape) > 1 else 1
    return (values if values is not None else np.asarray(series[name])).shape[1]


def column_blocks(
    blocks: dict[str, dict], kind: str = "params"
) -> Iterator[tuple[str, str, int, dict[str, np.ndarray]]]:
    # The rows are the recorded steps (recorded_steps), the same in every run (load_runs).
    """(name, trajectory, first column, {run: [steps, m]}) for each block of columns of the
    runs' matrices (`param_matrix`'s columns, in its order), read one block at a time from
    every run: a tensor whole when it is small, else cut along its first dimension."""
    ref = next(iter(blocks.values()))
    steps = len(recorded_steps(ref))
    column = 0
    for name, trajectory in state_names(ref, kind):
        series = {key: block["trajectory"][trajectory] for key, block in blocks.items()}
        first = next(iter(series.values()))
        rows = _first_dim(first, name)
        width = max(1, step_width(first, name) // rows)  # columns per index of dim 0
        per_block = max(1, CHUNK_BYTES // (8 * steps * width))
        for start in range(0, rows, per_block):
            stop = min(rows, start + per_block)
            part = {key: _columns(s, name, start, stop) for key, s in series.items()}
            yield name, trajectory, column, part
            column += (stop - start) * width


def step_width(series, name: str) -> int:
    """How many values one step of trajectory ``name`` holds."""
    if isinstance(series, Tensors):
        return math.prod(series.file.shape(series.prefix + name)[1:])
    return len(series[name][0])


def recorded_steps(block: dict) -> list[int]:
    """The 1-based steps a run's trajectories hold, in row order: its tensors file's
    `steps` (config/record.py chose them), else every step (inline trajectories)."""
    if "tensors" in block:
        return [int(s) for s in block["tensors"]["steps"]]
    return list(range(1, len(block["losses"]) + 1))


def state_row(block: dict, index: int, kind: str = "params") -> np.ndarray:
    """Row ``index`` (0-based step) of the run's matrix, reading that row only."""
    trajectory = block["trajectory"]
    parts = [
        np.asarray(row_of(trajectory[t], name, index), dtype=np.float64).reshape(-1)
        for name, t in state_names(block, kind)
    ]
    return np.concatenate(parts) if parts else np.zeros(0)


class StepMax:
    """max |a − b| per step over blocks of columns, NaN for a step where any difference is
    not finite (as step_gaps on the whole matrices), and the column of each step's largest."""

    def __init__(self, steps: int) -> None:
        self.gaps = np.zeros(steps)
        self.finite = np.ones(steps, dtype=bool)
        self.column = np.full(steps, -1)

    def add(self, a: np.ndarray, b: np.ndarray, first_column: int) -> None:
        diff = np.subtract(a, b)
        np.abs(diff, out=diff)
        if diff.shape[1] == 0:
            return
        # Two passes over the block (max, argmax) where all is finite; the rows holding a
        # NaN or an infinity (their max is not finite) are taken again one by one.
        block_max = diff.max(axis=1)
        column = diff.argmax(axis=1)
        for row in np.flatnonzero(~np.isfinite(block_max)):
            self.finite[row] = False
            values = diff[row]
            numbers = np.where(np.isnan(values), -np.inf, values)
            block_max[row] = numbers.max()
        larger = block_max > self.gaps
        self.column[larger] = first_column + column[larger]
        self.gaps = np.maximum(self.gaps, block_max)

    def result(self) -> np.ndarray:
        gaps = self.gaps.copy()
        gaps[~self.finite] = np.nan
        return gaps


def flat_name(shapes: dict[str, list[int]], column: int) -> str:
    """The name by PyTorch index of one column of param_matrix, e.g. 'fc.weight[1,19]'
    (flat_names(shapes)[column], without listing every column)."""
    for name, shape in shapes.items():
        size = math.prod(shape)
        if column < size:
            index = np.unravel_index(column, shape) if shape else ()
            return f"{name}[{','.join(str(int(i)) for i in index)}]"
        column -= size
    raise IndexError(f"column {column} is past the last of {list(shapes)}")


def column_of(shapes: dict[str, list[int]], name: str, flat: int) -> int:
    """The column of param_matrix holding element ``flat`` (flat index) of ``name``."""
    offset = 0
    for other, shape in shapes.items():
        if other == name:
            return offset + flat
        offset += math.prod(shape)
    raise KeyError(name)


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
        if recorded_steps(block) != recorded_steps(first):
            raise FormatError(
                f"{paths[key]}: records other steps than {paths[first_key]}"
                " (their runs were made from different specs)"
            )
    return blocks


def ladder(blocks: dict[str, dict]) -> dict[str, np.ndarray]:
    """The precision ladder of one experiment, one value per recorded step.

    dparam:    f32 torch vs f32 burn (what a port sees)
    torch_f64: torch f32 vs torch f64 (PyTorch's own f32 rounding)
    burn_f64:  burn f32 vs burn f64 (Burn's own f32 rounding)
    f64_f64:   torch f64 vs burn f64 (what is left when rounding is made ~1e9× smaller)
    """
    pairs = {
        "dparam": ("torch_f32", "burn_f32"),
        "torch_f64": ("torch_f32", "torch_f64"),
        "burn_f64": ("burn_f32", "burn_f64"),
        "f64_f64": ("torch_f64", "burn_f64"),
    }
    steps = len(recorded_steps(next(iter(blocks.values()))))
    found = {label: StepMax(steps) for label in pairs}
    for _, _, column, part in column_blocks(blocks):
        for label, (a, b) in pairs.items():
            found[label].add(part[a], part[b], column)
    return {label: gaps.result() for label, gaps in found.items()}
