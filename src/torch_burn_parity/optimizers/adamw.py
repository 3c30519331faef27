"""AdamW: torch.optim.AdamW; Burn's AdamW (weight decay 1e-4 by default, PyTorch 1e-2)."""

from torch_burn_parity.optimizers.adam import ONE_MINUS_BETA
from torch_burn_parity.optimizers.base import DECOUPLED, Optimizer

OPTIMIZER = Optimizer(
    name="adamw",
    hyperparameters=("lr", "betas", "eps", "weight_decay", "amsgrad"),
    torch_class="AdamW",
    torch_defaults={"betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 1e-2, "amsgrad": False},
    burn_defaults={"betas": [0.9, 0.999], "eps": 1e-5, "weight_decay": 1e-4, "amsgrad": False},
    weight_decay=DECOUPLED,
    booleans=("amsgrad",),
    precision_facts=(
        ("bias-correction factors", "f64 (Python floats)", "f32", "precision",
         "1-β₁^t dividing m and 1-β₂^t dividing v"),
        ONE_MINUS_BETA,
    ),
)  # fmt: skip
