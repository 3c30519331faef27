"""Check a config before any job runs: one line per problem, each naming its key path.

The bounds come from the JSON schema (config.schema.yaml, beside this module): every error it
finds becomes one readable line, an unknown key is named as unknown with the closest known
key. The rest comes from parity_config's semantic checks: what the schema cannot express and
a trainer would crash on. The Snakefile calls ``check_config(config, ...)`` before any rule,
which also fills in the schema's defaults as Snakemake's ``validate`` does. By hand:

    python -m torch_burn_parity.config.check_config config.yaml
"""

from __future__ import annotations

import argparse
import copy
import functools
import math
import os
import sys
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, ValidationError, validators

from torch_burn_parity.config.param_groups import group_experiment
from torch_burn_parity.config.parity_config import (
    HYPERPARAMETERS,
    ConfigError,
    Problem,
    load_config,
    semantic_problems,
)
from torch_burn_parity.config.sweeps import SweepError, expand_all
from torch_burn_parity.suggest import closest_key

SCHEMA = Path(__file__).with_name("config.schema.yaml")
# Experiment keys a sweep axis may not vary: a schedule and clipping are mappings of their own.
UNSWEPT_KEYS = ("schedule", "clip_grad", "param_groups")

TYPE_NAMES = {
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "string": "a string",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}

Path_ = tuple[str | int, ...]


def _is_integer(_checker, value: Any) -> bool:
    # Not 16.0: the trainers slice and count with it (jsonschema takes 16.0 as an integer).
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(_checker, value: Any) -> bool:
    # Not NaN or ±inf: the specs reach Burn as JSON, which has no such numbers.
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


@functools.cache
def validator_class(fill_defaults: bool = True) -> type:
    """Draft 2020-12 with strict integers and finite numbers, filling in the schema's
    ``default``s as it goes (as Snakemake's ``validate`` does)."""
    checker = Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}
    )
    strict = validators.extend(Draft202012Validator, type_checker=checker)
    if not fill_defaults:
        return strict
    validate_properties = strict.VALIDATORS["properties"]

    def properties_with_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if isinstance(subschema, dict) and "default" in subschema:
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from validate_properties(validator, properties, instance, schema)

    return validators.extend(strict, {"properties": properties_with_defaults})


def load_schema(path: str | Path = SCHEMA) -> dict[str, Any]:
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


# --- how values and keys are shown ----------------------------------------------------------


def show(value: Any) -> str:
    """A value as the config would spell it, on one short line."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, list):
        text = "[" + ", ".join(show(v) for v in value) + "]"
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{k}: {show(v)}" for k, v in value.items()) + "}"
    else:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _bounds(schema: dict[str, Any], name: str) -> str:
    """'0 ≤ momentum < 1', 'lr > 0', 'steps ≥ 1' from a subschema's bounds."""
    low = (
        f"{show(schema['minimum'])} ≤ "
        if "minimum" in schema
        else f"{show(schema['exclusiveMinimum'])} < "
        if "exclusiveMinimum" in schema
        else ""
    )
    high = (
        f" ≤ {show(schema['maximum'])}"
        if "maximum" in schema
        else f" < {show(schema['exclusiveMaximum'])}"
        if "exclusiveMaximum" in schema
        else ""
    )
    if low and not high:  # 'lr > 0' reads better than '0 < lr'
        return f"{name} {'≥' if 'minimum' in schema else '>'} {low.split()[0]}"
    return f"{low}{name}{high}"


def _name(path: Path_) -> str:
    """The last key of a path, with its list index: 'betas[1]', 'lr'."""
    if path and isinstance(path[-1], int):
        return f"{_name(path[:-1])}[{path[-1]}]"
    return str(path[-1]) if path else "config"


def _optimizer(config: Any, path: Path_) -> str | None:
    """The optimizer of the experiment at or above `path`, if it names a known one."""
    if len(path) >= 2 and path[0] == "experiments" and isinstance(config, dict):
        exp = (config.get("experiments") or {}).get(path[1])
        if isinstance(exp, dict) and exp.get("optimizer") in HYPERPARAMETERS:
            return exp["optimizer"]
    return None


def _is_experiment(path: Path_) -> bool:
    return len(path) == 2 and path[0] == "experiments"


# --- unknown keys ---------------------------------------------------------------------------


