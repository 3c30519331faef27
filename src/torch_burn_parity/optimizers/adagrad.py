"""AdaGrad: torch.optim.Adagrad; Burn's AdaGrad (epsilon 1e-5 by default, PyTorch 1e-10)."""

from torch_burn_parity.optimizers.base import L2, Optimizer

# Burn's AdaGrad has no initial accumulator value: its sum starts at 0.
OPTIMIZER = Optimizer(
    name="adagrad",
    hyperparameters=("lr", "lr_decay", "eps", "weight_decay", "initial_accumulator_value"),
    torch_class="Adagrad",
    torch_defaults={
        "lr_decay": 0.0, "eps": 1e-10, "weight_decay": 0.0, "initial_accumulator_value": 0.0,
    },
    burn_defaults={
        "lr_decay": 0.0, "eps": 1e-5, "weight_decay": 0.0, "initial_accumulator_value": 0.0,
    },
    weight_decay=L2,
    burn_fixed={
        "initial_accumulator_value": (0.0, "Burn has no such setting: its sum starts at 0"),
    },
)  # fmt: skip
