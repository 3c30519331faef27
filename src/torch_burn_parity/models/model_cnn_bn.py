"""cnn_bn: Conv1d(1→C, k, no bias) → BatchNorm1d(C) → GELU (exact) → LayerNorm(P) → flatten →
Linear(C·P→3), P = 16 − k + 1 (by default C = 4, k = 5: LayerNorm(12), Linear(48→3)).

Names, shapes, layer hyperparameters and initial values are model_specs.CNN_BN's
(torch-free); this module adds the PyTorch module. BatchNorm1d normalises each channel over
the batch and the P positions; LayerNorm each (sample, channel) row over its P positions,
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

from torch_burn_parity.models.model_specs import CLASSES, CNN_BN, LENGTH, ModelSpec

SPEC = CNN_BN

Stage = tuple[str, Callable[[torch.Tensor], torch.Tensor]]


class CnnBn(nn.Module):
    def __init__(
        self,
        channels: int,
        kernel: int,
        bn_momentum: float,
        bn_eps: float,
        ln_eps: float,
        gelu_approximate: str,
    ) -> None:
        super().__init__()
        positions = LENGTH - kernel + 1
        self.conv = nn.Conv1d(1, channels, kernel, bias=False)
        self.bn = nn.BatchNorm1d(
            channels, eps=bn_eps, momentum=bn_momentum, affine=True, track_running_stats=True
        )
        self.gelu = nn.GELU(approximate=gelu_approximate)
        self.ln = nn.LayerNorm(positions, eps=ln_eps, elementwise_affine=True)
        self.fc = nn.Linear(channels * positions, CLASSES)

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


def new(spec: ModelSpec = SPEC) -> CnnBn:
    """The module at the spec's size with its layer hyperparameters, each passed
    explicitly."""
    hp = spec.hyperparameters
    return CnnBn(
        channels=spec.size["channels"],
        kernel=spec.size["kernel"],
        bn_momentum=hp["bn.momentum"],
        bn_eps=hp["bn.eps"],
        ln_eps=hp["ln.eps"],
        gelu_approximate=hp["gelu.approximate"],
    )


def model_size(module: CnnBn) -> dict[str, int]:
    """The size keys as the module holds them, read back from it."""
    return {"channels": module.conv.out_channels, "kernel": module.conv.kernel_size[0]}


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
