"""The square root Burn's attention divides its scores by, on the PyTorch side: the
replay's and the counterfactual's stand-in for a setting no config reaches
(layer_settings.py, `{layer}.sqrt_d_k`).

burn-nn 0.22.1's MultiHeadAttention divides q·kᵀ by `(self.d_k as f32).sqrt()`
(src/modules/attention/mha.rs line 290): the f32 square root, also in an f64 run, where
PyTorch's nn.MultiheadAttention scales by 1/√d_k in the run's dtype. They are the same
where √d_k is exact in f32 (d_k 4, 16, 64, …); elsewhere the scores differ by the f32
rounding of √d_k, about 1e-8 of their size.

nn.MultiheadAttention's training forward (F.multi_head_attention_forward, need_weights
False) calls torch.nn.functional.scaled_dot_product_attention; hooks on the module put
Burn's order of operations in its place for the module's own forward only (so that its
parameters keep their names and every other attention its own computation): q·kᵀ divided
by the held square root, the mask added (PyTorch's canonical mask: 0 or −inf; Burn fills
−1e4, which gives the same weights bit for bit while the scores stay far above it), the
softmax, the weights times v (mha.rs lines 287–323).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

_SDPA = F.scaled_dot_product_attention


def burn_scores(divisor: float):
    """scaled_dot_product_attention as Burn's MultiHeadAttention computes it."""

    def attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **_ignored):
        scores = torch.matmul(q, k.transpose(-2, -1)) / divisor
        if attn_mask is not None:
            scores = (
                scores.masked_fill(attn_mask, float("-inf"))
                if attn_mask.dtype == torch.bool
                else scores + attn_mask
            )
        if is_causal:
            t = scores.shape[-1]
            causal = torch.ones(t, t, dtype=torch.bool, device=scores.device).triu(1)
            scores = scores.masked_fill(causal, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if dropout_p:
            weights = F.dropout(weights, dropout_p)
        return torch.matmul(weights, v)

    return attention


def divide_scores_by(attention: nn.MultiheadAttention, divisor: float) -> None:
    """Make `attention` divide its scores by `divisor` (Burn's held √d_k) in Burn's order
    instead of scaling them by 1/√d_k."""
    if not isinstance(attention, nn.MultiheadAttention):
        raise AttributeError(f"{type(attention).__name__} has no setting 'sqrt_d_k'")

    def burns(_module, _args, _kwargs) -> None:
        F.scaled_dot_product_attention = burn_scores(divisor)

    def restored(_module, _args, _kwargs, _out) -> None:
        F.scaled_dot_product_attention = _SDPA

    attention.register_forward_pre_hook(burns, with_kwargs=True)
    attention.register_forward_hook(restored, with_kwargs=True, always_call=True)
