"""The models both trainers build, without torch: names, shapes, layers, initial values.

This is the torch-free half of the model registry. parity_io (imported by every script),
make_data, gaps and the analyses read a model's parameter and buffer names from here and
never pay for `import torch` (about 2 s). The PyTorch modules are in model_cnn1d.py and
model_cnn_bn.py, gathered by models.py, which take their names and values from here.

A model's *state* is its parameters, then its buffers, each in the model's order with
PyTorch's names and layouts: the order of the dataset file (after x and y), of the run
files' trajectories and of every parameter matrix (gaps.param_matrix).

Initial values are f64 formulas of the flat index i (Python floats), rounded to f32 once,
when make_data.py packs them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# The seed's problem size: 96 sequences of length 16 in 3 classes; Conv1d(1→4, k=5).
N, LENGTH, CLASSES, CHANNELS, KERNEL = 96, 16, 3, 4, 5
POSITIONS = LENGTH - KERNEL + 1  # 12 outputs per channel
FLAT = CHANNELS * POSITIONS  # 4 × 12 = 48

DEFAULT_MODEL = "cnn1d"  # what a config or run file without `model` means

Array = tuple[list[int], list[float]]  # (PyTorch shape, flat f64 values)


class ModelError(ValueError):
    """An unknown model, or a dataset whose arrays are not the ones a model declares."""


@dataclass(frozen=True)
class ModelSpec:
    """One model as names: its parameters and buffers (model order), its layers (the
    layer record's order), its layer hyperparameters and its initial values."""

    name: str
    param_names: tuple[str, ...]
    buffer_names: tuple[str, ...]
    layers: tuple[str, ...]
    formulas: Callable[[], dict[str, Array]] = field(repr=False)
    # The layer hyperparameters both trainers pass explicitly (PyTorch's defaults).
    hyperparameters: dict[str, Any] = field(default_factory=dict)

    @property
    def state_names(self) -> tuple[str, ...]:
        """Parameters, then buffers."""
        return self.param_names + self.buffer_names

    def initial_arrays(self) -> dict[str, Array]:
        """{name: (shape, flat f64 values)} of every parameter and buffer, in model order."""
        arrays = self.formulas()
        return {name: arrays[name] for name in self.state_names}

    def shapes(self) -> dict[str, list[int]]:
        """{name: shape} of every parameter and buffer, in model order."""
        return {name: shape for name, (shape, _) in self.initial_arrays().items()}

    def param_shapes(self) -> dict[str, list[int]]:
        shapes = self.shapes()
        return {name: shapes[name] for name in self.param_names}


def by_index(shape: list[int], formula: Callable[[int], float]) -> Array:
    """An array whose element at flat index i is formula(i)."""
    return shape, [formula(i) for i in range(math.prod(shape))]


def cnn1d_formulas() -> dict[str, Array]:
    """The seed's deterministic init, in PyTorch's names and layouts ([out, in, k], [out, in])."""
    return {
        "conv.weight": (
            [CHANNELS, 1, KERNEL],
            [0.4 * math.sin(i + 1) for i in range(CHANNELS * KERNEL)],
        ),
        "conv.bias": ([CHANNELS], [0.02 * o - 0.03 for o in range(CHANNELS)]),
        "fc.weight": ([CLASSES, FLAT], [0.15 * math.cos(i + 1) for i in range(CLASSES * FLAT)]),
        "fc.bias": ([CLASSES], [0.0] * CLASSES),
    }


def cnn_bn_formulas() -> dict[str, Array]:
    """cnn1d's conv weight and fc values (the conv has no bias: see CNN_BN); affine norms near
    1 (weights) and 0 (biases), each its own formula so that no two channels start alike;
    running stats as PyTorch and Burn start."""
    seed = {k: v for k, v in cnn1d_formulas().items() if k != "conv.bias"}
    return seed | {
        "bn.weight": by_index([CHANNELS], lambda i: 1 + 0.1 * math.sin(i + 1)),
        "bn.bias": by_index([CHANNELS], lambda i: 0.05 * math.cos(i + 1)),
        "ln.weight": by_index([POSITIONS], lambda i: 1 + 0.05 * math.cos(i + 1)),
        "ln.bias": by_index([POSITIONS], lambda i: 0.02 * math.sin(i + 1)),
        "bn.running_mean": ([CHANNELS], [0.0] * CHANNELS),
        "bn.running_var": ([CHANNELS], [1.0] * CHANNELS),
    }


CNN1D = ModelSpec(
    name="cnn1d",
    param_names=("conv.weight", "conv.bias", "fc.weight", "fc.bias"),
    buffer_names=(),
    layers=("conv", "relu", "fc"),  # flatten is a reshape, not a layer
    formulas=cnn1d_formulas,
)

CNN_BN = ModelSpec(
    name="cnn_bn",
    # The conv has no bias, as usual before a BatchNorm: the normalization removes any
    # per-channel constant, so a bias there gets a gradient of pure rounding noise (~1e-17
    # in f64), which Adam turns into steps of about ±lr that differ between frameworks.
    param_names=(
        "conv.weight",
        "bn.weight",
        "bn.bias",
        "ln.weight",
        "ln.bias",
        "fc.weight",
        "fc.bias",
    ),  # fmt: skip
    # num_batches_tracked is not state here: Burn has none, and with a momentum set PyTorch
    # does not use it.
    buffer_names=("bn.running_mean", "bn.running_var"),
    layers=("conv", "bn", "gelu", "ln", "fc"),
    formulas=cnn_bn_formulas,
    hyperparameters={
        "bn.momentum": 0.1,
        "bn.eps": 1e-5,
        "ln.eps": 1e-5,
        "gelu.approximate": "none",
    },  # fmt: skip
)

SPECS = {spec.name: spec for spec in (CNN1D, CNN_BN)}


def spec(name: str) -> ModelSpec:
    """The model called ``name``; ModelError naming the known ones otherwise."""
    if name not in SPECS:
        raise ModelError(f"unknown model {name!r} (known: {', '.join(SPECS)})")
    return SPECS[name]


def model_of(block: dict[str, Any]) -> ModelSpec:
    """The model of a run file's experiment block (`meta.model`; absent means cnn1d)."""
    return spec(block.get("meta", {}).get("model", DEFAULT_MODEL))


def array_problem(
    model: str, declared: dict[str, list[int]], found: dict[str, list[int]], holder: str
) -> str | None:
    """What keeps a dataset's arrays from being exactly a module's parameters and buffers.

    declared: the module's {name: shape} (``holder`` names it, e.g. "the PyTorch module");
    found: the dataset's {name: shape} without x and y. None when they match exactly (names
    and shapes; order is not checked: each side loads by name).
    """
    for name, shape in declared.items():
        if name not in found:
            return (
                f"model {model}: the dataset has no array {name!r}"
                f" ({holder} needs it, shape {list(shape)})"
            )
        if list(found[name]) != list(shape):
            return (
                f"model {model}: array {name!r} has shape {list(found[name])} in the dataset,"
                f" {holder}'s is {list(shape)}"
            )
    for name in found:
        if name not in declared:
            return f"model {model}: the dataset holds {name!r}, which {holder} does not have"
    return None
