"""Parameter groups: parts of a model trained with their own optimizer or hyperparameters.

An experiment's ``param_groups`` is a list of ``{params: <glob or list of globs over
PyTorch's parameter names>, optimizer?, keep_defaults?, <hyperparameters>}``. A group that
names no optimizer (or the experiment's) starts from the experiment's hyperparameters and
keep_defaults and overrides what it gives; a group with another optimizer gives that
optimizer's hyperparameters itself. Parameters in no group take the experiment's own — the
usual recipes: no weight decay on biases and norms; Muon on the matrices, AdamW elsewhere.

Each framework builds them with its own means: PyTorch one optimizer per optimizer kind with
one param_group per group (the experiment's first), Burn one optimizer per group, each
stepping its parameters' gradients (GradientsParams::from_params). Checked before any job:
a glob matching no parameter, a parameter in two groups, Muon on a parameter that is not
2-D, a group's own lr under a schedule (a schedule scales one lr), an Adam or AdamW group
whose per-step factors Burn's run would not record.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from torch_burn_parity.models.model_specs import spec_of_config, valid_spec
from torch_burn_parity.optimizers import REGISTRY
from torch_burn_parity.suggest import closest_key

# A group's keys besides its optimizer's hyperparameters.
GROUP_KEYS = ("params", "optimizer", "keep_defaults")
# Burn records the per-step f32 factors of the experiment's own optimizer only.
FACTORED = ("adam", "adamw")


def globs(group: dict[str, Any]) -> list[str]:
    """A group's `params` as a list of globs."""
    params = group.get("params")
    return [params] if isinstance(params, str) else list(params or [])


def group_experiment(exp: dict[str, Any], group: dict[str, Any]) -> dict[str, Any]:
    """The experiment a group amounts to: its optimizer and every hyperparameter (the
    experiment's where the group runs the same optimizer and leaves them out)."""
    optimizer = group.get("optimizer", exp.get("optimizer"))
    base: dict[str, Any] = {}
    if optimizer == exp.get("optimizer") and optimizer in REGISTRY:
        base = {k: exp[k] for k in REGISTRY[optimizer].hyperparameters if k in exp}
        if "keep_defaults" in exp:
            base["keep_defaults"] = exp["keep_defaults"]
    given = {k: v for k, v in group.items() if k != "params"}
    return {**base, **given, "optimizer": optimizer}


def members(exp: dict[str, Any]) -> list[list[str]]:
    """The exact parameter names of each group, in model order."""
    names = spec_of_config(exp.get("model")).param_names
    return [
        [n for n in names if any(fnmatchcase(n, g) for g in globs(group))]
        for group in exp.get("param_groups") or []
    ]


def group_problems(name: str, exp: dict[str, Any]) -> list[tuple[tuple, str]]:
    """(key path, message) of everything wrong with an experiment's groups that the schema
    cannot see; values of the wrong type are left to the schema."""
    groups = exp.get("param_groups") or []
    spec = valid_spec(exp.get("model"))
    if not isinstance(groups, list) or spec is None:
        return []
    at = ("experiments", name, "param_groups")
    shapes = spec.param_shapes()
    problems: list[tuple[tuple, str]] = []
    owner: dict[str, int] = {}
    schedule = exp.get("schedule")
    scheduled = isinstance(schedule, dict) and schedule.get("kind", "constant") != "constant"

    def add(where: tuple, *message: str) -> None:
        problems.append((where, "".join(message)))

    for i, group in enumerate(groups):
        if not isinstance(group, dict):
            continue
        optimizer = group.get("optimizer", exp.get("optimizer"))
        if optimizer not in REGISTRY:
            continue  # the schema names it
        known = [*GROUP_KEYS, *REGISTRY[optimizer].hyperparameters]
        for key in group:
            if key not in known:
                hint = closest_key(key, known)
                add((*at, i, key), f"unknown key of a parameter group (known: {', '.join(known)})",
                    f"; did you mean {hint!r}?" if hint else "")  # fmt: skip
        for where, pattern in patterns((*at, i), group):
            matched = [n for n in spec.param_names if fnmatchcase(n, pattern)]
            if not matched:
                add(where, f"{pattern!r} matches no parameter of {spec.name}",
                    f" (its parameters: {', '.join(spec.param_names)})")  # fmt: skip
            for n in matched:
                if owner.setdefault(n, i) != i:
                    add(where, f"{n} is already in param_groups[{owner[n]}]:",
                        " a parameter takes one group")  # fmt: skip
            flat = [n for n in matched if len(shapes[n]) != 2]
            if REGISTRY[optimizer].matrices_only and flat:
                add(where, f"{optimizer} takes 2-D parameters only: {flat[0]} is {shapes[flat[0]]}")
        if scheduled and "lr" in group and group["lr"] != exp.get("lr"):
            add((*at, i, "lr"), "a group's own lr needs a constant schedule",
                " (the schedule scales the experiment's lr)")  # fmt: skip
        same_betas = group.get("betas", exp.get("betas")) == exp.get("betas")
        if optimizer in FACTORED and (optimizer != exp.get("optimizer") or not same_betas):
            add((*at, i, "optimizer" if "optimizer" in group else "betas"),
                f"an {optimizer} group takes the experiment's optimizer and betas",
                " (Burn's run records the per-step factors of those only)")  # fmt: skip
    optimizer = exp.get("optimizer")
    if optimizer in REGISTRY and REGISTRY[optimizer].matrices_only:
        rest = [n for n in spec.param_names if n not in owner and len(shapes[n]) != 2]
        if rest:
            add((*at[:2], "optimizer"), f"{optimizer} takes 2-D parameters only:",
                f" {rest[0]} is {shapes[rest[0]]}, in no group (give it one)")  # fmt: skip
    return problems


def patterns(at: tuple, group: dict[str, Any]) -> list[tuple[tuple, str]]:
    """(key path, glob) of each of a group's `params` that is a string."""
    params = group.get("params")
    if isinstance(params, str):
        return [((*at, "params"), params)]
    listed = params if isinstance(params, list) else []
    return [((*at, "params", j), g) for j, g in enumerate(listed) if isinstance(g, str)]
