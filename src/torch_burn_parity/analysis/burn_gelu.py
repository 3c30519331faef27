"""The GELU a Burn backend differentiates, on the PyTorch side: the replay's and the
counterfactual's stand-in for a layer whose backward no setting reaches (layer_settings.py,
`{layer}.backward`).

burn-ndarray keeps burn-backend's default `gelu_backward` (burn-backend 0.22.1
src/backend/ops/activation.rs lines 98–128): whatever the forward computed (the exact erf
GELU), the gradient is the derivative of the tanh approximation, with its constants
rounded to 6 digits:

    inner1 = 0.0356774·x³ + 0.797885·x        (√(2/π)·(x + 0.044715·x³))
    inner2 = 0.0535161·x³ + 0.398942·x        (its derivative, halved)
    dgelu  = 0.5·tanh(inner1) + (inner2·(1 − tanh(inner1)²) + 0.5)

computed here in that order, in the run's dtype. burn-flex overrides it with the erf
derivative (src/ops/activation.rs lines 81–103), PyTorch's.
"""

from __future__ import annotations

import torch
from torch import nn


class _NdArrayGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return nn.functional.gelu(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        x3 = x.pow(3)
        inner1 = x3 * 0.0356774 + x * 0.797885
        inner2 = x3 * 0.0535161 + x * 0.398942
        tanh = torch.tanh(inner1)
        sech = -tanh.pow(2) + 1
        return (tanh * 0.5 + (inner2 * sech + 0.5)) * grad


class BurnGelu(nn.Module):
    """The exact GELU forward, differentiated as `backward` says: "tanh" (NdArray's) or
    "none" (the erf derivative, PyTorch's own)."""

    def __init__(self, backward: str) -> None:
        super().__init__()
        self.backward_form = backward

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.backward_form == "tanh":
            return _NdArrayGelu.apply(x)
        return nn.functional.gelu(x)
