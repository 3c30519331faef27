"""The experiment configuration shared by the trainers and the analyses.

An experiment names its optimizer and every hyperparameter of it. Both trainers pass each
one to their framework explicitly, except the ones an experiment lists under
``keep_defaults`` for a framework: that framework then keeps its own default, and the run's
``meta`` records the value it actually used. Both trainers refuse an experiment with an
unknown optimizer or a missing hyperparameter, naming it.

An experiment may also give a learning-rate ``schedule`` (absent: ``{kind: constant}``) and
gradient clipping ``clip_grad`` (absent or null: none; ``{norm: x}`` or ``{value: x}``), and
the ``burn_backend`` that runs Burn's tensors (``flex`` or ``ndarray``; PyTorch ignores it).
``experiment_spec`` fills in what an experiment leaves out (Adam's ``amsgrad``: PyTorch's
default, false; the constant schedule; no clipping; Burn's Flex backend), so the spec always
carries them.

The semantic checks below (``semantic_problems``) find what the config's JSON schema cannot
express and a trainer would crash on: a batch larger than the dataset, Nesterov momentum
PyTorch refuses, a probe index outside its parameter, a schedule or an initial learning
rate one framework's scheduler refuses, an AdaGrad initial accumulator Burn cannot take.
The pipeline runs them, with the schema, before any job (config/check_config.py).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import yaml

from torch_burn_parity.config import burn_fixes, cpu_path
from torch_burn_parity.config.data_problems import batch_problems, data_problems
from torch_burn_parity.config.param_groups import group_experiment, group_problems
from torch_burn_parity.config.problems import (
    ConfigError,
    Problem,
    bound_problem,
    is_integer,
    is_number,
    show,
    suggest,
    unknown_keys,
)
from torch_burn_parity.config.record import record_problems
from torch_burn_parity.io.parity_io import FRAMEWORKS
from torch_burn_parity.models.model_specs import (
    DEFAULT_MODEL,
    SPECS,
    ModelSpec,
    size_problems,
    valid_spec,
)
from torch_burn_parity.models.port import is_port, port_problems
from torch_burn_parity.optimizers import REGISTRY

# Every hyperparameter each optimizer needs, in the order runs record them; those an
# experiment may leave out (and the value the spec then carries); those that are true or
# false (`betas` is two numbers, the others a number); what each framework uses when it is
# not told. From the optimizer registry (optimizers/).
HYPERPARAMETERS = {name: o.hyperparameters for name, o in REGISTRY.items()}
OPTIONAL_HYPERPARAMETERS = {name: o.optional for name, o in REGISTRY.items() if o.optional}
BOOLEAN_HYPERPARAMETERS = tuple(sorted({key for o in REGISTRY.values() for key in o.booleans}))
FRAMEWORK_DEFAULTS = {
    framework: {name: o.defaults(framework) for name, o in REGISTRY.items()}
    for framework in FRAMEWORKS
}

# Learning-rate schedules: each kind's keys besides `kind` (the initial lr is the
# optimizer's). PyTorch runs them with torch.optim.lr_scheduler, Burn with its lr_scheduler.
SCHEDULES = {
    "constant": (),
    "linear": ("final_lr", "num_steps"),
    "cosine": ("min_lr", "num_steps"),
    "exponential": ("gamma",),
    "step": ("step_size", "gamma"),
}
DEFAULT_SCHEDULE = {"kind": "constant"}
# Burn 0.22.1 (burn-optim src/lr_scheduler/{linear,cosine,exponential}.rs) refuses an initial
# lr outside (0, 1] for these kinds; its step schedule only warns, constant takes any lr.
SCHEDULES_LR_AT_MOST_1 = ("linear", "cosine", "exponential")
# Gradient clipping: exactly one of these, a positive number.
CLIP_MODES = ("norm", "value")
# How PyTorch applies each mode (torch.nn.utils.clip_grad_norm_ / clip_grad_value_).
CLIP_SCOPES = {"norm": "all parameters (one norm)", "value": "elementwise"}
# Burn's CPU backends in the one parity-train binary (config name → Burn's name); the first
# is the default. The run file's meta.backend records the one a run used.
BURN_BACKENDS = {"flex": "Flex", "ndarray": "NdArray"}
DEFAULT_BURN_BACKEND = "flex"


# The models both sides define (model_specs.py, rust/src/models/); absent means the seed's
# cnn1d. The layer record is taken at step 1 and at any further `probe_steps`.
MODELS = tuple(SPECS)
DEFAULT_PROBE_STEPS = [1]

# The shape of every parameter of the seed's model, from its initial weights.
PARAMETER_SHAPES = SPECS[DEFAULT_MODEL].param_shapes()


def parameter_shapes(model: str | ModelSpec) -> dict[str, list[int]]:
    """The shape of each parameter of ``model`` (a name: at its default size), by PyTorch
    name."""
    return (SPECS[model] if isinstance(model, str) else model).param_shapes()


def run_problems(config: dict[str, Any]) -> list[Problem]:
    """Run settings a trainer would crash on (a batch larger than the dataset) or that cannot
    take effect on this machine (a `cpu_path` its CPU cannot take)."""
    problems = [Problem(path, message) for path, message in batch_problems(config)]
    setting = config.get("cpu_path", cpu_path.DEFAULT)
    if isinstance(setting, str) and (why := cpu_path.problem(setting)) is not None:
        problems.append(Problem(("cpu_path",), why))
    return problems


def probe_problem(text: str, model: str | ModelSpec = DEFAULT_MODEL) -> str | None:
    """What is wrong with a probe such as 'fc.weight[1,19]' (or its flat form 'fc.weight[67]')
    as a parameter of ``model`` (a name: at its default size)."""
    match = re.fullmatch(r"([\w.]+)\[(\d+(?:, ?\d+)*)\]", text)
    if not match:
        return f"{text!r} is not a parameter index like 'fc.weight[1,19]'"
    name = match.group(1)
    shapes = parameter_shapes(model)
    if name not in shapes:
        what = model if isinstance(model, str) else model.name
        return f"{text!r} names no parameter of {what} (known: {', '.join(shapes)})"
    shape = shapes[name]
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
    if held["nesterov"] is not True or not (is_number(momentum) and is_number(dampening)):
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


# Each schedule key's bounds: (low, high) as bound_problem takes them.
SCHEDULE_BOUNDS = {
    "final_lr": (">=0", ""),
    "min_lr": (">=0", ""),
    "num_steps": (">=1", ""),
    "step_size": (">=1", ""),
    "gamma": (">0", ""),
}


def schedule_problems(at: tuple, exp: dict[str, Any]) -> list[Problem]:
    """A schedule either framework refuses, or one of an unknown kind or with keys missing or
    of another kind: one problem per key."""
    if "schedule" not in exp:
        return []
    schedule, where = exp["schedule"], (*at, "schedule")
    example = "{kind: cosine, min_lr: 0.0, num_steps: 100}"
    if not isinstance(schedule, dict):
        return [Problem(where, f"expected a mapping like {example}, got {show(schedule)}")]
    kinds = list(SCHEDULES)
    if "kind" not in schedule:
        return [Problem((*where, "kind"), f"missing (one of: {', '.join(kinds)})")]
    kind = schedule["kind"]
    if kind not in SCHEDULES:
        close = suggest(kind, kinds)
        hint = f"; did you mean {close!r}?" if close else ""
        return [
            Problem(
                (*where, "kind"),
                f"unknown schedule kind {show(kind)} (known: {', '.join(kinds)}){hint}",
            )
        ]
    needed = SCHEDULES[kind]
    takes = f"{kind} takes {', '.join(needed)}" if needed else f"{kind} takes no other key"
    problems, suggested = [], set()
    for key in schedule:
        if key == "kind" or key in needed:
            continue
        owners = [k for k, keys in SCHEDULES.items() if key in keys]
        if owners:
            message = f"a key of kind {' and '.join(owners)}, not of {kind} ({takes})"
            problems.append(Problem((*where, key), message))
        else:
            found, close = unknown_keys(where, [key], ["kind", *needed], f"kind {kind}")
            problems += found
            suggested |= close
    for key in needed:
        if key not in schedule:
            if key not in suggested:
                problems.append(Problem((*where, key), f"required for kind {kind}"))
            continue
        problem = bound_problem(where, key, schedule[key], *SCHEDULE_BOUNDS[key])
        if problem:
            problems.append(problem)
    if problems:
        return problems
    lr = exp.get("lr")
    if kind == "exponential" and schedule["gamma"] > 1:
        message = (
            f"{show(schedule['gamma'])} is out of range (0 < gamma ≤ 1):"
            " Burn's exponential schedule refuses a gamma above 1"
        )
        problems.append(Problem((*where, "gamma"), message))
    if kind in SCHEDULES_LR_AT_MOST_1 and is_number(lr) and not 0 < lr <= 1:
        message = (
            f"{show(lr)} is out of range (0 < lr ≤ 1):"
            f" Burn's {kind} schedule refuses an initial lr outside (0, 1]"
        )
        problems.append(Problem((*at, "lr"), message))
    elif is_number(lr) and lr > 0:
        if kind == "linear" and schedule["final_lr"] > lr:
            message = (
                f"{show(schedule['final_lr'])} is above lr ({show(lr)}): PyTorch's LinearLR"
                " refuses an end factor (final_lr / lr) above 1"
            )
            problems.append(Problem((*where, "final_lr"), message))
        if kind == "cosine" and schedule["min_lr"] > lr:
            message = (
                f"{show(schedule['min_lr'])} is above lr ({show(lr)}):"
                " Burn's cosine schedule refuses a min_lr above the initial lr"
            )
            problems.append(Problem((*where, "min_lr"), message))
    return problems


def clip_problems(at: tuple, exp: dict[str, Any]) -> list[Problem]:
    """clip_grad: null, or exactly one of norm and value, a positive number."""
    clip, where = exp.get("clip_grad"), (*at, "clip_grad")
    if clip is None:
        return []
    if not isinstance(clip, dict):
        return [Problem(where, f"expected null, {{norm: x}} or {{value: x}}, got {show(clip)}")]
    problems, suggested = unknown_keys(where, list(clip), list(CLIP_MODES), "clip_grad")
    modes = [m for m in CLIP_MODES if m in clip]
    if len(modes) == 2:
        problems.append(Problem(where, "give exactly one of norm or value, not both"))
    elif not modes and not suggested & set(CLIP_MODES):
        problems.append(Problem(where, "give exactly one of norm or value (e.g. {norm: 1.0})"))
    for mode in modes:
        problem = bound_problem(where, mode, clip[mode], ">0")
        if problem:
            problems.append(problem)
    return problems


def accumulator_problems(at: tuple, exp: dict[str, Any]) -> list[Problem]:
    """Burn's AdaGrad has no initial accumulator value: only PyTorch's default, 0, compares."""
    value = exp.get("initial_accumulator_value")
    if not is_number(value) or value == 0:
        return []
    message = (
        f"{show(value)} is refused (only 0): Burn's AdaGrad has no initial accumulator value,"
        " its sum of squared gradients starts at 0"
    )
    return [Problem((*at, "initial_accumulator_value"), message)]


def choice_problems(at: tuple, exp: dict[str, Any], key: str, what: str, known) -> list[Problem]:
    """A value of ``key`` that is not one of ``known`` (absent means the default)."""
    if key not in exp or exp[key] in known:
        return []
    value, known = exp[key], list(known)
    close = suggest(value, known)
    hint = f"; did you mean {close!r}?" if close else ""
    message = f"unknown {what} {show(value)} (known: {', '.join(known)}){hint}"
    return [Problem((*at, key), message)]


def model_problems(at: tuple, exp: dict[str, Any]) -> list[Problem]:
    """A `model` that names no model, or sizes it cannot be built at: `model: transformer`, or
    `model: {name: transformer, d_model: 256, heads: 4}` (the other size keys at their
    defaults)."""
    if "model" not in exp:
        return []
    value = exp["model"]
    if not isinstance(value, dict):
        return choice_problems(at, exp, "model", "model", MODELS)
    if is_port(value):  # your own port (models/port.py)
        return [Problem(path, m) for path, m in port_problems((*at, "model"), value, MODELS)]
    if "name" not in value:
        return [Problem((*at, "model"), "a model given with sizes needs its `name`")]
    problems = choice_problems((*at, "model"), value, "name", "model", MODELS)
    if problems:
        return problems
    size = {k: v for k, v in value.items() if k != "name"}
    return [Problem((*at, "model", key), m) for key, m in size_problems(value["name"], size)]


def probe_steps_problems(at: tuple, exp: dict[str, Any], steps: Any) -> list[Problem]:
    """Probe steps after the last step would record nothing: refused."""
    probe_steps = exp.get("probe_steps")
    if not isinstance(probe_steps, list) or not is_integer(steps):
        return []
    late = [s for s in probe_steps if is_integer(s) and s > steps]
    if not late:
        return []
    message = f"step {late[0]} is after the last step ({steps})"
    return [Problem((*at, "probe_steps", probe_steps.index(late[0])), message)]


def experiment_problems(name: str, exp: Any, steps: Any = None, batch: Any = None) -> list[Problem]:
    """What the schema cannot see in one experiment and a trainer would crash on (``steps``
    and ``batch``: the config's, for checks against them)."""
    if not isinstance(exp, dict):
        return []
    at = ("experiments", name)
    problems = []
    optimizer = exp.get("optimizer")
    if optimizer in HYPERPARAMETERS:
        problems += keep_default_problems(at, exp, optimizer)
    if optimizer == "sgd":
        problems += nesterov_problems(at, exp)
    if optimizer == "adagrad":
        problems += accumulator_problems(at, exp)
    problems += schedule_problems(at, exp)
    problems += clip_problems(at, exp)
    # The Burn backends the binary holds (absent: flex); the models both sides define.
    problems += choice_problems(at, exp, "burn_backend", "Burn backend", BURN_BACKENDS)
    problems += model_problems(at, exp)
    problems += probe_steps_problems(at, exp, steps)
    problems += [Problem(path, message) for path, message in record_problems(at, exp, steps)]
    problems += [Problem(path, message) for path, message in data_problems(at, exp, batch)]
    problems += [Problem(path, message) for path, message in group_problems(name, exp)]
    problems += [Problem(path, message) for path, message in burn_fixes.problems(at, exp)]
    groups = exp.get("param_groups")
    for i, group in enumerate(groups if isinstance(groups, list) else []):
        if not isinstance(group, dict):
            continue
        grouped, where = group_experiment(exp, group), (*at, "param_groups", i)
        if "keep_defaults" in group and grouped["optimizer"] in HYPERPARAMETERS:
            problems += keep_default_problems(where, grouped, grouped["optimizer"])
        if grouped["optimizer"] == "sgd":
            problems += nesterov_problems(where, grouped)
        if grouped["optimizer"] == "adagrad":
            problems += accumulator_problems(where, grouped)
    probe, model = exp.get("probe"), valid_spec(exp.get("model"))
    if isinstance(probe, str) and model and (message := probe_problem(probe, model)):
        problems.append(Problem((*at, "probe"), message))
    return problems


def semantic_problems(config: dict[str, Any]) -> list[Problem]:
    """Every problem beyond the schema's bounds; values of the wrong type are skipped (the
    schema names those)."""
    problems = run_problems(config)
    experiments = config.get("experiments")
    if isinstance(experiments, dict):
        for name, exp in experiments.items():
            problems += experiment_problems(
                name, exp, config.get("steps"), config.get("batch_size")
            )
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
