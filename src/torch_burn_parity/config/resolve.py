"""Resolve one experiment of a config into the spec both trainers run, once.

    python -m torch_burn_parity.config.resolve config.yaml adam --out results/specs/adam.json

The spec is the experiment fully resolved: the optimizer and every hyperparameter (optional
ones filled in), what each framework will be asked for (`requested`: the value, or the
framework's own default where `keep_defaults` keeps it), the schedule with its keys in a
fixed order, the clipping, the Burn backend, the model, the probe steps and the run
settings. The PyTorch trainer takes it as it is, the Burn trainer deserializes it into typed
structs (rust/src/config.rs); neither checks the config again. The pipeline writes one per
experiment (results/specs/{experiment}.json) after the whole config was checked once.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from torch_burn_parity.config import cpu_path
from torch_burn_parity.config.data_problems import experiment_data
from torch_burn_parity.config.param_groups import group_experiment, group_problems, members
from torch_burn_parity.config.parity_config import (
    BOOLEAN_HYPERPARAMETERS,
    DEFAULT_BURN_BACKEND,
    DEFAULT_PROBE_STEPS,
    DEFAULT_SCHEDULE,
    FRAMEWORK_DEFAULTS,
    HYPERPARAMETERS,
    OPTIONAL_HYPERPARAMETERS,
    SCHEDULES,
    ConfigError,
    experiment_problems,
    load_config,
    run_problems,
)
from torch_burn_parity.config.problems import key_path
from torch_burn_parity.config.record import DEFAULT_BUDGET_MB, record_steps
from torch_burn_parity.config.spec import Group, PortDeclaration, Spec
from torch_burn_parity.io.parity_io import FRAMEWORKS, write_text_atomic
from torch_burn_parity.models.losses import DEFAULT_LOSS
from torch_burn_parity.models.model_specs import spec_of_config


def probe_steps_of(exp: dict[str, Any]) -> list[int]:
    """The steps of the layer record: the experiment's, with step 1, sorted."""
    return sorted({1, *exp.get("probe_steps", DEFAULT_PROBE_STEPS)})


def filled_schedule(exp: dict[str, Any]) -> dict[str, Any]:
    """The experiment's schedule, its keys in a fixed order; the constant one when absent."""
    schedule = exp.get("schedule", DEFAULT_SCHEDULE)
    return {"kind": schedule["kind"], **{k: schedule[k] for k in SCHEDULES[schedule["kind"]]}}


def experiment_spec(config: dict[str, Any], name: str) -> Spec:
    """The checked spec of experiment ``name``, every default filled in here and nowhere
    else: optimizer, hyperparameters (optional ones filled in), schedule (constant when
    absent), clip_grad (None when absent), burn_backend (flex when absent), run settings."""
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
    hyperparameters, keep = resolved_optimizer(f"experiments.{name}", exp)
    for key in ("steps", "batch_size"):
        if not isinstance(config.get(key), int) or config[key] <= 0:
            raise ConfigError(f"{key}: must be a positive integer, got {config.get(key)!r}")
    problems = run_problems(config) + experiment_problems(name, exp, config["steps"])
    if problems:
        raise ConfigError(str(problems[0]))
    model = spec_of_config(exp.get("model"))
    probe_steps = probe_steps_of(exp)
    # the steps whose tensors both trainers record (config/record.py)
    budget = config.get("record_budget_mb", DEFAULT_BUDGET_MB)
    recorded = record_steps(config["steps"], probe_steps, exp.get("record"), model, budget)[0]
    port = None
    if model.port is not None:
        # Your own port (models/port.py): what the Burn side checks your module against,
        # PyTorch's names and shapes in the weights file's order (the parameters, then the
        # buffers: running statistics), and the layers recorded.
        entries = lambda names: [{"name": n, "shape": model.state_shapes[n]} for n in names]  # noqa: E731
        port = PortDeclaration(model.name, entries(model.param_names),
                               entries(model.buffer_names), list(model.layers))  # fmt: skip
    return Spec(
        name=name,
        optimizer=optimizer,
        hyperparameters=hyperparameters,
        keep_defaults=keep,
        # What each framework will be asked for: the values, or its own defaults where kept.
        requested=requested_hyperparameters(optimizer, hyperparameters, keep),
        schedule=filled_schedule(exp),
        clip_grad=dict(exp["clip_grad"]) if exp.get("clip_grad") is not None else None,
        burn_backend=exp.get("burn_backend", DEFAULT_BURN_BACKEND),
        model=model.name,
        model_size=model.size,  # every size key, the defaults filled in
        data=experiment_data(exp),
        loss=exp.get("loss", DEFAULT_LOSS),
        label_smoothing=float(exp.get("label_smoothing", 0.0)),
        probe_steps=probe_steps,
        record_steps=recorded,
        steps=config["steps"],
        batch_size=config["batch_size"],
        threads=config.get("threads", 1),
        cpu_path=config.get("cpu_path", cpu_path.DEFAULT),
        param_groups=resolved_groups(name, exp),
        burn_fixes=list(exp.get("burn_fixes") or []),
        port=port,
    )


