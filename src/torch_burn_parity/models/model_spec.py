"""One model at one size as names (ModelSpec), with the models' size keys and defaults: the
type every reader of the pipeline takes a model as, apart from how each model is declared
(model_specs.py) or read from a port's files (port.py)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from torch_burn_parity.datasets import text

# The seed's problem (data sine): 96 sequences of length 16 in 3 classes.
N, LENGTH, CLASSES = 96, 16, 3
# The text's vocabulary: gpt's `vocab`, which the data sets (not the config).
VOCAB = len(text.vocabulary())

# Each model's size keys and their defaults (the sizes of the models before sizes were
# configurable: a model named without sizes is exactly that one). The transformer's 16
# positions are tokens of width d_model; with the defaults each head is 8/2 = 4 wide, so the
# score scale 1/sqrt(4) = 1/2 is exact on both sides.
SIZES: dict[str, dict[str, int]] = {
    "cnn1d": {"channels": 4, "kernel": 5},
    "cnn_bn": {"channels": 4, "kernel": 5},
    "transformer": {"d_model": 8, "heads": 2, "layers": 1, "d_ff": 16},
    # lenet's two convolutions' channels and its hidden Linear's width.
    "lenet": {"conv1": 6, "conv2": 16, "hidden": 32},
    # gpt: heads of 32/2 = 16 wide, so the score scale 1/sqrt(16) = 1/4 is exact on both
    # sides (Burn takes the square root in f32); `vocab` is the text's, not a config key.
    "gpt": {"d_model": 32, "heads": 2, "layers": 2, "d_ff": 128, "context": 32, "vocab": VOCAB},
}
# Size keys a config may not set: the data sets them.
DATA_KEYS = {"vocab": "the text's vocabulary"}
# The defaults by name, for code written against the default models.
CHANNELS, KERNEL = SIZES["cnn1d"]["channels"], SIZES["cnn1d"]["kernel"]
D_MODEL, HEADS, D_FF = (SIZES["transformer"][k] for k in ("d_model", "heads", "d_ff"))

DEFAULT_MODEL = "cnn1d"  # what a config or run file without `model` means

Array = tuple[list[int], np.ndarray]  # (PyTorch shape, flat f64 values)


class ModelError(ValueError):
    """An unknown model or size, or a dataset whose arrays are not the ones a model declares."""


@dataclass(frozen=True)
class ModelSpec:
    """One model at one size as names: its parameters and buffers (model order) with their
    shapes, its layers (the layer record's order), its layer hyperparameters and its initial
    values."""

    name: str
    size: dict[str, int]
    param_names: tuple[str, ...]
    buffer_names: tuple[str, ...]
    layers: tuple[str, ...]
    state_shapes: dict[str, list[int]]  # parameters then buffers, PyTorch's layouts
    formulas: Callable[[], dict[str, np.ndarray]] = field(repr=False)
    # The layer hyperparameters both trainers pass explicitly (PyTorch's defaults).
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    # Parameters Burn holds as several tensors, each a block of rows (rust/src/models:
    # Entry::packed_rows), by how many: Burn clips each tensor on its own.
    burn_parts: dict[str, int] = field(default_factory=dict)
    # The input it takes (datasets/registry.py checks a dataset against it): one sample's
    # shape, token ids (i64) rather than values (f32), and the classes it predicts.
    sample: tuple[int, ...] = (1, LENGTH)
    tokens: bool = False
    classes: int = CLASSES
    # Your own port (models/port.py: a Port), None for the built-in models.
    port: Any = field(default=None, compare=False)

    def parts_of(self, name: str) -> int:
        """How many tensors Burn holds parameter ``name`` as (1 but for packed ones)."""
        return self.burn_parts.get(name, 1)

    @property
    def state_names(self) -> tuple[str, ...]:
        """Parameters, then buffers."""
        return self.param_names + self.buffer_names

    @property
    def tag(self) -> str:
        """The model's name, with its size when not the default: a file-name-safe key."""
        return model_tag(self.name, self.size)

    @property
    def param_count(self) -> int:
        """How many trainable values the model has."""
        return sum(math.prod(self.state_shapes[n]) for n in self.param_names)

    def initial_arrays(self) -> dict[str, Array]:
        """{name: (shape, flat f64 values)} of every parameter and buffer, in model order."""
        values = self.formulas()
        return {name: (self.state_shapes[name], values[name]) for name in self.state_names}

    def shapes(self) -> dict[str, list[int]]:
        """{name: shape} of every parameter and buffer, in model order."""
        return dict(self.state_shapes)

    def param_shapes(self) -> dict[str, list[int]]:
        return {name: self.state_shapes[name] for name in self.param_names}


def model_tag(name: str, size: Mapping[str, int]) -> str:
    """``name`` for the default size, else ``name`` then each size key and value, e.g.
    `transformer-d_model256-heads4-layers1-d_ff1024` (dataset file names)."""
    if dict(size) == SIZES.get(name):
        return name
    return "-".join([name, *(f"{k}{v}" for k, v in size.items())])
