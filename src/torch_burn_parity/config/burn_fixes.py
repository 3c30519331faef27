"""`burn_fixes`: what the Burn trainer writes by hand where Burn 0.22.1 has no setting for
PyTorch's behaviour (rust/src/by_hand.rs), and which of them an experiment's proving run
needs (config/proving.py).

- `clip_by_global_norm`: Burn clips each parameter tensor by its own norm; the fix clips all
  gradients by one norm before Burn's step, as `clip_grad_norm_` does. It needs
  `clip_grad: {norm: x}` (a clipping by value is the same in both).
- `muon_lr_per_parameter`: Burn's Muon scales the lr by the shape of each tensor it holds
  ([in, out] for a Linear weight, several blocks for a packed one); the fix gives each Muon
  tensor the lr that makes Burn's lr × factor PyTorch's. It needs a Muon optimizer, the
  experiment's or a group's.
"""

from __future__ import annotations

from typing import Any

CLIP = "clip_by_global_norm"
MUON_LR = "muon_lr_per_parameter"
FIXES = (CLIP, MUON_LR)


def clips_by_norm(exp: dict[str, Any]) -> bool:
    clip = exp.get("clip_grad")
    return isinstance(clip, dict) and "norm" in clip


def has_muon(exp: dict[str, Any]) -> bool:
    groups = exp.get("param_groups")
    groups = [g for g in groups if isinstance(g, dict)] if isinstance(groups, list) else []
    return "muon" in [exp.get("optimizer")] + [g.get("optimizer") for g in groups]


def needed(exp: dict[str, Any]) -> list[str]:
    """The fixes a proving run of `exp` applies: one per cause of its kind the experiment
    has, in FIXES order."""
    return [fix for fix, needs in ((CLIP, clips_by_norm), (MUON_LR, has_muon)) if needs(exp)]


def problems(at: tuple, exp: dict[str, Any]) -> list[tuple[tuple, str]]:
    """(path, message) of each fix the experiment cannot apply (the schema checks the names)."""
    fixes, where = exp.get("burn_fixes"), (*at, "burn_fixes")
    if not isinstance(fixes, list):
        return []
    found = []
    if CLIP in fixes and not clips_by_norm(exp):
        found.append((where, f"{CLIP} needs clip_grad: {{norm: x}} (got {exp.get('clip_grad')!r})"))
    if MUON_LR in fixes and not has_muon(exp):
        found.append((where, f"{MUON_LR} needs a Muon optimizer, the experiment's or a group's"))
    return found
