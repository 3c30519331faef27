"""Sweeps: grids of experiments, expanded from the config's `sweeps:` section.

    sweeps:
      adam_grid:
        base: {optimizer: adam, lr: 0.01, betas: [0.9, 0.999], eps: 1.0e-8, weight_decay: 0.0}
        axes:
          lr: [0.001, 0.01, 0.1]
          eps: [1.0e-8, 1.0e-6]

`base` is a whole experiment (every hyperparameter, as under `experiments:`) or the name of
one. Each point of the cartesian product of the axes becomes an experiment named from the
sweep and the axis values — `adam_grid__lr_0p001__eps_1em08` (`b` betas, `wd` weight
decay, `kd` keep_defaults, …; a string as it is, `g__burn_backend_ndarray`) — safe as a
file name and
stable: the same point always gets the same name, so a changed axis reruns only the new
points. Imported by the Snakefile (expansion before any job) and by the sweep summary.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from torch_burn_parity.suggest import closest_key

DEFAULT_MAX_EXPERIMENTS = 1000
# Keys an axis may vary besides the optimizer's hyperparameters.
RUN_KEYS = ("keep_defaults", "burn_backend", "model")


class SweepError(ValueError):
    """A sweep that cannot be expanded as written, at a key path such as
    ('sweeps', 'g', 'axes', 'lr')."""

    def __init__(self, path: tuple[str, ...], message: str) -> None:
        super().__init__(f"{'.'.join(path)}: {message}")
        self.path, self.message = path, message


def token(value: Any) -> str:
    """An axis value as part of a name: 0.001 → 0p001, 1e-08 → 1em08, [0.9, 0.999] → 0p9_0p999."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        text = repr(float(value)) if isinstance(value, float) else str(value)
        text = text.removesuffix(".0") if "e" not in text else text
        return text.replace("-", "m").replace("+", "").replace(".", "p")
    if isinstance(value, list | tuple):
        return "_".join(token(v) for v in value) or "none"
    if isinstance(value, dict):  # keep_defaults: {burn: [eps]} → burn_eps
        parts = [f"{k}_{token(v)}" for k, v in sorted(value.items()) if v]
        return "_".join(parts) or "none"
    if isinstance(value, str):
        return "".join(c if c.isalnum() else "_" for c in value)
    raise SweepError(("sweeps",), f"cannot name an axis value {value!r}")


# Short axis labels in experiment names; a key not listed here is written out.
LABELS = {"betas": "b", "weight_decay": "wd", "momentum": "mom", "dampening": "damp",
          "nesterov": "nest", "keep_defaults": "kd"}  # fmt: skip


def model_token(value: Any) -> str:
    """A `model` axis value as part of a name: transformer, or {name: transformer, d_model:
    64, layers: 2} → transformer_d_model64_layers2."""
    if not isinstance(value, dict):
        return token(value)
    sizes = (f"{k}{token(v)}" for k, v in value.items() if k != "name")
    return "_".join([token(value.get("name", "")), *sizes])


def point_name(sweep: str, point: dict[str, Any]) -> str:
    parts = (
        f"{LABELS.get(key, key)}_{model_token(value) if key == 'model' else token(value)}"
        for key, value in point.items()
    )
    return "__".join([sweep, *parts])


def known_keys(base: dict[str, Any], hyperparameters: dict[str, tuple[str, ...]]) -> list[str]:
    return [*hyperparameters.get(base.get("optimizer"), ()), *RUN_KEYS]


def expand_sweep(
    name: str,
    sweep: dict[str, Any],
    experiments: dict[str, Any],
    hyperparameters: dict[str, tuple[str, ...]],
) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The experiments of one sweep: (name, experiment settings, axis values), in grid order."""
    where = ("sweeps", name)
    base = sweep.get("base")
    if isinstance(base, str):
        if base not in experiments:
            raise SweepError((*where, "base"), f"no experiment {base!r} in `experiments:`")
        base = experiments[base]
    if not isinstance(base, dict):
        raise SweepError((*where, "base"), "expected an experiment or the name of one")
    axes = sweep.get("axes")
    if not isinstance(axes, dict) or not axes:
        raise SweepError((*where, "axes"), "expected at least one axis (key: [values])")
    keys = known_keys(base, hyperparameters)
    for key, values in axes.items():
        if key not in keys:
            close = closest_key(key, keys)
            hint = f"; did you mean {close!r}?" if close else f" (known: {', '.join(keys)})"
            raise SweepError(
                (*where, "axes", key), f"unknown key for {base.get('optimizer')}{hint}"
            )
        if not isinstance(values, list) or not values:
            raise SweepError((*where, "axes", key), "expected a non-empty list of values")
    out, names = [], {}
    for combination in itertools.product(*axes.values()):
        point = dict(zip(axes, combination, strict=True))
        experiment = {**base, **point}
        experiment.pop("description", None)
        experiment["description"] = f"sweep {name}: " + ", ".join(
            f"{k} = {v}" for k, v in point.items()
        )
        label = point_name(name, point)
        if label in names:
            raise SweepError(
                (*where, "axes"),
                f"{names[label]} and {point} give the same experiment name {label!r}",
            )
        names[label] = point
        out.append((label, experiment, point))
    return out


def expand_all(config: dict[str, Any], hyperparameters: dict[str, tuple[str, ...]]) -> dict:
    """{sweep: [(experiment name, settings, axis values), ...]} for every sweep of `config`.

    Refuses a sweep larger than `max_experiments`, and a generated name that is already an
    experiment of the config or of another sweep.
    """
    experiments = config.get("experiments") or {}
    limit = config.get("max_experiments", DEFAULT_MAX_EXPERIMENTS)
    expanded, taken = {}, set(experiments)
    for name, sweep in (config.get("sweeps") or {}).items():
        if not isinstance(sweep, dict):
            raise SweepError(("sweeps", name), "expected base: and axes:")
        size = math.prod(
            len(v) if isinstance(v, list) else 1 for v in (sweep.get("axes") or {}).values()
        )
        if size > limit:
            raise SweepError(
                ("sweeps", name), f"{size} experiments, more than max_experiments ({limit})"
            )
        points = expand_sweep(name, sweep, experiments, hyperparameters)
        for label, _, _ in points:
            if label in taken:
                raise SweepError(("sweeps", name), f"experiment name {label!r} is already taken")
            taken.add(label)
        expanded[name] = points
    return expanded
