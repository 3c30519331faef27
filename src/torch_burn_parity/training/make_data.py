"""Write one model's dataset file: its data's inputs and the model's initial weights, in f32.

Every value is computed in f64 (Python floats) with the seed's formulas (model_specs.py for
the weights) and rounded to f32 exactly once, when it is packed. Both trainers read this one
file, so neither can regenerate the data or the weights slightly differently.

    python -m torch_burn_parity.training.make_data --model cnn_bn \
        --out results/data/cnn_bn.safetensors

A safetensors file (parity_io.py): x, y, then every parameter and buffer of the model (PyTorch
names and shapes), its metadata naming the model's tag. Burn loads the weights from it as
its users load PyTorch's, through burn-store. For cnn1d (the default) every value is bit for
bit the seed pipeline's dataset.bin's.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np

from torch_burn_parity.datasets.registry import (
    DataError,
    data_of,
    dataset_stem,
    default_data,
    fit_problem,
    input_arrays,
    parse_stem,
)
from torch_burn_parity.io.parity_io import encode_dataset, write_atomic
from torch_burn_parity.models import port
from torch_burn_parity.models.model_specs import CNN1D, DEFAULT_MODEL, ModelError, ModelSpec


def initial_weights() -> dict[str, tuple[list[int], list[float]]]:
    """cnn1d's initial parameters (the seed's), in PyTorch's names and layouts."""
    return CNN1D.initial_arrays()


def dataset_bytes(model: str | ModelSpec = DEFAULT_MODEL, data: str | None = None) -> bytes:
    """The dataset file of ``model`` (a ModelSpec, or a dataset stem such as `cnn_bn`,
    `transformer-d_model256-heads4-layers1-d_ff1024` or `lenet`) on ``data`` (a stem
    names its own; absent: the data the model takes): x, y, then its parameters and
    buffers."""
    if isinstance(model, str):
        data, model = parse_stem(model)
    if model.port is not None:  # your own data and weights (models/port.py)
        arrays = port.input_arrays(model.port) | model.initial_arrays()
        float_targets = np.asarray(arrays["y"][1]).dtype.kind == "f"  # mse's targets
        return encode_dataset(arrays, model.tag, "file", model.tokens, float_targets)
    data = data or default_data(model)
    if problem := fit_problem(data, model):
        raise DataError(problem)
    arrays = input_arrays(data_of(data, model)) | model.initial_arrays()
    return encode_dataset(arrays, model.tag, data, model.tokens)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help="dataset stem: a model's tag (its name, with its size keys when not the"
        " default, e.g. lenet or transformer-d_model256-heads4-layers1-d_ff1024), on the"
        " data the model takes; `{data}-{tag}` names another dataset",
    )
    parser.add_argument("--out", required=True, type=Path, help="dataset file to write")
    args = parser.parse_args(argv)
    try:
        data, model = parse_stem(args.model)
        print(f"{dataset_stem(data, model)}: {model.param_count:,} parameters", flush=True)
        blob = dataset_bytes(model, data)
    except (ModelError, DataError) as exc:
        raise SystemExit(f"make_data: {exc}") from None
    write_atomic(args.out, blob)
    print(f"wrote {args.out}: {len(blob)} bytes, sha256 {hashlib.sha256(blob).hexdigest()}")


if __name__ == "__main__":
    main()
