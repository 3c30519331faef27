"""Each framework's gradient clipping, and Burn's BatchNorm running statistics, on f64
PyTorch tensors: what the replay's variants (replay.py) apply in place of PyTorch's own.

PyTorch clips all gradients by one norm (torch.nn.utils.clip_grad_norm_, + 1e-6) or each
value; Burn 0.22.1 clips each parameter tensor it holds by its own norm (a packed PyTorch
parameter is several Burn tensors). Burn's BatchNorm updates its running variance with the
biased batch variance, PyTorch's with the unbiased one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch

from torch_burn_parity.models.models import running_stat_layers

# The smallest positive normal f64, which Burn adds to a tensor's norm before dividing
# (grad_clipping/base.rs: `dtype().finfo().min_positive`, f64::MIN_POSITIVE for F64).
F64_MIN_POSITIVE = sys.float_info.min

Clipping = Callable[[list[torch.nn.Parameter]], None]  # clips each parameter's .grad


def burn_tensors(params: list[torch.nn.Parameter], parts: list[int]) -> list[torch.Tensor]:
    """The gradients as the tensors Burn holds: a packed parameter (PyTorch's in_proj_weight)
    is several Burn tensors, each a block of its rows (views, so clipping them clips it)."""
    return [g for p, k in zip(params, parts, strict=True) for g in p.grad.chunk(k, dim=0)]


# Burn's `meta.clip_scope` when its trainer clips by one norm itself (rust/src/by_hand.rs).
BY_HAND_SCOPE = "all parameters (one norm), by hand before Burn's step"


def burn_clipping(clip: dict | None, parts: list[int], scope: str | None = None) -> Clipping | None:
    """Burn's clipping (grad_clipping/base.rs), each of Burn's parameter tensors on its own
    (``parts``: how many tensors Burn holds each parameter as, in parameter order); with the
    Burn run's `scope` BY_HAND_SCOPE, the trainer's own clipping by one norm instead."""
    if not clip:
        return None
    if scope == BY_HAND_SCOPE:
        return by_hand_clipping(clip["norm"], parts)
    if "norm" in clip:
        threshold = clip["norm"]

        def clip_tensors(params: list[torch.nn.Parameter]) -> None:
            for g in burn_tensors(params, parts):
                norm = g.square().sum().sqrt()
                # `threshold / norm.add_scalar(min_positive)`: recip(), then mul_scalar
                # (burn-tensor numeric.rs:1008–1013); clamp_max(1.0); then mul.
                coef = ((norm + F64_MIN_POSITIVE).reciprocal() * threshold).clamp(max=1.0)
                g.mul_(coef)

    else:
        threshold = clip["value"]

        def clip_tensors(params: list[torch.nn.Parameter]) -> None:
            for g in burn_tensors(params, parts):
                # Both masks of the unclipped gradient, then mask_fill.
                above, below = g > threshold, g < -threshold
                g.masked_fill_(above, threshold).masked_fill_(below, -threshold)

    return clip_tensors


def by_hand_clipping(threshold: float, parts: list[int]) -> Clipping:
    """The clipping a porter writes in Burn (by_hand.rs `clip_by_global_norm`): the sum over
    Burn's tensors of Σ g², its square root + 1e-6, recip, × threshold, clamped to 1."""

    def clip_tensors(params: list[torch.nn.Parameter]) -> None:
        grads = burn_tensors(params, parts)
        total = torch.stack([(g * g).sum() for g in grads]).sum()
        coef = ((total.sqrt() + 1e-6).reciprocal() * threshold).clamp(max=1.0)
        for g in grads:
            g.mul_(coef)

    return clip_tensors


def torch_clipping(clip: dict | None) -> Clipping | None:
    """PyTorch's clipping, by its own functions, as train_torch.py calls them."""
    if not clip:
        return None
    if "norm" in clip:
        return lambda params: torch.nn.utils.clip_grad_norm_(params, clip["norm"])
    return lambda params: torch.nn.utils.clip_grad_value_(params, clip["value"])


# ---------------------------------------------------------------- running statistics


def burn_running_stats(
    x: torch.Tensor, running_mean: torch.Tensor, running_var: torch.Tensor, momentum: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Burn 0.22's running mean and variance after a train-mode batch norm of x [N, C, ...].

    burn-backend ModuleOps::batch_norm_train: mean and variance per channel over the batch
    and the positions, as `mean_dim` of the input with its first two dims swapped and
    reshaped to [C, N·L]; the variance of (x − mean)·(x − mean), biased (÷ N·L). burn-nn
    norm/batch.rs forward_train: `running.mul_scalar(1.0 − momentum).add(stat.mul_scalar(
    momentum))`, 1 − m in f64.
    """
    channels = x.shape[1]
    mean = x.transpose(0, 1).reshape(channels, -1).mean(1)
    centered = x - mean.reshape(1, channels, *[1] * (x.dim() - 2))
    variance = (centered * centered).transpose(0, 1).reshape(channels, -1).mean(1)
    keep = 1.0 - momentum
    return running_mean * keep + mean * momentum, running_var * keep + variance * momentum


@dataclass
class BurnRunningStats:
    """Burn's running-statistics update, with Burn's held momentum of each layer by name."""

    momentum: dict[str, float]

    def install(self, model: torch.nn.Module) -> Callable[[], None]:
        """Make the model's running statistics follow Burn's update: returns the function to
        call after each step's backward, which replaces what PyTorch's forward wrote."""
        layers = running_stat_layers(model)
        seen: dict[str, tuple] = {}

        def capture(name: str):
            def hook(layer, args) -> None:  # before PyTorch updates the buffers
                seen[name] = (args[0].detach(), layer.running_mean.clone(),
                              layer.running_var.clone())  # fmt: skip

            return hook

        for name, layer in layers.items():
            layer.register_forward_pre_hook(capture(name))

        def update() -> None:
            with torch.no_grad():
                for name, layer in layers.items():
                    x, mean, var = seen.pop(name)
                    mean, var = burn_running_stats(x, mean, var, self.momentum[name])
                    layer.running_mean.copy_(mean)
                    layer.running_var.copy_(var)

        return update


def burn_running_stats_of(burn_run: dict) -> BurnRunningStats | None:
    """Burn's running-statistics update as the Burn run held it (its layers' momentum), or
    None for a model without running statistics."""
    held = burn_run["meta"].get("layer_hyperparameters") or {}
    momentum = {k.removesuffix(".momentum"): v for k, v in held.items() if k.endswith(".momentum")}
    return BurnRunningStats(momentum) if momentum else None
