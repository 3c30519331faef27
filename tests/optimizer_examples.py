"""Experiments of the optimizers added after SGD and Adam, every hyperparameter given (the
tests' counterparts of conftest's SGD and ADAM)."""

from __future__ import annotations

ADAMW = {"optimizer": "adamw", "lr": 0.01, "betas": [0.9, 0.999], "eps": 1e-8,
         "weight_decay": 0.01, "amsgrad": False}  # fmt: skip
ADAGRAD = {"optimizer": "adagrad", "lr": 0.05, "lr_decay": 0.0, "eps": 1e-10,
           "weight_decay": 0.0, "initial_accumulator_value": 0.0}  # fmt: skip
RMSPROP = {"optimizer": "rmsprop", "lr": 0.01, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0,
           "momentum": 0.0, "centered": False}  # fmt: skip
NEW_OPTIMIZERS = {"adamw": ADAMW, "adagrad": ADAGRAD, "rmsprop": RMSPROP}