def _resolve(root: dict[str, Any], schema: Any) -> Any:
    """Follow a local $ref ('#/$defs/experiment')."""
    while isinstance(schema, dict) and str(schema.get("$ref", "")).startswith("#/"):
        target: Any = root
        for part in schema["$ref"][2:].split("/"):
            target = target[part]
        schema = target
    return schema


def known_keys(validator, root: dict[str, Any], schema: Any, instance: Any) -> list[str]:
    """Every key `schema` defines for `instance`, including those of the conditional branches
    that apply to it (those of every branch when none applies, e.g. an unknown optimizer)."""
    schema = _resolve(root, schema)
    if not isinstance(schema, dict):
        return []
    keys = list(schema.get("properties", {}))
    subschemas = [_resolve(root, s) for k in ("allOf", "anyOf", "oneOf") for s in schema.get(k, [])]
    conditional = [s for s in [schema, *subschemas] if isinstance(s, dict) and "if" in s]
    for sub in subschemas:
        if sub not in conditional:
            keys += known_keys(validator, root, sub, instance)
    applies = [s for s in conditional if validator.evolve(schema=s["if"]).is_valid(instance)]
    for sub in applies or conditional:
        keys += known_keys(validator, root, sub.get("then", {}), instance)
        keys += known_keys(validator, root, sub.get("if", {}), instance)
    return list(dict.fromkeys(keys))


def _unknown(config: Any, path: Path_, key: str, known: list[str]) -> tuple[Problem, str | None]:
    optimizer = _optimizer(config, (*path, key))
    suggestion = closest_key(key, known)
    if _is_experiment(path) and optimizer and suggestion in (None, *HYPERPARAMETERS[optimizer]):
        noun = f"unknown hyperparameter of {optimizer}"
    elif path and path[-1] == "keep_defaults":
        noun = "unknown framework"
    elif path and path[-1] == "tolerance":
        noun = "unknown dtype"
    else:
        noun = "unknown key"
    others = [o for o, keys in HYPERPARAMETERS.items() if key in keys and o != optimizer]
    if _is_experiment(path) and optimizer and others and suggestion is None:
        message = f"{noun} ({key} is a hyperparameter of {', '.join(others)})"
    elif suggestion:
        message = f"{noun}; did you mean {suggestion!r}?"
    else:
        message = f"{noun} (known: {', '.join(known)})"
    return Problem((*path, key), message), suggestion


# --- one error, one line --------------------------------------------------------------------


def _missing(config: Any, path: Path_, key: str, schema: dict[str, Any]) -> Problem:
    optimizer = _optimizer(config, (*path, key))
    if _is_experiment(path) and optimizer and key in HYPERPARAMETERS[optimizer]:
        return Problem((*path, key), f"missing hyperparameter of {optimizer}")
    choices = schema.get("properties", {}).get(key, {})
    if isinstance(choices, dict) and "enum" in choices:
        return Problem((*path, key), f"missing (one of: {', '.join(map(str, choices['enum']))})")
    return Problem((*path, key), "missing")


