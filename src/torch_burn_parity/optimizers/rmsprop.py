"""RMSProp: torch.optim.RMSprop; Burn's RmsProp (epsilon 1e-5, momentum 0.9 by default)."""

from torch_burn_parity.optimizers.base import L2, STERBENZ, Optimizer

OPTIMIZER = Optimizer(
    name="rmsprop",
    hyperparameters=("lr", "alpha", "eps", "weight_decay", "momentum", "centered"),
    torch_class="RMSprop",
    torch_defaults={
        "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0, "momentum": 0.0, "centered": False,
    },
    burn_defaults={
        "alpha": 0.99, "eps": 1e-5, "weight_decay": 0.0, "momentum": 0.9, "centered": False,
    },
    weight_decay=L2,
    booleans=("centered",),
    precision_facts=(
        ("1 − α in the square average", "f64", "f32", "precision", STERBENZ.format("α")),
    ),
)  # fmt: skip
