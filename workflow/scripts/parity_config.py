"""The experiment configuration shared by the trainers and the analyses.

An experiment names its optimizer and every hyperparameter of it. Both trainers pass each
one to their framework explicitly, except the ones an experiment lists under
``keep_defaults`` for a framework: that framework then keeps its own default, and the run's
``meta`` records the value it actually used. Both trainers refuse an experiment with an
unknown optimizer or a missing hyperparameter, naming it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

FRAMEWORKS = ("torch", "burn")
DTYPES = ("f32", "f64")

# Every hyperparameter each optimizer needs, in the order runs record them.
HYPERPARAMETERS = {
    "sgd": ("lr", "momentum", "dampening", "weight_decay", "nesterov"),
    "adam": ("lr", "betas", "eps", "weight_decay"),
}

# What each framework uses when it is not told (PyTorch 2.x and Burn 0.22 source).
# Burn's SGD has no momentum unless given a MomentumConfig, whose dampening defaults to 0.1;
# Burn's AdamConfig defaults epsilon to 1e-5 where PyTorch uses 1e-8.
FRAMEWORK_DEFAULTS = {
    "torch": {
        "sgd": {"momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False},
        "adam": {"betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0},
    },
    "burn": {
        "sgd": {"momentum": 0.0, "dampening": 0.1, "weight_decay": 0.0, "nesterov": False},
        "adam": {"betas": [0.9, 0.999], "eps": 1e-5, "weight_decay": 0.0},
    },
}


class ConfigError(ValueError):
    """An experiment the trainers cannot run as written."""


def load_config(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    # JSON is read as JSON: PyYAML (YAML 1.1) would take a number like 1e-08 for a string.
    try:
        text = path.read_text(encoding="utf-8")
        config = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not valid {path.suffix.lstrip('.').upper()} ({exc})") from exc
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return config


def experiment_spec(config: dict[str, Any], name: str) -> dict[str, Any]:
    """The checked spec of experiment ``name``: optimizer, hyperparameters, run settings."""
    experiments = config.get("experiments") or {}
    if name not in experiments:
        raise ConfigError(f"unknown experiment {name!r} (config has {sorted(experiments)})")
    exp = experiments[name]
    optimizer = exp.get("optimizer")
    if optimizer not in HYPERPARAMETERS:
        raise ConfigError(
            f"experiments.{name}.optimizer: unknown optimizer {optimizer!r}"
            f" (known: {', '.join(HYPERPARAMETERS)})"
        )
    for key in HYPERPARAMETERS[optimizer]:
        if key not in exp:
            raise ConfigError(f"experiments.{name}.{key}: missing hyperparameter for {optimizer}")
        value = exp[key]
        values = value if key == "betas" else [value]
        wanted = bool if key == "nesterov" else (int, float)
        wrong = isinstance(value, bool) != (key == "nesterov") or not all(
            isinstance(v, wanted) for v in values
        )
        if wrong or (key == "betas" and len(values) != 2):
            kind = (
                "true or false"
                if key == "nesterov"
                else "two numbers"
                if key == "betas"
                else "a number"
            )
            raise ConfigError(f"experiments.{name}.{key}: expected {kind}, got {value!r}")
    keep = exp.get("keep_defaults") or {}
    for framework, keys in keep.items():
        if framework not in FRAMEWORKS:
            raise ConfigError(f"experiments.{name}.keep_defaults: unknown framework {framework!r}")
        for key in keys:
            if key not in FRAMEWORK_DEFAULTS[framework][optimizer]:
                raise ConfigError(
                    f"experiments.{name}.keep_defaults.{framework}: {key!r} has no"
                    f" {framework} default for {optimizer}"
                )
    for key in ("steps", "batch_size"):
        if not isinstance(config.get(key), int) or config[key] <= 0:
            raise ConfigError(f"{key}: must be a positive integer, got {config.get(key)!r}")
    return {
        "name": name,
        "optimizer": optimizer,
        "hyperparameters": {k: exp[k] for k in HYPERPARAMETERS[optimizer]},
        "keep_defaults": {f: list(keep.get(f, [])) for f in FRAMEWORKS},
        "steps": config["steps"],
        "batch_size": config["batch_size"],
        "threads": config.get("threads", 1),
    }


def requested_hyperparameters(spec: dict[str, Any], framework: str) -> dict[str, Any]:
    """What ``framework`` is asked to use: the config's values, or its own defaults where kept."""
    values = dict(spec["hyperparameters"])
    for key in spec["keep_defaults"][framework]:
        values[key] = FRAMEWORK_DEFAULTS[framework][spec["optimizer"]][key]
    return values