def _line(error: ValidationError, config: Any) -> Problem | None:
    path: Path_ = tuple(error.absolute_path)
    value, schema, kind = error.instance, error.schema, error.validator
    name = _name(path)
    if "propertyNames" in error.relative_schema_path:
        if kind == "type":
            return Problem((*path, value), f"name {show(value)} is not a string")
        what = f" ({schema['description']})" if "description" in schema else ""
        return Problem((*path, value), f"name {value!r} does not match {schema['pattern']}{what}")
    if kind == "type":
        wanted = error.validator_value
        wanted = [wanted] if isinstance(wanted, str) else wanted
        if isinstance(value, float) and not math.isfinite(value) and "number" in wanted:
            return Problem(path, f"{show(value)} is not a finite number")
        message = f"expected {' or '.join(TYPE_NAMES.get(t, t) for t in wanted)}, got {show(value)}"
        if isinstance(value, str) and "number" in wanted:
            try:
                float(value)
                message += " (write floats with a dot, 1.0e-8: YAML reads 1e-8 as a string)"
            except ValueError:
                pass
        return Problem(path, message)
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        return Problem(path, f"{show(value)} is out of range ({_bounds(schema, name)})")
    if kind == "enum":
        options = error.validator_value
        if path and path[-1] == "optimizer":
            message = f"unknown optimizer {show(value)} (known: {', '.join(options)})"
        else:
            message = f"{show(value)} is not one of: {', '.join(map(str, options))}"
        suggestion = closest_key(value, list(options)) if isinstance(value, str) else None
        return Problem(path, message + (f"; did you mean {suggestion!r}?" if suggestion else ""))
    if kind in ("minItems", "maxItems"):
        low, high = schema.get("minItems"), schema.get("maxItems")
        count = "exactly" if low == high else "at least" if kind == "minItems" else "at most"
        n = error.validator_value
        return Problem(path, f"expected {count} {n} item{'s' if n != 1 else ''}, got {len(value)}")
    if kind == "minProperties":
        return Problem(path, f"expected at least {error.validator_value} entry, got none")
    if kind == "maxProperties":
        n = error.validator_value
        entries = "entries" if n != 1 else "entry"
        return Problem(path, f"expected at most {n} {entries}, got {len(value)}")
    if kind == "pattern":
        what = schema.get("description") or f"matching {error.validator_value}"
        return Problem(path, f"{show(value)} is not of the expected form ({what})")
    if kind == "uniqueItems":
        return Problem(path, f"{show(value)} lists an item twice")
    if kind == "const":
        return Problem(path, f"expected {show(error.validator_value)}, got {show(value)}")
    if kind == "anyOf" and all(set(s) == {"required"} for s in error.validator_value):
        # "a config has experiments, sweeps or both": none of the keys is there
        keys = [key for s in error.validator_value for key in s["required"]]
        return Problem((*path, keys[0]), f"missing (give {' or '.join(keys)}, or both)")
    message = " ".join(error.message.split())
    return Problem(path, message if len(message) <= 100 else message[:97] + "...")


def schema_problems(
    config: Any, schema: dict[str, Any], fill_defaults: bool = True
) -> list[Problem]:
    """Every error of the JSON schema, one Problem each; unknown keys named with the closest
    known key. Fills in the schema's defaults unless told not to."""
    validator = validator_class(fill_defaults)(schema)
    errors = list(validator.iter_errors(config))
    problems: list[Problem] = []
    suggested: dict[Path_, set[str]] = {}
    for error in errors:
        if error.validator in ("additionalProperties", "unevaluatedProperties"):
            path = tuple(error.absolute_path)
            known = known_keys(validator, schema, error.schema, error.instance)
            for key in error.instance:
                if key not in known:
                    problem, suggestion = _unknown(config, path, key, known)
                    problems.append(problem)
                    suggested.setdefault(path, set()).add(suggestion)
    for error in errors:
        if error.validator in ("additionalProperties", "unevaluatedProperties"):
            continue
        if error.validator == "required":
            path = tuple(error.absolute_path)
            for key in error.validator_value:
                # An unknown key that suggests the missing one says it already.
                if key not in error.instance and key not in suggested.get(path, ()):
                    problems.append(_missing(config, path, key, error.schema))
            continue
        problem = _line(error, config)
        if problem:
            problems.append(problem)
    return list(dict.fromkeys(problems))


def _position(config: Any, path: Path_) -> list[int]:
    """Where `path` sits in the config (document order; missing keys last in their mapping)."""
    position, node = [], config
    for part in path:
        if isinstance(node, dict):
            keys = list(node)
            position.append(keys.index(part) if part in node else len(keys))
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int):
            position.append(part)
            node = node[part] if part < len(node) else None
        else:
            position.append(0)
            node = None
    return position


def group_schema_problems(config: dict[str, Any], schema: dict[str, Any]) -> list[Problem]:
    """Each parameter group checked by the schema as the experiment it amounts to
    (param_groups.group_experiment), its problems named at the group: those of keys the group
    gives, or a hyperparameter its own optimizer needs and it leaves out."""
    experiments = config.get("experiments")
    trials, owner = {}, {}
    for name, exp in (experiments if isinstance(experiments, dict) else {}).items():
        groups = exp.get("param_groups") if isinstance(exp, dict) else None
        for i, group in enumerate(groups if isinstance(groups, list) else []):
            if isinstance(group, dict):
                trials[f"{name}__group{i}"] = group_experiment(exp, group)
                owner[f"{name}__group{i}"] = (name, i, group)
    if not trials:
        return []
    trial = {k: config[k] for k in ("steps", "batch_size") if k in config}
    found = []
    for p in schema_problems({**trial, "experiments": trials}, schema, fill_defaults=False):
        if p.path[:1] != ("experiments",) or p.path[1] not in owner or len(p.path) < 3:
            continue
        name, i, group = owner[p.path[1]]
        inherited = p.path[2] not in group and not p.message.startswith("missing")
        if not inherited:
            found.append(Problem(("experiments", name, "param_groups", i, *p.path[2:]), p.message))
    return found


