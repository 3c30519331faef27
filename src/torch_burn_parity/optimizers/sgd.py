"""SGD: torch.optim.SGD; Burn's Sgd, with a MomentumConfig when momentum is on."""

from torch_burn_parity.optimizers.base import L2, Optimizer

# Burn's SGD has no momentum unless given a MomentumConfig, whose dampening defaults to 0.1.
OPTIMIZER = Optimizer(
    name="sgd",
    hyperparameters=("lr", "momentum", "dampening", "weight_decay", "nesterov"),
    torch_class="SGD",
    torch_defaults={"momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False},
    burn_defaults={"momentum": 0.0, "dampening": 0.1, "weight_decay": 0.0, "nesterov": False},
    weight_decay=L2,
    booleans=("nesterov",),
)
