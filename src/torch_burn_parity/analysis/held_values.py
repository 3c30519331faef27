"""Burn's hyperparameter values added one at a time: how replay.py's chain gives each value
that differs its own share, where `held_f64` would give them one share together.

Both runs record the values each framework held (`meta.hyperparameters`, and each group's
under `meta.param_groups[i].hyperparameters`): PyTorch's as passed, Burn's as its config
holds them (f32 fields widened). A value *differs* when Burn's is not PyTorch's nor its f32
rounding (eps 1e-5 where PyTorch has 1e-8; momentum 0.9 where PyTorch has 0); a value Burn
holds as the f32 rounding of PyTorch's is *stored*, not different.

When a value differs, the replay runs, after the counterfactual, one variant per differing
value (`burn_value[K]`): PyTorch's values with Burn's value of K and of every differing value
before it. Each link's increase of the distance to PyTorch's run is that value's share;
`held_f64` (every value as Burn holds it) then adds the f32 storage of the rest.
"""

from __future__ import annotations

import copy
from typing import Any

from torch_burn_parity.analysis.config_diff import f32


def _values(meta: dict) -> dict[str, Any]:
    """Every held value of a run by its config-diff name: `eps`, `param_groups[0].lr`."""
    found = dict(meta.get("hyperparameters") or {})
    for i, group in enumerate(meta.get("param_groups") or []):
        for key, value in (group.get("hyperparameters") or {}).items():
            found[f"param_groups[{i}].{key}"] = value
    return found


def differing(torch_meta: dict, burn_meta: dict) -> dict[str, Any]:
    """Burn's value of each hyperparameter that differs, to add one at a time, in PyTorch's
    order: {name: Burn's value}."""
    torch_held, burn_held = _values(torch_meta), _values(burn_meta)
    return {
        key: burn_held[key]
        for key, value in torch_held.items()
        if key in burn_held and burn_held[key] not in (value, f32(value))
    }


def with_values(torch_meta: dict, values: dict[str, Any]) -> dict:
    """PyTorch's run meta with these of Burn's values in place ({name: value})."""
    meta = copy.deepcopy(torch_meta)
    for name, value in values.items():
        if name.startswith("param_groups["):
            index, _, key = name.removeprefix("param_groups[").partition("].")
            meta["param_groups"][int(index)]["hyperparameters"][key] = value
        else:
            meta["hyperparameters"][name] = value
    return meta


def link(name: str) -> str:
    """The chain's variant that adds Burn's value of hyperparameter `name`."""
    return f"burn_value[{name}]"
