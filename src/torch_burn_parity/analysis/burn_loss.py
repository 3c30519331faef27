"""Burn 0.22's cross-entropy with label smoothing, on f64 PyTorch tensors: what the replay
runs in place of PyTorch's loss when it follows Burn.

burn-nn 0.22.1 src/loss/cross_entropy.rs holds the smoothing α as an f32 (lines 38, 88) and
builds the targets q = one-hot·(1 − α) + α/C (compute_smoothed_targets, lines 202–216) with
`1 − α` and `α/C` computed in f32, then widened to the run's float dtype; the loss is
−mean over rows of Σ_c q_c·log_softmax(logits)_c (forward_smoothed, lines 138–169, 233).
The two f32 weights do not add up to 1 over the classes (ε = 0.1, 10 classes: 1 − 2.6e-8),
so even in f64 Burn's smoothed loss is not PyTorch's (1 − ε)·(−log p_y) + ε·mean_c(−log p_c).
Without smoothing Burn takes its plain path, the same quantity as PyTorch's.
"""

from __future__ import annotations

import numpy as np
import torch

from torch_burn_parity.models.models import loss as torch_loss


def burn_targets(labels: torch.Tensor, classes: int, alpha: float, dtype) -> torch.Tensor:
    """Burn's smoothed targets [rows, classes]: one-hot·f32(1 − α) + f32(α/C)."""
    a = np.float32(alpha)
    keep = float(np.float32(1) - a)
    spread = float(a / np.float32(classes))
    onehot = torch.nn.functional.one_hot(labels, classes).to(dtype)
    return onehot * keep + spread


def burn_cross_entropy(out: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    """Burn's loss of logits ``out`` [rows, classes] against labels ``y`` (flattened to the
    rows) with smoothing ``alpha`` (as Burn holds it); PyTorch's plain loss without."""
    labels = y.reshape(-1)
    if alpha == 0:
        return torch_loss(out, labels)
    q = burn_targets(labels, out.shape[1], alpha, out.dtype)
    return -(torch.log_softmax(out, 1) * q).sum(1).mean()
