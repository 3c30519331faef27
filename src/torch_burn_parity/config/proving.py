"""Proving runs: each fix the report recommends for values Burn was left to choose, applied
on the Burn side and run, so that the report can say what the port does with the fix.

An experiment that keeps some of Burn's own defaults (`keep_defaults: {burn: [eps,
momentum]}`, its own or a parameter group's) is the porter's situation before the fix; its
fix is "pass PyTorch's values through Burn's setters" (`RmsPropConfig::new()
.with_momentum(0.0).with_epsilon(1e-08)`). The proving run `<experiment>__fix` is the same
experiment with Burn's kept defaults dropped, so the Burn trainer builds its optimizer with
PyTorch's values through those setters, as a porter would write it; PyTorch's side is
unchanged. Its verdict, beside the original's, says whether the fix closes the gap (to
rounding, or to what Burn computes in f32 whatever its settings).

Experiments of a sweep get none (a sweep's points compare settings, not fixes), nor does a
proving run itself. `prove_fixes: false` in the config turns them off.
"""

from __future__ import annotations

import copy
from typing import Any

SUFFIX = "__fix"


def burn_kept(exp: dict[str, Any]) -> list[str]:
    """The values an experiment leaves to Burn's defaults: its own and its groups'."""
    kept = list((exp.get("keep_defaults") or {}).get("burn") or [])
    for i, group in enumerate(exp.get("param_groups") or []):
        kept += [f"param_groups[{i}].{key}"
                 for key in (group.get("keep_defaults") or {}).get("burn") or []]  # fmt: skip
    return kept


def without_burn_defaults(block: dict[str, Any]) -> None:
    """Drop Burn's kept defaults from an experiment's or a group's settings, in place."""
    keep = dict(block.get("keep_defaults") or {})
    keep.pop("burn", None)
    if keep:
        block["keep_defaults"] = keep
    else:
        block.pop("keep_defaults", None)


def proving_runs(experiments: dict[str, dict], swept: set[str]) -> dict[str, dict]:
    """{`<name>__fix`: its settings} for each experiment outside the sweeps that leaves
    values to Burn's defaults (and whose proving run's name is not taken)."""
    found = {}
    for name, exp in experiments.items():
        kept = burn_kept(exp)
        derived = name + SUFFIX
        if not kept or name in swept or name.endswith(SUFFIX) or derived in experiments:
            continue
        fixed = copy.deepcopy(exp)
        without_burn_defaults(fixed)
        for group in fixed.get("param_groups") or []:
            without_burn_defaults(group)
        fixed["description"] = (
            f"the proving run of `{name}`: Burn given PyTorch's {', '.join(kept)} through its"
            " setters, as the report's fix says"
        )
        found[derived] = fixed
    return found


def original(name: str) -> str | None:
    """The experiment a proving run proves the fix of (None for another experiment)."""
    return name.removesuffix(SUFFIX) if name.endswith(SUFFIX) else None