def config_problems(
    config: Any, schema: dict[str, Any], fill_defaults: bool = True
) -> list[Problem]:
    """The schema's problems and parity_config's semantic ones, one per key path (the
    semantic one, more specific, where both name the same key), in the config's order."""
    if not isinstance(config, dict):
        return [Problem((), f"expected a mapping, got {show(config)}")]
    by_path: dict[Path_, Problem] = {}
    for problem in schema_problems(config, schema, fill_defaults) + group_schema_problems(
        config, schema
    ):
        by_path.setdefault(problem.path, problem)
    by_path.update({p.path: p for p in semantic_problems(config)})
    return sorted(by_path.values(), key=lambda p: _position(config, p.path))


def report(problems: list[Problem], source: str) -> str:
    n = len(problems)
    head = f"{source}: {n} problem{'s' if n != 1 else ''}, nothing was run:"
    return "\n".join([head, *map(str, problems)])


def describe_source(configfiles: list, overrides: Any = None) -> str:
    """'config.yaml', or 'config.yaml, --config' when the command line overrides some keys."""
    names = [os.path.relpath(f) if os.path.isabs(f) else str(f) for f in configfiles]
    names = list(dict.fromkeys(names)) + (["--config"] if overrides else [])
    return ", ".join(names) or "config"


def sweep_problems(config: dict[str, Any], schema: dict[str, Any]) -> list[Problem]:
    """Each sweep point checked like an experiment of its own, its problems named at the
    sweep: `sweeps.g.eps: 0 is out of range (… ) at point g__eps_0`. A schedule or clipping
    is set in the base, not swept: an axis of one is refused."""
    fixed = [
        Problem(
            ("sweeps", sweep, "axes", key),
            f"{key} cannot be an axis (axes vary the optimizer's hyperparameters,"
            " keep_defaults and burn_backend): set it in the base, or write one sweep per value",
        )
        for sweep, body in (config.get("sweeps") or {}).items()
        if isinstance(body, dict) and isinstance(body.get("axes"), dict)
        for key in body["axes"]
        if key in UNSWEPT_KEYS
    ]
    if fixed:
        return fixed
    try:
        expanded = expand_all(config, HYPERPARAMETERS)
    except SweepError as exc:
        return [Problem(exc.path, exc.message)]
    owner = {name: sweep for sweep, points in expanded.items() for name, _, _ in points}
    if not owner:
        return []
    trial = copy.deepcopy(config)
    trial["experiments"] = {name: exp for points in expanded.values() for name, exp, _ in points}
    problems, seen = [], set()
    for p in config_problems(trial, schema, fill_defaults=False):
        if p.path[:1] != ("experiments",) or p.path[1] not in owner:
            continue
        sweep = owner[p.path[1]]
        part = "axes" if p.path[2:3] and p.path[2] in config["sweeps"][sweep]["axes"] else "base"
        path = ("sweeps", sweep, part, *p.path[2:])
        if path not in seen:  # one line per key: the first point that shows it
            seen.add(path)
            problems.append(Problem(path, f"{p.message} (at point {p.path[1]})"))
    return problems


def check_config(config: Any, schema: str | Path = SCHEMA, source: str = "config") -> None:
    """Fill in the schema's defaults; stop (SystemExit, no traceback) naming every problem,
    those of every sweep point included."""
    loaded = load_schema(schema)
    problems = config_problems(config, loaded)
    if not problems and isinstance(config, dict):
        problems = sweep_problems(config, loaded)
    if problems:
        sys.exit(report(problems, source))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path, help="config.yaml")
    parser.add_argument("--schema", type=Path, default=SCHEMA)
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        sys.exit(str(exc))
    check_config(config, args.schema, source=str(args.config))
    print(f"{args.config}: OK")


if __name__ == "__main__":
    main()
