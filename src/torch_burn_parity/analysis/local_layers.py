"""Each Burn layer on PyTorch's input: the difference a layer introduces, apart from the one
it carries in.

The layers table compares PyTorch's and Burn's own forwards and backwards: past a few layers
every quantity carries the rounding of all the layers before it, so "the first quantity
above its floor" stops telling where a difference is introduced. The Burn trainer's local
mode (`parity-train local`, rust/src/local.rs) runs each Burn layer again at the probe steps,
on PyTorch's recorded input to that layer (forward) and on PyTorch's recorded gradient at its
output (backward), with PyTorch's parameters of that step — PaDiff's single-step mode. Its
file, `results/runs/{experiment}/burn-local-{dtype}.safetensors`, holds

    local/{step}/outputs/{k}       [numel]   layer k's output on PyTorch's input
    local/{step}/input_grads/{k}   [numel]   its input gradient from PyTorch's output gradient
                                             (empty for a layer whose input is token ids)

and `__metadata__` {"format": "torch-burn-parity local layers", "steps", "names"} (JSON).
max|PyTorch's recorded − Burn's local| of a quantity is what that layer alone makes of the
same input: the difference it *introduces*. Beside the accumulated difference (PyTorch's
own forward vs Burn's own), a layer whose local difference stays within the quantity's
floor while its accumulated one does not only *carries* a difference in.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from torch_burn_parity.io.parity_io import FormatError
from torch_burn_parity.io.run_tensors import TensorFile, TensorFileError

FORMAT = "torch-burn-parity local layers"
OUTPUT, INPUT_GRAD = "output", "input gradient"
KEYS = {OUTPUT: "outputs", INPUT_GRAD: "input_grads"}


class LocalLayers:
    """One local file: each probe step's local output and input gradient per layer."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.file = TensorFile(self.path)
            with self.path.open("rb") as f:
                length = int.from_bytes(f.read(8), "little")
                meta = json.loads(f.read(length)).get("__metadata__") or {}
        except (TensorFileError, ValueError, OSError) as exc:
            raise FormatError(f"{self.path}: not a local layers file ({exc})") from None
        if meta.get("format") != FORMAT:
            raise FormatError(
                f"{self.path}: not a local layers file (format {meta.get('format')!r})"
            )
        try:
            self.steps = [int(s) for s in json.loads(meta["steps"])]
            self.names = [str(n) for n in json.loads(meta["names"])]
        except (KeyError, ValueError, TypeError) as exc:
            raise FormatError(f"{self.path}: its metadata lacks steps or names ({exc})") from None

    def check(self, steps: list[int], names: list[str], reference: Path) -> None:
        """Refuse (FormatError naming the file) a file of other probe steps or layers."""
        if self.steps != steps or self.names != names:
            raise FormatError(
                f"{self.path}: local layers of steps {self.steps}, layers {self.names};"
                f" {reference} records steps {steps}, layers {names}"
            )

    def values(self, step: int, what: str, k: int) -> np.ndarray:
        """Layer k's local output or input gradient at ``step``, as f64."""
        key = f"local/{step}/{KEYS[what]}/{k}"
        try:
            return self.file.get(key).astype(np.float64).reshape(-1)
        except (KeyError, TensorFileError) as exc:
            raise FormatError(f"{self.path}: no {key} ({exc})") from None
