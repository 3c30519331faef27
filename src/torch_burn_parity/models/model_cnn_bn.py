"""cnn_bn: Conv1d(1→4, k=5, no bias) → BatchNorm1d(4) → GELU (exact) → LayerNorm(12) → flatten →
Linear(48→3).

Names, shapes, layer hyperparameters and initial values are model_specs.CNN_BN's
(torch-free); this module adds the PyTorch module. BatchNorm1d normalises each channel over
the batch and the 12 positions; LayerNorm each (sample, channel) row over its 12 positions,
with an elementwise affine. Every layer hyperparameter is passed explicitly, with the
values both sides use (PyTorch's defaults).

In train mode BatchNorm1d normalises by the batch's biased variance but updates
running_var with the unbiased one (× n/(n−1), n = batch · 12): torch.nn.BatchNorm1d's
documentation. Burn 0.22 updates it with the biased one (replay.py replays that).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from torch_burn_parity.models.model_specs import CHANNELS, CLASSES, CNN_BN, FLAT, KERNEL, POSITIONS

SPEC = CNN_BN

Stage = tuple[str, Callable[[torch.Tensor], torch.Tensor]]


class CnnBn(nn.Module):
    def __init__(
        self, bn_momentum: float, bn_eps: float, ln_eps: float, gelu_approximate: str
    ) -> None:
        super().__init__()
        self.conv = nn.Conv1d(1, CHANNELS, KERNEL, bias=False)
        self.bn = nn.BatchNorm1d(
            CHANNELS, eps=bn_eps, momentum=bn_momentum, affine=True, track_running_stats=True
        )
        self.gelu = nn.GELU(approximate=gelu_approximate)
        self.ln = nn.LayerNorm(POSITIONS, eps=ln_eps, elementwise_affine=True)
        self.fc = nn.Linear(FLAT, CLASSES)

    def stages(self) -> list[Stage]:
        """The layers in order, each taking the previous one's output."""
        return [
            ("conv", self.conv),
            ("bn", self.bn),
            ("gelu", self.gelu),
            ("ln", self.ln),
            ("fc", lambda h: self.fc(h.flatten(1))),
        ]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _, stage in self.stages():
            x = stage(x)
        return x


def new() -> CnnBn:
    """The module with the spec's layer hyperparameters, each passed explicitly."""
    hp = SPEC.hyperparameters
    return CnnBn(
        bn_momentum=hp["bn.momentum"],
        bn_eps=hp["bn.eps"],
        ln_eps=hp["ln.eps"],
        gelu_approximate=hp["gelu.approximate"],
    )


def layer_hyperparameters(module: CnnBn) -> dict:
    """The layer hyperparameters as the module holds them, read back from it; the running
    variance estimator is PyTorch's documented one (BatchNorm1d: unbiased)."""
    return {
        "bn.momentum": module.bn.momentum,
        "bn.eps": module.bn.eps,
        "ln.eps": module.ln.eps,
        "gelu.approximate": module.gelu.approximate,
        "bn.running_var_estimator": "unbiased",
    }
