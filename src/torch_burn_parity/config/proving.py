"""Proving runs: each fix the report recommends on the Burn side, applied and run, so that
the report can say what the port does with the fix.

An experiment that keeps some of Burn's own defaults (`keep_defaults: {burn: [eps,
momentum]}`, its own or a parameter group's) is the porter's situation before the fix; its
fix is "pass PyTorch's values through Burn's setters" (`RmsPropConfig::new()
.with_momentum(0.0).with_epsilon(1e-08)`). The proving run `<experiment>__fix` is the same
experiment with Burn's kept defaults dropped, so the Burn trainer builds its optimizer with
PyTorch's values through those setters, as a porter would write it; PyTorch's side is
unchanged. Its verdict, beside the original's, says whether the fix closes the gap (to
rounding, or to what Burn computes in f32 whatever its settings).

The same run applies what a porter writes by hand where Burn has no setting
(config/burn_fixes.py, rust/src/by_hand.rs): an experiment that clips by norm gets
`burn_fixes: [clip_by_global_norm]` (clipping by one norm of all gradients, as PyTorch does,
instead of Burn's per-tensor clipping), one with Muon `muon_lr_per_parameter` (each Muon
tensor's lr scaled so that Burn's lr × shape factor is PyTorch's), one with a schedule
`pytorch_schedule` (PyTorch's recursion as a Burn scheduler). One proving run applies
every fix of its experiment.

Experiments of a sweep get none (a sweep's points compare settings, not fixes), nor does a
proving run itself. `prove_fixes: false` in the config turns them off.
"""

from __future__ import annotations

import copy
from typing import Any

from torch_burn_parity.config import burn_fixes

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


# What each fix done by hand is, in a proving run's description.
BY_HAND = {
    burn_fixes.CLIP: "its gradients clipped by one global norm by hand",
    burn_fixes.MUON_LR: "each Muon parameter's lr scaled to PyTorch's shape factor",
    burn_fixes.SMOOTH: "its smoothed cross-entropy computed by hand in the run's dtype",
    burn_fixes.SCHEDULE: "PyTorch's recursive schedule written by hand",
}


def proving_runs(experiments: dict[str, dict], swept: set[str]) -> dict[str, dict]:
    """{`<name>__fix`: its settings} for each experiment outside the sweeps that leaves
    values to Burn's defaults or needs a fix by hand (and whose proving run's name is not
    taken)."""
    found = {}
    for name, exp in experiments.items():
        kept = burn_kept(exp)
        given = list(exp.get("burn_fixes") or [])
        by_hand = [fix for fix in burn_fixes.needed(exp) if fix not in given]
        derived = name + SUFFIX
        if (
            not (kept or by_hand)
            or name in swept
            or name.endswith(SUFFIX)
            or derived in experiments
        ):
            continue
        fixed = copy.deepcopy(exp)
        without_burn_defaults(fixed)
        for group in fixed.get("param_groups") or []:
            without_burn_defaults(group)
        if by_hand:
            fixed["burn_fixes"] = given + by_hand
        what = [f"PyTorch's {', '.join(kept)} through its setters"] if kept else []
        what += [BY_HAND[fix] for fix in by_hand]
        fixed["description"] = (
            f"the proving run of `{name}`: Burn given {' and '.join(what)}, as the report's fix"
            " says"
        )
        found[derived] = fixed
    return found


def original(name: str) -> str | None:
    """The experiment a proving run proves the fix of (None for another experiment)."""
    return name.removesuffix(SUFFIX) if name.endswith(SUFFIX) else None
