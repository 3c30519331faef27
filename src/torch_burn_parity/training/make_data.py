"""Write one model's dataset file: the seed's inputs and the model's initial weights, in f32.

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
import math
from pathlib import Path

from torch_burn_parity.io.parity_io import encode_dataset, write_atomic
from torch_burn_parity.models.model_specs import (
    CLASSES,
    CNN1D,
    DEFAULT_MODEL,
    LENGTH,
    ModelError,
    ModelSpec,
    N,
    parse_tag,
)


def inputs() -> tuple[list[float], list[int]]:
    """x[k][t] = sin(f·t + 0.37k) + 0.3·sin(2.3t + 1.1k), f = 0.3·(c+1), c = k mod 3."""
    xs, ys = [], []
    for k in range(N):
        c = k % CLASSES
        f = 0.3 * (c + 1)
        xs.extend(
            math.sin(f * t + 0.37 * k) + 0.3 * math.sin(2.3 * t + 1.1 * k) for t in range(LENGTH)
        )
        ys.append(c)
    return xs, ys


def initial_weights() -> dict[str, tuple[list[int], list[float]]]:
    """cnn1d's initial parameters (the seed's), in PyTorch's names and layouts."""
    return CNN1D.initial_arrays()


def dataset_bytes(model: str | ModelSpec = DEFAULT_MODEL) -> bytes:
    """The dataset file of ``model`` (a ModelSpec, or a model tag such as `cnn_bn` or
    `transformer-d_model256-heads4-layers1-d_ff1024`): x, y, then its parameters and
    buffers."""
    model = parse_tag(model) if isinstance(model, str) else model
    xs, ys = inputs()
    arrays = {"x": ([N, 1, LENGTH], xs), "y": ([N], ys), **model.initial_arrays()}
    return encode_dataset(arrays, model.tag)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help="model tag: a model's name, with its size keys when not the default"
        " (e.g. transformer-d_model256-heads4-layers1-d_ff1024)",
    )
    parser.add_argument("--out", required=True, type=Path, help="dataset file to write")
    args = parser.parse_args(argv)
    try:
        model = parse_tag(args.model)
    except ModelError as exc:
        raise SystemExit(f"make_data: {exc}") from None
    print(f"{model.tag}: {model.param_count:,} parameters", flush=True)
    blob = dataset_bytes(model)
    write_atomic(args.out, blob)
    print(f"wrote {args.out}: {len(blob)} bytes, sha256 {hashlib.sha256(blob).hexdigest()}")


if __name__ == "__main__":
    main()
