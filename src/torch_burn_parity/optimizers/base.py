"""One optimizer as both frameworks run it: what the config, the trainers and the config
diff need to know of it, declared once (PyTorch 2.15 and Burn 0.22.1 source).

Adding an optimizer: a module beside this one defining its `OPTIMIZER`, listed in
`REGISTRY` (optimizers/__init__.py); its builder in the Burn trainer (rust/src/train.rs);
and Burn's update rule in the replay (analysis/replay.py). docs/extending.md "Adding an optimizer".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# How an optimizer applies weight decay, the same in both frameworks.
L2 = "L2 (grad += wd·p)"
DECOUPLED = "decoupled (p ·= 1 − lr·wd)"
# Hyperparameters Burn 0.22.1 keeps as f32 (the config diff's `f32 storage`), of those an
# optimizer has; its lr, SGD dampening and AdaGrad lr_decay are f64, Muon's ns_steps a count.
BURN_F32 = frozenset({"betas", "eps", "weight_decay", "momentum", "alpha", "ns_coefficients"})
# "1 − β is exact in both for 0.5 ≤ β ≤ 1": an f32 subtraction that loses nothing there.
STERBENZ = "exact in both for 0.5 ≤ {0} ≤ 1 (Sterbenz): only {0}'s value counts"


@dataclass(frozen=True)
class Optimizer:
    """An optimizer's facts. A precision fact is a config-diff row: (quantity, how PyTorch
    computes it, how Burn does, status, note)."""

    name: str
    hyperparameters: tuple[str, ...]  # every one, in the order the runs record them
    torch_class: str  # its class in torch.optim
    # What each framework uses when it is not told; no lr (Burn has no default: it is
    # passed to every step).
    torch_defaults: dict[str, Any]
    burn_defaults: dict[str, Any]
    weight_decay: str  # L2 or DECOUPLED
    booleans: tuple[str, ...] = ()  # hyperparameters that are true or false
    # Hyperparameters an experiment may leave out, and the value the spec then carries.
    optional: dict[str, Any] = field(default_factory=dict)
    # Hyperparameters Burn has no setting for: (the value it always uses, why).
    burn_fixed: dict[str, tuple[Any, str]] = field(default_factory=dict)
    # Only 2-D parameters (Muon): anything else is refused before any job.
    matrices_only: bool = False
    # Numbers its update computes from the hyperparameters at another precision in Burn.
    precision_facts: tuple[tuple[str, str, str, str, str], ...] = ()

    @property
    def burn_f32(self) -> frozenset[str]:
        """Its hyperparameters Burn holds as f32."""
        return BURN_F32 & set(self.hyperparameters)

    def defaults(self, framework: str) -> dict[str, Any]:
        return {"torch": self.torch_defaults, "burn": self.burn_defaults}[framework]
