"""Adam: torch.optim.Adam; Burn's Adam (epsilon 1e-5 by default, PyTorch 1e-8)."""

from torch_burn_parity.optimizers.base import L2, STERBENZ, Optimizer

ONE_MINUS_BETA = ("1 − β in moment updates", "f64", "f32", "precision", STERBENZ.format("β"))

OPTIMIZER = Optimizer(
    name="adam",
    hyperparameters=("lr", "betas", "eps", "weight_decay", "amsgrad"),
    torch_class="Adam",
    torch_defaults={"betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0, "amsgrad": False},
    burn_defaults={"betas": [0.9, 0.999], "eps": 1e-5, "weight_decay": 0.0, "amsgrad": False},
    weight_decay=L2,
    booleans=("amsgrad",),
    # amsgrad came after the first configs were written: absent means PyTorch's default.
    optional={"amsgrad": False},
    precision_facts=(
        ("bias-correction factors", "f64 (Python floats)", "f32", "precision",
         "sqrt(1-β₂^t)/(1-β₁^t) and ε·sqrt(1-β₂^t)"),
        ONE_MINUS_BETA,
    ),
)  # fmt: skip
