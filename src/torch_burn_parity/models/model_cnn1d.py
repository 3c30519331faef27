"""cnn1d, the seed's model: Conv1d(1→C, k) → ReLU → flatten → Linear(C·(16−k+1)→3); the seed's
sizes are C = 4, k = 5 (Linear(48→3)).

Names, shapes and initial values are model_specs.CNN1D's (torch-free); this module adds
the PyTorch module. Layers, in the layer record's order: conv, relu, fc (the flatten is
a reshape inside the fc stage, not a layer).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from torch_burn_parity.models.model_specs import CLASSES, CNN1D, LENGTH, ModelSpec

SPEC = CNN1D

Stage = tuple[str, Callable[[torch.Tensor], torch.Tensor]]


class Cnn(nn.Module):
    """Conv1d(1→C, k) → ReLU → flatten → Linear(C·(L−k+1) → classes), as in the seed."""

    def __init__(self, channels: int, kernel: int, flat: int, classes: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(1, channels, kernel)
        self.fc = nn.Linear(flat, classes)

    def stages(self) -> list[Stage]:
        """The layers in order, each taking the previous one's output."""
        return [
            ("conv", self.conv),
            ("relu", torch.relu),
            ("fc", lambda h: self.fc(h.flatten(1))),
        ]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _, stage in self.stages():
            x = stage(x)
        return x


def new(spec: ModelSpec = SPEC) -> Cnn:
    """The module at the spec's size, in f32 with PyTorch's own initial values (the
    dataset's replace them)."""
    channels, kernel = spec.size["channels"], spec.size["kernel"]
    return Cnn(channels, kernel, channels * (LENGTH - kernel + 1), CLASSES)


def model_size(module: Cnn) -> dict[str, int]:
    """The size keys as the module holds them, read back from it."""
    return {"channels": module.conv.out_channels, "kernel": module.conv.kernel_size[0]}


def layer_hyperparameters(module: Cnn) -> dict:
    """cnn1d has no layer hyperparameters (Conv1d, ReLU and Linear have none that change
    a value)."""
    return {}
