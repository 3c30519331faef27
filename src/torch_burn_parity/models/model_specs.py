"""The models both trainers build, without torch: names, shapes, layers, initial values.

This is the torch-free half of the model registry. parity_io (imported by every script),
make_data, gaps and the analyses read a model's parameter and buffer names from here and
never pay for `import torch` (about 2 s). The PyTorch modules are in model_cnn1d.py,
model_cnn_bn.py and model_transformer.py, gathered by models.py, which take their names and
values from here.

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
# The transformer: the 16 positions as tokens of width D_MODEL, HEADS heads of D_MODEL/HEADS
# = 4 (so the score scale 1/sqrt(4) = 1/2 is exact on both sides), a feed-forward of D_FF.
D_MODEL, HEADS, D_FF = 8, 2, 16
TOKENS_FLAT = LENGTH * D_MODEL  # 16 × 8 = 128

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
    # Parameters Burn holds as several tensors, each a block of rows (rust/src/models:
    # Entry::packed_rows), by how many: Burn clips each tensor on its own.
    burn_parts: dict[str, int] = field(default_factory=dict)

    def parts_of(self, name: str) -> int:
        """How many tensors Burn holds parameter ``name`` as (1 but for packed ones)."""
        return self.burn_parts.get(name, 1)

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


def transformer_formulas() -> dict[str, Array]:
    """Small sines and cosines of the flat index, scaled by 1/sqrt(fan_in), a different phase
    or frequency per array so that no two rows (the query, key and value blocks of the packed
    in_proj_weight included) start alike; norms near 1 (weights) and 0 (biases)."""
    d, ff = D_MODEL, D_FF

    def weight(shape: list[int], scale: float, f: Callable[[float], float], phase: float):
        fan_in = shape[1]
        return by_index(shape, lambda i: scale * f(i + phase) / math.sqrt(fan_in))

    return {
        "embed.weight": by_index([d, 1], lambda i: 0.8 * math.sin(i + 1)),
        "embed.bias": by_index([d], lambda i: 0.1 * math.cos(i + 1)),
        "enc.self_attn.in_proj_weight": weight([3 * d, d], 0.9, math.sin, 1),
        "enc.self_attn.in_proj_bias": by_index([3 * d], lambda i: 0.05 * math.cos(i + 1)),
        "enc.self_attn.out_proj.weight": weight([d, d], 0.6, math.cos, 2),
        "enc.self_attn.out_proj.bias": by_index([d], lambda i: 0.02 * math.sin(i + 2)),
        "enc.linear1.weight": weight([ff, d], 0.9, math.sin, 3),
        "enc.linear1.bias": by_index([ff], lambda i: 0.05 * math.sin(0.5 * i + 1)),
        "enc.linear2.weight": weight([d, ff], 0.6, math.cos, 3),
        "enc.linear2.bias": by_index([d], lambda i: 0.02 * math.cos(i + 3)),
        "enc.norm1.weight": by_index([d], lambda i: 1 + 0.05 * math.cos(i + 1)),
        "enc.norm1.bias": by_index([d], lambda i: 0.02 * math.sin(i + 1)),
        "enc.norm2.weight": by_index([d], lambda i: 1 + 0.05 * math.sin(i + 1)),
        "enc.norm2.bias": by_index([d], lambda i: 0.02 * math.cos(i + 1)),
        "fc.weight": weight([CLASSES, TOKENS_FLAT], 1.2, math.cos, 1),
        "fc.bias": ([CLASSES], [0.0] * CLASSES),
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

TRANSFORMER = ModelSpec(
    name="transformer",
    # PyTorch's names and layouts (nn.TransformerEncoderLayer's): in_proj_weight packs the
    # query, key and value projections as rows 0..8, 8..16, 16..24 ([out, in] each), and
    # in_proj_bias their biases; Burn holds them as three Linear layers.
    # The key bias (in_proj_bias[8:16]) adds q·b_k to every score of a row, which softmax
    # removes: its gradient is zero but for rounding (~1e-18 in f64), as cnn_bn's conv bias
    # would be. nn.MultiheadAttention cannot drop it alone (bias=False drops every attention
    # bias); under Adam that noise moves it by ~lr·1e-10 per step, differently in each
    # framework (a replay gap of ~1e-9 on in_proj_bias[8:16] after 100 steps, nothing else).
    param_names=(
        "embed.weight",
        "embed.bias",
        "enc.self_attn.in_proj_weight",
        "enc.self_attn.in_proj_bias",
        "enc.self_attn.out_proj.weight",
        "enc.self_attn.out_proj.bias",
        "enc.linear1.weight",
        "enc.linear1.bias",
        "enc.linear2.weight",
        "enc.linear2.bias",
        "enc.norm1.weight",
        "enc.norm1.bias",
        "enc.norm2.weight",
        "enc.norm2.bias",
        "fc.weight",
        "fc.bias",
    ),  # fmt: skip
    buffer_names=(),
    # attn and ff are each sublayer with its residual connection (x + sublayer(x)): the
    # stages form a chain, each taking the previous one's output, on both sides.
    layers=("embed", "attn", "norm1", "ff", "norm2", "fc"),
    formulas=transformer_formulas,
    burn_parts={"enc.self_attn.in_proj_weight": 3, "enc.self_attn.in_proj_bias": 3},
    hyperparameters={
        "enc.d_model": D_MODEL,
        "enc.nhead": HEADS,
        "enc.dim_feedforward": D_FF,
        "enc.dropout": 0.0,
        "enc.norm_first": False,
        "enc.activation": "gelu",
        "enc.layer_norm_eps": 1e-5,
    },  # fmt: skip
)

SPECS = {spec.name: spec for spec in (CNN1D, CNN_BN, TRANSFORMER)}


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