def resolved_optimizer(where: str, exp: dict[str, Any]) -> tuple[dict, dict]:
    """Every hyperparameter of an experiment's (or a group's) optimizer, optional ones filled
    in, and its keep_defaults per framework; ConfigError naming the first that is wrong."""
    optimizer = exp["optimizer"]
    optional = OPTIONAL_HYPERPARAMETERS.get(optimizer, {})
    for key in HYPERPARAMETERS[optimizer]:
        if key not in exp:
            if key in optional:
                continue
            raise ConfigError(f"{where}.{key}: missing hyperparameter for {optimizer}")
        value = exp[key]
        if isinstance(optional.get(key), str | list):
            continue  # Muon's ns_coefficients and adjust_lr_fn: checked by the schema
        values = value if key == "betas" else [value]
        boolean = key in BOOLEAN_HYPERPARAMETERS
        wanted = bool if boolean else (int, float)
        wrong = isinstance(value, bool) != boolean or not all(isinstance(v, wanted) for v in values)
        if wrong or (key == "betas" and len(values) != 2):
            kind = "true or false" if boolean else "two numbers" if key == "betas" else "a number"
            raise ConfigError(f"{where}.{key}: expected {kind}, got {value!r}")
    keep = exp.get("keep_defaults") or {}
    for framework, keys in keep.items():
        if framework not in FRAMEWORKS:
            raise ConfigError(f"{where}.keep_defaults: unknown framework {framework!r}")
        for key in keys:
            if key not in FRAMEWORK_DEFAULTS[framework][optimizer]:
                raise ConfigError(
                    f"{where}.keep_defaults.{framework}: {key!r} has no"
                    f" {framework} default for {optimizer}"
                )
    hyperparameters = {k: exp.get(k, optional.get(k)) for k in HYPERPARAMETERS[optimizer]}
    return hyperparameters, {f: list(keep.get(f, [])) for f in FRAMEWORKS}


def resolved_groups(name: str, exp: dict[str, Any]) -> list[Group]:
    """The experiment's parameter groups, each with its exact parameter names (model order),
    optimizer, every hyperparameter, keep_defaults and what each framework is asked for."""
    problems = group_problems(name, exp)
    if problems:
        path, message = problems[0]
        raise ConfigError(f"{key_path(path)}: {message}")
    groups = []
    listed = exp.get("param_groups") or []
    for i, (group, params) in enumerate(zip(listed, members(exp), strict=True)):
        grouped = group_experiment(exp, group)
        if grouped["optimizer"] not in HYPERPARAMETERS:
            raise ConfigError(
                f"experiments.{name}.param_groups[{i}].optimizer: unknown optimizer"
                f" {grouped['optimizer']!r} (known: {', '.join(HYPERPARAMETERS)})"
            )
        hyperparameters, keep = resolved_optimizer(f"experiments.{name}.param_groups[{i}]", grouped)
        requested = requested_hyperparameters(grouped["optimizer"], hyperparameters, keep)
        groups.append(Group(params, grouped["optimizer"], hyperparameters, keep, requested))
    return groups


def requested_hyperparameters(
    optimizer: str, hyperparameters: dict[str, Any], keep: dict[str, list[str]]
) -> dict[str, dict[str, Any]]:
    """What each framework is asked to use: the config's values, or its own defaults where
    kept."""
    requested = {}
    for framework in FRAMEWORKS:
        values = dict(hyperparameters)
        for key in keep[framework]:
            values[key] = FRAMEWORK_DEFAULTS[framework][optimizer][key]
        requested[framework] = values
    return requested


def read_spec(path: str | Path) -> Spec:
    """A resolved spec (experiment_spec's, as JSON), or ConfigError naming the file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: spec file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a spec ({exc})") from None
    return Spec.from_dict(data, str(path))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path, help="a config (config.yaml)")
    parser.add_argument("experiment", help="one of its experiments")
    parser.add_argument("--out", type=Path, help="the spec file (default: standard output)")
    args = parser.parse_args(argv)
    try:
        spec = experiment_spec(load_config(args.config), args.experiment)
    except ConfigError as exc:
        sys.exit(f"resolve: {exc}")
    text = json.dumps(spec.as_dict(), indent=2) + "\n"
    if args.out:
        write_text_atomic(args.out, text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
