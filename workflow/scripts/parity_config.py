"""The experiment configuration shared by the trainers and the analyses.

An experiment names its optimizer and every hyperparameter of it. Both trainers pass each
one to their framework explicitly, except the ones an experiment lists under
``keep_defaults`` for a framework: that framework then keeps its own default, and the run's
``meta`` records the value it actually used. Both trainers refuse an experiment with an
unknown optimizer or a missing hyperparameter, naming it.

The semantic checks below (``semantic_problems``) find what the config's JSON schema cannot
express and a trainer would crash on: a batch larger than the dataset, Nesterov momentum
PyTorch refuses, a probe index outside its parameter. The pipeline runs them, with the
schema, before any job (workflow/scripts/check_config.py).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from make_data import N as DATASET_SIZE
from make_data import initial_weights

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


# The shape of every model parameter, from the dataset's initial weights.
PARAMETER_SHAPES = {name: shape for name, (shape, _) in initial_weights().items()}


class ConfigError(ValueError):
    """An experiment the trainers cannot run as written."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config, at a key path such as ('experiments', 'adam', 'lr')."""

    path: tuple[str | int, ...]
    message: str

    def __str__(self) -> str:
        return f"{key_path(self.path)}: {self.message}"


def key_path(path: tuple[str | int, ...]) -> str:
    """('experiments', 'adam', 'betas', 1) -> 'experiments.adam.betas[1]'."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "(top level)"


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def run_problems(config: dict[str, Any]) -> list[Problem]:
    """Run settings a trainer would crash on: a batch larger than the dataset."""
    batch = config.get("batch_size")
    if _integer(batch) and batch > DATASET_SIZE:
        return [
            Problem(("batch_size",), f"{batch} is larger than the dataset ({DATASET_SIZE} samples)")
        ]
    return []


def probe_problem(text: str) -> str | None:
    """What is wrong with a probe such as 'fc.weight[1,19]' (or its flat form 'fc.weight[67]')."""
    match = re.fullmatch(r"([\w.]+)\[(\d+(?:, ?\d+)*)\]", text)
    if not match:
        return f"{text!r} is not a parameter index like 'fc.weight[1,19]'"
    name = match.group(1)
    if name not in PARAMETER_SHAPES:
        return f"{text!r} names no parameter (known: {', '.join(PARAMETER_SHAPES)})"
    shape = PARAMETER_SHAPES[name]
    index = [int(i) for i in match.group(2).split(",")]
    shown = f"{name} has shape [{', '.join(map(str, shape))}]"
    if len(index) == 1:  # a flat index, as probe.py takes it
        bounds = [math.prod(shape)]
    elif len(index) == len(shape):
        bounds = shape
    else:
        return f"{text!r} has {len(index)} indices; {shown}"
    if any(i >= n for i, n in zip(index, bounds, strict=True)):
        return f"{text!r} is out of range; {shown}"
    return None


def keep_default_problems(at: tuple, exp: dict[str, Any], optimizer: str) -> list[Problem]:
    """keep_defaults naming a framework or hyperparameter that has no default to keep."""
    keep = exp.get("keep_defaults")
    if not isinstance(keep, dict):
        return []
    problems = []
    for framework, keys in keep.items():
        if framework not in FRAMEWORKS:
            problems.append(
                Problem(
                    (*at, "keep_defaults", framework),
                    f"unknown framework (known: {', '.join(FRAMEWORKS)})",
                )
            )
            continue
        defaults = FRAMEWORK_DEFAULTS[framework][optimizer]
        for i, key in enumerate(keys if isinstance(keys, list) else []):
            if key in defaults:
                continue
            what = (
                f"has no {framework} default for {optimizer}"
                if key in HYPERPARAMETERS[optimizer]
                else f"is not a hyperparameter of {optimizer}"
            )
            problems.append(
                Problem(
                    (*at, "keep_defaults", framework, i),
                    f"{key!r} {what} (it can keep: {', '.join(defaults)})",
                )
            )
    return problems


def nesterov_problems(at: tuple, exp: dict[str, Any]) -> list[Problem]:
    """PyTorch refuses Nesterov momentum without a momentum or with a dampening."""
    kept = (exp.get("keep_defaults") or {}).get("torch") or []
    if not isinstance(kept, list):
        return []
    held = {
        key: FRAMEWORK_DEFAULTS["torch"]["sgd"][key] if key in kept else exp.get(key)
        for key in ("momentum", "dampening", "nesterov")
    }
    momentum, dampening = held["momentum"], held["dampening"]
    if held["nesterov"] is not True or not (_number(momentum) and _number(dampening)):
        return []
    why = []
    if momentum <= 0:
        why.append(f"momentum is {momentum}")
    if dampening != 0:
        why.append(f"dampening is {dampening}")
    if not why:
        return []
    if set(kept) & {"momentum", "dampening"}:
        why[-1] += " (PyTorch's default, kept)"
    return [
        Problem(
            (*at, "nesterov"),
            f"true needs momentum > 0 and dampening 0, or PyTorch refuses it; {' and '.join(why)}",
        )
    ]


def experiment_problems(name: str, exp: Any) -> list[Problem]:
    """What the schema cannot see in one experiment and a trainer would crash on."""
    if not isinstance(exp, dict):
        return []
    at = ("experiments", name)
    problems = []
    optimizer = exp.get("optimizer")
    if optimizer in HYPERPARAMETERS:
        problems += keep_default_problems(at, exp, optimizer)
    if optimizer == "sgd":
        problems += nesterov_problems(at, exp)
    probe = exp.get("probe")
    if isinstance(probe, str) and (message := probe_problem(probe)):
        problems.append(Problem((*at, "probe"), message))
    return problems


def semantic_problems(config: dict[str, Any]) -> list[Problem]:
    """Every problem beyond the schema's bounds; values of the wrong type are skipped (the
    schema names those)."""
    problems = run_problems(config)
    experiments = config.get("experiments")
    if isinstance(experiments, dict):
        for name, exp in experiments.items():
            problems += experiment_problems(name, exp)
    return problems


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
    problems = run_problems(config) + experiment_problems(name, exp)
    if problems:
        raise ConfigError(str(problems[0]))
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
