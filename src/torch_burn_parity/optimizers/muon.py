"""Muon: torch.optim.Muon; Burn's Muon (burn-optim 0.22.1 muon.rs). Both apply it to 2-D
parameters only, so an experiment runs it in a parameter group beside another optimizer.

What differs beyond the values (each measured by a replay variant of its own, replay.py):
PyTorch orthogonalises in bfloat16 whatever the parameter's dtype (_muon.py
`_zeropower_via_newtonschulz`: `grad.to(dtype=torch.bfloat16)`), Burn in the tensor's own
dtype; PyTorch's momentum buffer is an average (`buf.lerp_(grad, 1 − μ)`), Burn's a sum
(momentum.rs: `velocity = μ·velocity + grad`), the same direction after the normalisation
Newton–Schulz starts with; and the learning-rate adjustment reads the parameter's shape
[A, B] — PyTorch's Linear weight is [out, in], Burn's [in, out] — so "original"'s
sqrt(max(1, A/B)) is another number for a non-square Linear weight.
"""

import math

from torch_burn_parity.optimizers.base import DECOUPLED, Optimizer

# Keller Jordan's quintic coefficients, PyTorch's and Burn's default alike.
NS_COEFFICIENTS = [3.4445, -4.775, 2.0315]
ADJUST_LR_FNS = ("original", "match_rms_adamw")  # Burn 0.22.1 has no spectral_unclamped
SHARED = {"ns_coefficients": NS_COEFFICIENTS, "eps": 1e-7, "ns_steps": 5,
          "adjust_lr_fn": "original"}  # fmt: skip

OPTIMIZER = Optimizer(
    name="muon",
    hyperparameters=("lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps",
                     "ns_steps", "adjust_lr_fn"),
    torch_class="Muon",
    torch_defaults={"weight_decay": 0.1, "momentum": 0.95, "nesterov": True, **SHARED},
    # Burn's MuonConfig: no weight decay unless given one; MomentumConfig {0.95, 0, true}.
    burn_defaults={"weight_decay": 0.0, "momentum": 0.95, "nesterov": True, **SHARED},
    weight_decay=DECOUPLED,
    booleans=("nesterov",),
    # The Newton–Schulz settings may be left out: both frameworks' defaults, filled in.
    optional=dict(SHARED),
    matrices_only=True,
    precision_facts=(
        ("Newton–Schulz dtype", "bfloat16", "the tensor's dtype", "differs",
         "PyTorch casts the update to bfloat16 before orthogonalising it (_muon.py);"
         " measured apart by the replay"),
        ("momentum buffer", "average: μ·buf + (1 − μ)·g", "sum: μ·v + g", "same",
         "a factor (1 − μ) apart, which the normalisation before Newton–Schulz removes"),
    ),
)  # fmt: skip

# The lr adjustments both frameworks have (PyTorch's _adjust_lr, Burn's AdjustLrFn): the
# factor for a matrix of shape [A, B], in f64 in both.
ADJUST = {
    "original": lambda a, b: math.sqrt(max(1.0, a / b)),
    "match_rms_adamw": lambda a, b: 0.2 * math.sqrt(max(a, b)),
}


def ratio(adjust_lr_fn: str, shape: list[int]) -> float:
    """The lr factor of ``adjust_lr_fn`` for a matrix of ``shape``."""
    return ADJUST[adjust_lr_fn](float(shape[0]), float(shape[1]))
