"""lenet, on digits: Conv2d(1→c1, 3×3, padding 1) → ReLU → MaxPool2d(2) → Conv2d(c1→c2, 3×3,
padding 1) → ReLU → AvgPool2d(2) → flatten → Linear(c2·2·2 → hidden) → ReLU →
Linear(hidden → 10), on 8×8 images [N, 1, 8, 8].

Names, shapes and initial values are model_specs' (torch-free); this module adds the
PyTorch module. Layers, in the layer record's order: conv1, relu1, pool1, conv2, relu2,
pool2, fc1, relu3, fc2 (the flatten is a reshape inside the fc1 stage, not a layer).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from torch_burn_parity.models.model_specs import SPECS, ModelSpec

SPEC = SPECS["lenet"]

Stage = tuple[str, Callable[[torch.Tensor], torch.Tensor]]


class LeNet(nn.Module):
    def __init__(self, conv1: int, conv2: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, conv1, kernel_size=3, stride=1, padding=1)
        self.pool1 = nn.MaxPool2d(kernel_size=2, stride=2)
        self.conv2 = nn.Conv2d(conv1, conv2, kernel_size=3, stride=1, padding=1)
        self.pool2 = nn.AvgPool2d(kernel_size=2, stride=2)
        self.fc1 = nn.Linear(conv2 * 2 * 2, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def stages(self) -> list[Stage]:
        """The layers in order, each taking the previous one's output."""
        return [
            ("conv1", self.conv1),
            ("relu1", torch.relu),
            ("pool1", self.pool1),
            ("conv2", self.conv2),
            ("relu2", torch.relu),
            ("pool2", self.pool2),
            ("fc1", lambda h: self.fc1(h.flatten(1))),
            ("relu3", torch.relu),
            ("fc2", self.fc2),
        ]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _, stage in self.stages():
            x = stage(x)
        return x


def new(spec: ModelSpec = SPEC) -> LeNet:
    """The module at the spec's size (PyTorch's own initial values; the dataset's replace
    them)."""
    s = spec.size
    return LeNet(s["conv1"], s["conv2"], s["hidden"], spec.classes)


def model_size(module: LeNet) -> dict[str, int]:
    """The size keys as the module holds them, read back from it."""
    return {
        "conv1": module.conv1.out_channels,
        "conv2": module.conv2.out_channels,
        "hidden": module.fc1.out_features,
    }


def layer_hyperparameters(module: LeNet) -> dict:
    """The convolutions' and pools' settings as the modules hold them."""
    assert module.conv1.kernel_size == module.conv2.kernel_size
    assert module.conv1.padding == module.conv2.padding
    return {
        "conv.kernel": module.conv1.kernel_size[0],
        "conv.padding": module.conv1.padding[0],
        "pool1": "max",
        "pool2": "avg",
        "pool.kernel": module.pool1.kernel_size,
        "pool.stride": module.pool1.stride,
    }
